#include "container_image.h"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <mutex>
#include <sstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace fs = std::filesystem;

namespace {

// The busybox root: /bin/busybox with its applet links, and /tmp.
std::string make_busybox_root(const std::string& root) {
  if (::access("/bin/busybox", X_OK) != 0)
    return "/bin/busybox is missing: apt-get install busybox-static";
  fs::create_directories(root + "/bin");
  fs::create_directories(root + "/tmp");
  fs::permissions(root + "/tmp", fs::perms::all | fs::perms::sticky_bit);
  fs::copy_file("/bin/busybox", root + "/bin/busybox");
  for (const char* applet : {"sh", "ls", "cat", "echo", "sleep", "id", "env", "true"})
    fs::create_symlink("busybox", root + "/bin/" + applet);
  return "";
}

// The host's python3 in root: the interpreter, the libraries ldd lists and the standard library
// (without its tests, IDLE, tkinter and other parts a job does not need).
std::string add_python(const std::string& root) {
  std::error_code ec;
  fs::path python = fs::canonical("/usr/bin/python3", ec);
  if (ec) return "/usr/bin/python3 is missing: apt-get install python3";
  fs::create_directories(root + "/usr/bin");
  fs::copy_file(python, root + "/usr/bin/python3");
  auto ldd = run_command({"/usr/bin/ldd", python.string()});
  if (ldd.exit_code != 0) return "ldd " + python.string() + " failed: " + ldd.err;
  std::istringstream lines(ldd.out);
  for (std::string word; lines >> word;) {
    if (word.empty() || word[0] != '/') continue;
    fs::create_directories(root + fs::path(word).parent_path().string());
    fs::copy_file(word, root + word, fs::copy_options::overwrite_existing, ec);
    if (ec) return "cannot copy " + word + ": " + ec.message();
  }
  std::string stdlib = "usr/lib/" + python.filename().string();
  auto copied = run_command(
      {"/bin/sh", "-c",
       "tar -C / -cf - --exclude=__pycache__ --exclude=test --exclude=tests --exclude=idlelib "
       "--exclude=tkinter --exclude=ensurepip --exclude=lib2to3 --exclude=turtledemo "
       "--exclude=pydoc_data " +
           stdlib + " | tar -C " + root + " -xf -"});
  if (copied.exit_code != 0) return "copying " + stdlib + " failed: " + copied.err;
  return "";
}

// Imports root as image `name` unless podman has it; "" or why not. Sets *missing without podman.
std::string import_root(const char* name, bool* missing,
                        const std::function<std::string(const std::string&)>& fill) {
  if (::access(kPodman, X_OK) != 0) {
    *missing = true;
    return "podman is not installed (scripts/install-deps.sh installs podman and runc)";
  }
  if (run_command({kPodman, "image", "exists", name}).exit_code == 0) return "";
  TempDir dir;
  std::string root = dir.path() + "/root";
  if (std::string problem = fill(root); !problem.empty()) return problem;
  std::string tar = dir.path() + "/root.tar";
  auto packed = run_command({"/usr/bin/tar", "-C", root, "-cf", tar, "."});
  if (packed.exit_code != 0) return std::string("tar of ") + name + " failed: " + packed.err;
  auto imported = run_command({kPodman, "import", tar, name});
  if (imported.exit_code != 0) return "podman import failed: " + imported.err;
  return "";
}

}  // namespace

std::string ensure_test_image(bool* podman_missing) {
  static std::once_flag once;
  static std::string problem;
  static bool missing = false;
  std::call_once(once, [] { problem = import_root(kTestImage, &missing, make_busybox_root); });
  *podman_missing = missing;
  return problem;
}

std::string ensure_python_image(bool* podman_missing) {
  static std::once_flag once;
  static std::string problem;
  static bool missing = false;
  std::call_once(once, [] {
    problem = import_root(kPythonImage, &missing, [](const std::string& root) {
      std::string problem = make_busybox_root(root);
      return problem.empty() ? add_python(root) : problem;
    });
  });
  *podman_missing = missing;
  return problem;
}

}  // namespace gpucloud::testing
