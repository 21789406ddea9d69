#include "net/event_loop.h"

#include <unordered_map>

#include "net/asio.h"

namespace gpucloud::net {

struct EventLoop::Impl {
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(ioc);
  uint64_t next_timer = 1;
  std::unordered_map<uint64_t, std::shared_ptr<asio::steady_timer>> timers;
};

EventLoop::EventLoop() : impl_(std::make_unique<Impl>()) {}
EventLoop::~EventLoop() = default;

void EventLoop::post(std::function<void()> fn) {
  asio::post(impl_->ioc, std::move(fn));
}

uint64_t EventLoop::run_after(int64_t delay_ms, std::function<void()> fn) {
  static std::atomic<uint64_t> ids{1};
  uint64_t id = ids++;
  asio::post(impl_->ioc, [this, id, delay_ms, fn = std::move(fn)]() mutable {
    auto timer =
        std::make_shared<asio::steady_timer>(impl_->ioc, std::chrono::milliseconds(delay_ms));
    impl_->timers[id] = timer;
    timer->async_wait([this, id, fn = std::move(fn)](const boost::system::error_code& ec) {
      impl_->timers.erase(id);
      if (!ec) fn();
    });
  });
  return id;
}

void EventLoop::cancel(uint64_t timer_id) {
  auto it = impl_->timers.find(timer_id);
  if (it != impl_->timers.end()) it->second->cancel();
}

void EventLoop::run() {
  impl_->ioc.run();
}

void EventLoop::stop() {
  impl_->guard.reset();
  impl_->ioc.stop();
}

void* EventLoop::native_handle() {
  return &impl_->ioc;
}

}  // namespace gpucloud::net
