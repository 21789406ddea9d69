// PidWatcher: one thread that waits, with poll(), on many pidfds and timers at once.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/result.h"

namespace gpucloud::exec {

/// Runs callbacks on its own thread when a watched pidfd becomes readable (the process has
/// exited) or a timer is due. Thread-safe. Destroying it stops the thread; callbacks not yet
/// run are dropped and watched descriptors are closed (see stop()).
class PidWatcher {
 public:
  using Task = std::function<void()>;

  /// Creates the watcher and starts its thread.
  static Result<std::unique_ptr<PidWatcher>> create();
  ~PidWatcher();
  PidWatcher(const PidWatcher&) = delete;
  PidWatcher& operator=(const PidWatcher&) = delete;

  /// Takes ownership of `pidfd`; runs `on_exit` once on the watcher thread when it becomes
  /// readable, then closes it.
  void watch(int pidfd, Task on_exit);
  /// Runs `task` on the watcher thread once `delay` has passed.
  void post_after(std::chrono::milliseconds delay, Task task);
  /// Runs `task` on the watcher thread as soon as possible.
  void post(Task task) { post_after(std::chrono::milliseconds(0), std::move(task)); }
  /// Stops the thread after the callback it is running, if any, and drops the rest. Idempotent;
  /// must not be called from the watcher thread. Callbacks may still call watch() and post().
  void stop();

 private:
  using Clock = std::chrono::steady_clock;
  explicit PidWatcher(int wake_fd);
  void wake();
  void loop();

  int wake_fd_;
  std::mutex mu_;
  bool stopping_ = false;
  std::map<int, Task> watches_;  // pidfd -> callback
  std::multimap<Clock::time_point, Task> timers_;
  std::thread thread_;
};

}  // namespace gpucloud::exec
