#include "exec/process/pid_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "exec/process/files.h"

namespace gpucloud::exec {

Result<std::unique_ptr<PidWatcher>> PidWatcher::create() {
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return internal(errno_message("cannot create an eventfd for the process monitor"));
  return std::unique_ptr<PidWatcher>(new PidWatcher(fd));
}

PidWatcher::PidWatcher(int wake_fd) : wake_fd_(wake_fd) {
  thread_ = std::thread([this] { loop(); });
}

PidWatcher::~PidWatcher() {
  stop();
  for (auto& [fd, task] : watches_) ::close(fd);
  ::close(wake_fd_);
}

void PidWatcher::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
}

void PidWatcher::watch(int pidfd, Task on_exit) {
  {
    std::lock_guard lock(mu_);
    watches_[pidfd] = std::move(on_exit);
  }
  wake();
}

void PidWatcher::post_after(std::chrono::milliseconds delay, Task task) {
  {
    std::lock_guard lock(mu_);
    timers_.emplace(Clock::now() + delay, std::move(task));
  }
  wake();
}

void PidWatcher::wake() {
  uint64_t one = 1;
  while (::write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void PidWatcher::loop() {
  std::vector<pollfd> fds;
  for (;;) {
    int timeout_ms = -1;
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      for (const auto& [fd, task] : watches_) fds.push_back({fd, POLLIN, 0});
      if (!timers_.empty()) {
        auto wait =
            std::chrono::ceil<std::chrono::milliseconds>(timers_.begin()->first - Clock::now());
        timeout_ms = static_cast<int>(std::max<int64_t>(0, wait.count()));
      }
    }
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) continue;

    std::vector<Task> ready;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      if (fds[0].revents != 0) {
        uint64_t count = 0;
        while (::read(wake_fd_, &count, sizeof count) > 0) {
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto it = watches_.find(fds[i].fd);
        if (it == watches_.end()) continue;
        ready.push_back(std::move(it->second));
        ::close(it->first);
        watches_.erase(it);
      }
      auto now = Clock::now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        ready.push_back(std::move(timers_.begin()->second));
        timers_.erase(timers_.begin());
      }
    }
    for (auto& task : ready) task();
  }
}

}  // namespace gpucloud::exec
