// EventLoop: a single-threaded loop that runs posted work and timers. The server's logic
// runs on one loop, so it needs no locks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace gpucloud::net {

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  /// Runs fn on the loop's thread soon. Thread-safe.
  void post(std::function<void()> fn);
  /// Runs fn on the loop's thread after delay_ms; returns an id for cancel(). Thread-safe.
  uint64_t run_after(int64_t delay_ms, std::function<void()> fn);
  /// Cancels a timer that has not fired yet. Must be called on the loop's thread.
  void cancel(uint64_t timer_id);
  /// Runs the loop on the calling thread until stop().
  void run();
  /// Makes run() return. Thread-safe.
  void stop();

  /// The underlying asio io_context (for src/net only).
  void* native_handle();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucloud::net
