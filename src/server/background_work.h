// BackgroundWork: a few threads that run work off the server's event loop, so that building a
// large answer (a page of 1,000 jobs) never delays polls and /healthz.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpucloud::server {

class BackgroundWork {
 public:
  /// Starts `threads` workers; at most max_queued pieces of work wait at once.
  BackgroundWork(int threads, size_t max_queued);
  /// Runs what was queued, then joins the workers.
  ~BackgroundWork();
  BackgroundWork(const BackgroundWork&) = delete;
  BackgroundWork& operator=(const BackgroundWork&) = delete;

  /// Queues fn to run on a worker; false (and fn is dropped) when max_queued are waiting.
  /// Thread-safe. fn must not touch the loop's state; an exception it throws is logged.
  bool post(std::function<void()> fn);

 private:
  void work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  size_t max_queued_;
  std::vector<std::thread> threads_;
};

}  // namespace gpucloud::server
