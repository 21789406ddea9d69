// The container images the container tests run, made locally (no registry is reachable from
// the test machines): busybox-static in an otherwise empty root, and the same with Debian's
// python3 for the checkpointing program. docs/containers.md says how.
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

/// The python image's name: the busybox root plus the host's python3 (Debian's python3.11
/// package), its libraries and its standard library.
inline constexpr const char* kPythonImage = "localhost/gpucloud-test-python:1";

/// Makes the python image once per process unless podman has it; as ensure_test_image.
std::string ensure_python_image(bool* podman_missing);

}  // namespace gpucloud::testing
