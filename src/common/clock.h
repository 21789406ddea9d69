// Time is injected: code that needs "now" takes a Clock, so tests and the simulator control it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace gpucloud {

/// Milliseconds since the Unix epoch. The one time unit stored and sent by gpucloud.
using TimeMs = int64_t;

/// A source of the current time.
class Clock {
 public:
  virtual ~Clock() = default;
  /// The current time in milliseconds since the Unix epoch.
  virtual TimeMs now_ms() const = 0;
};

/// The system's wall clock.
class SystemClock final : public Clock {
 public:
  TimeMs now_ms() const override;
};

/// A clock that moves only when told to (tests, simulation).
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeMs start = 0) : now_(start) {}
  TimeMs now_ms() const override { return now_.load(); }
  /// Moves the clock forward by delta milliseconds.
  void advance(TimeMs delta) { now_ += delta; }
  void set(TimeMs t) { now_ = t; }

 private:
  std::atomic<TimeMs> now_;
};

/// Monotonic milliseconds for measuring durations (never stored).
int64_t monotonic_ms();

/// Formats a time as ISO 8601 UTC with milliseconds, e.g. 2026-11-30T10:16:21.123Z.
std::string format_time_iso(TimeMs t);

}  // namespace gpucloud
