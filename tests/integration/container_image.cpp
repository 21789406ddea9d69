#include "container_image.h"

#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace fs = std::filesystem;

std::string ensure_test_image(bool* podman_missing) {
  static std::once_flag once;
  static std::string problem;
  static bool missing = false;
  std::call_once(once, [] {
    if (::access(kPodman, X_OK) != 0) {
      missing = true;
      problem = "podman is not installed (scripts/install-deps.sh installs podman and runc)";
      return;
    }
    if (run_command({kPodman, "image", "exists", kTestImage}).exit_code == 0) return;
    if (::access("/bin/busybox", X_OK) != 0) {
      problem = "/bin/busybox is missing: apt-get install busybox-static";
      return;
    }
    TempDir dir;
    std::string root = dir.path() + "/root";
    fs::create_directories(root + "/bin");
    fs::create_directories(root + "/tmp");
    fs::permissions(root + "/tmp", fs::perms::all | fs::perms::sticky_bit);
    fs::copy_file("/bin/busybox", root + "/bin/busybox");
    for (const char* applet : {"sh", "ls", "cat", "echo", "sleep", "id", "env", "true"})
      fs::create_symlink("busybox", root + "/bin/" + applet);
    std::string tar = dir.path() + "/root.tar";
    auto packed = run_command({"/usr/bin/tar", "-C", root, "-cf", tar, "."});
    if (packed.exit_code != 0) {
      problem = "tar of the test image failed: " + packed.err;
      return;
    }
    auto imported = run_command({kPodman, "import", tar, kTestImage});
    if (imported.exit_code != 0) problem = "podman import failed: " + imported.err;
  });
  *podman_missing = missing;
  return problem;
}

}  // namespace gpucloud::testing
