#include "exec/container/container_runtime.h"

#include <sys/statfs.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace gpucloud::exec {
namespace {

constexpr long kTmpfsMagic = 0x01021994;
constexpr long kCgroup2Magic = 0x63677270;

// The first executable `name` in PATH or the usual system directories, or "".
std::string find_binary(const std::string& name) {
  const char* env = std::getenv("PATH");
  std::string dirs = std::string(env ? env : "") + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  std::istringstream in(dirs);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (dir.empty() || dir[0] != '/') continue;
    std::string path = dir + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

bool fs_is(const char* path, long magic) {
  struct statfs st {};
  return ::statfs(path, &st) == 0 && static_cast<long>(st.f_type) == magic;
}

}  // namespace

ContainerRuntime detect_container_runtime() {
  ContainerRuntime rt;
  rt.podman = find_binary("podman");
  if (rt.podman.empty()) {
    rt.reason = "podman is not installed (apt-get install podman runc)";
    return rt;
  }
  for (const char* init : {"/usr/libexec/podman/catatonit", "/usr/bin/catatonit"})
    if (rt.init.empty() && ::access(init, X_OK) == 0) rt.init = init;
  std::string crun = find_binary("crun");
  std::string runc = find_binary("runc");
  bool hybrid =
      fs_is("/sys/fs/cgroup", kTmpfsMagic) && fs_is("/sys/fs/cgroup/unified", kCgroup2Magic);
  if (hybrid) {
    rt.runtime = runc;
    rt.reason = runc.empty() ? "cgroups are hybrid (v1 + /sys/fs/cgroup/unified), which crun "
                               "refuses, and runc is not installed (apt-get install runc)"
                             : "runc: cgroups are hybrid (v1 + /sys/fs/cgroup/unified), which "
                               "crun refuses";
    return rt;
  }
  rt.runtime = !crun.empty() ? crun : runc;
  rt.reason = rt.runtime.empty() ? "neither crun nor runc is installed (apt-get install runc)"
              : !crun.empty()    ? "crun"
                                 : "runc (crun is not installed)";
  return rt;
}

}  // namespace gpucloud::exec
