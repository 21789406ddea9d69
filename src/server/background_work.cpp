#include "server/background_work.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

namespace gpucloud::server {

BackgroundWork::BackgroundWork(int threads, size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

BackgroundWork::~BackgroundWork() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool BackgroundWork::post(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
  return true;
}

void BackgroundWork::work() {
  // Below the loop's priority: on a busy machine, polls and /healthz go first (Linux applies a
  // thread's nice value to that thread alone).
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
  for (;;) {
    std::function<void()> next;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      next();
    } catch (const std::exception& e) {
      spdlog::error("background work failed: {}", e.what());
    }
  }
}

}  // namespace gpucloud::server
