#include "exec/process/shim_container.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include "exec/process/files.h"

namespace gpucloud::exec {
namespace {

// What the container runtime wrote about its own failure at the end of the output log: the last
// "Error: ..." line of podman, or of its init, catatonit, the last "ERROR (catatonit:N): failed
// to exec pid1: ..." line (it could not start the command). Empty text when there is none.
struct RuntimeError {
  std::string text;
  bool from_init = false;
};

RuntimeError runtime_error_line(const std::string& dir) {
  int fd = ::open((dir + "/" + kOutputLog).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  off_t size = ::lseek(fd, 0, SEEK_END);
  off_t from = size > 8192 ? size - 8192 : 0;
  std::string tail(static_cast<size_t>(size - from), '\0');
  ssize_t n = ::pread(fd, tail.data(), tail.size(), from);
  ::close(fd);
  if (n <= 0) return {};
  tail.resize(static_cast<size_t>(n));
  RuntimeError found;
  size_t start = 0;
  while (start < tail.size()) {
    size_t end = tail.find('\n', start);
    if (end == std::string::npos) end = tail.size();
    std::string_view line(tail.data() + start, end - start);
    if (line.starts_with("Error: ")) found = {std::string(line.substr(7)), false};
    size_t exec = line.find("failed to exec pid1: ");
    if (line.starts_with("ERROR (catatonit") && exec != std::string_view::npos)
      found = {std::string(line.substr(exec)), true};
    start = end + 1;
  }
  if (found.text.size() > 600) found.text = found.text.substr(0, 597) + "...";
  return found;
}

// `podman rm -f --ignore --time 0 NAME`, its output to the shim's log (fd 2).
void remove_container(const LaunchFile& launch) {
  if (launch.podman.empty()) return;
  std::vector<std::string> args = {launch.podman,        "rm", "--force", "--ignore", "--time", "0",
                                   launch.container_name};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return;
  if (pid == 0) {
    ::dup2(2, 1);
    ::execv(launch.podman.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::string fix_for(int code) {
  switch (code) {
    case 126:
      return "the command (or the image's entrypoint) could not be run: it is not executable "
             "in the image, or the runtime refused the container (podman's reason says which)";
    case 127:
      return "the command (or the image's entrypoint) was not found in the image; check the "
             "command, entrypoint and the image's PATH";
    default:
      return "check that the image exists on the node (podman images) or can be pulled there "
             "(pull_policy, registry_auth), and the node's container runtime (the agent's log)";
  }
}

}  // namespace

std::optional<std::string> write_container_env(const LaunchFile& launch, const std::string& dir) {
  std::string text;
  for (const auto& [name, value] : launch.container_env) {
    if (value.find('\n') != std::string::npos || value.find('\r') != std::string::npos)
      return "env " + name + " has a line break, which a container job's environment cannot " +
             "hold; pass it in a file instead";
    text += name + "=" + value + "\n";
  }
  Status written = write_file_atomic(dir + "/" + kContainerEnvFile, text, 0600, false);
  if (!written.ok()) return written.error().message;
  return std::nullopt;
}

void finish_container(const LaunchFile& launch, const std::string& dir, ExitInfo& info) {
  const int code = info.exit_code;
  RuntimeError error = info.signal == 0 ? runtime_error_line(dir) : RuntimeError{};
  // The init exits 1 when it cannot start the command: not found (127) or not runnable (126).
  bool init_failed = code == 1 && error.from_init;
  bool podman_failed = info.signal == 0 && !error.from_init &&
                       (code == 125 || ((code == 126 || code == 127) && !error.text.empty()));
  if (info.signal != 0 || podman_failed || init_failed) remove_container(launch);
  if (!podman_failed && !init_failed) return;
  info.failed_to_start = true;
  int meaning = !init_failed                                           ? code
                : error.text.find("No such file") != std::string::npos ? 127
                                                                       : 126;
  info.message = "the container runtime could not run image " + launch.container_image + " (" +
                 (init_failed ? std::string("its init could not start the command")
                              : "podman exit " + std::to_string(code)) +
                 ")" + (error.text.empty() ? "" : ": " + error.text) + "; " + fix_for(meaning);
}

}  // namespace gpucloud::exec
