#include "exec/container/container_stats.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace gpucloud::exec {
namespace {

bool read_number(const std::string& path, int64_t* out) {
  std::ifstream in(path);
  return static_cast<bool>(in >> *out);
}

// usage_usec of a cgroup v2 cpu.stat.
bool read_usage_usec(const std::string& path, int64_t* out) {
  std::ifstream in(path);
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == "usage_usec") {
      *out = value;
      return true;
    }
  }
  return false;
}

}  // namespace

int container_pid(const std::string& podman, const std::string& name) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return 0;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {podman,     "inspect",        "--type", "container",
                                   "--format", "{{.State.Pid}}", name};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  int rc = ::posix_spawn(&child, podman.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  std::string out;
  if (rc == 0) {
    char buf[256];
    ssize_t n = 0;
    while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0 && out.size() < 4096) out.append(buf, static_cast<size_t>(n));
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) out.clear();
  }
  ::close(pipe_fds[0]);
  try {
    return out.empty() ? 0 : std::max(0, std::stoi(out));
  } catch (...) {
    return 0;
  }
}

Result<ProcessStats> cgroup_stats_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  if (!in) return Error{ErrorCode::kNotFound, "process " + std::to_string(pid) + " is gone"};
  std::string line, v2_path, cpu_path, memory_path;
  while (std::getline(in, line)) {
    size_t first = line.find(':');
    size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty()) v2_path = path;
    std::istringstream list(controllers);
    std::string c;
    while (std::getline(list, c, ',')) {
      if (c == "cpuacct") cpu_path = "/sys/fs/cgroup/" + controllers + path;
      if (c == "memory") memory_path = "/sys/fs/cgroup/" + controllers + path;
    }
  }
  ProcessStats stats;
  int64_t value = 0;
  bool any = false;
  if (!cpu_path.empty() && read_number(cpu_path + "/cpuacct.usage", &value)) {
    stats.cpu_seconds = static_cast<double>(value) / 1e9;
    any = true;
  } else if (!v2_path.empty() &&
             read_usage_usec("/sys/fs/cgroup" + v2_path + "/cpu.stat", &value)) {
    stats.cpu_seconds = static_cast<double>(value) / 1e6;
    any = true;
  }
  if (!memory_path.empty() && read_number(memory_path + "/memory.usage_in_bytes", &value)) {
    stats.memory_rss_mib = value / (1024 * 1024);
    any = true;
  } else if (!v2_path.empty() &&
             read_number("/sys/fs/cgroup" + v2_path + "/memory.current", &value)) {
    stats.memory_rss_mib = value / (1024 * 1024);
    any = true;
  }
  if (!any)
    return Error{ErrorCode::kNotFound, "cannot read the cgroup of process " + std::to_string(pid)};
  return stats;
}

}  // namespace gpucloud::exec
