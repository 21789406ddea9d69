#include "exec/process/shim_spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "exec/process/files.h"
#include "exec/process/spawn_attr.h"

extern char** environ;

namespace gpucloud::exec {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(10);

}  // namespace

Result<SpawnedShim> spawn_shim(const std::string& shim_binary, const std::string& attempt_dir) {
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0)
    return internal(errno_message("cannot create a pipe for the shim"));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, ready[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  // Its own session: the shim must not share the agent's process group or terminal.
  init_new_session_spawnattr(attr);

  std::string arg0 = shim_binary, arg1 = "shim", arg2 = attempt_dir;
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, shim_binary.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(ready[1]);
  if (rc != 0) {
    ::close(ready[0]);
    return internal("cannot run the shim " + shim_binary + ": " + std::strerror(rc));
  }
  return SpawnedShim{static_cast<int>(pid), ready[0]};
}

// Waits until the shim closes its stdout (it has exec'd the job or recorded why it could not)
// or exits. Gives up after kStartTimeout: the job then still runs, start() just returns sooner.
void wait_until_started(int ready_fd, const std::string& key) {
  auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      spdlog::warn("exec: the shim of job {} has not reported a start after {}s; continuing", key,
                   std::chrono::duration_cast<std::chrono::seconds>(kStartTimeout).count());
      return;
    }
    pollfd pfd{ready_fd, POLLIN, 0};
    int n = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[256];
    ssize_t got = ::read(ready_fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;  // EOF: the shim closed stdout or exited
  }
}

}  // namespace gpucloud::exec
