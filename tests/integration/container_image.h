// The container image the container tests run: busybox-static in an otherwise empty root,
// made locally (no registry is reachable from the test machines). docs/containers.md says how.
#pragma once

#include <string>

namespace gpucloud::testing {

/// The test image's name, localhost/gpucloud-test-busybox:2.
inline constexpr const char* kTestImage = "localhost/gpucloud-test-busybox:2";

/// Where the tests find podman (Debian's package).
inline constexpr const char* kPodman = "/usr/bin/podman";

/// Makes the test image once per process (podman import of a tarball of /bin/busybox and its
/// applet links) unless podman has it already. Returns "" when it can be used, else why not:
/// podman missing (the caller skips), or the build failed (the caller fails).
std::string ensure_test_image(bool* podman_missing);

}  // namespace gpucloud::testing
