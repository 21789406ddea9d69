#include "cli/replay_progress.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "common/units.h"

namespace gpucloud::cli {

std::function<void(const sim::ReplayProgress&)> make_replay_progress_printer(bool terminal,
                                                                             bool always_last) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  Clock::time_point next = start + std::chrono::seconds(1);
  bool printed = always_last;
  return [=](const sim::ReplayProgress& p) mutable {
    Clock::time_point now = Clock::now();
    if (p.final ? !printed : now < next) return;
    next = now + std::chrono::seconds(1);
    printed = true;
    double wall_s = std::chrono::duration<double>(now - start).count();
    std::string line =
        fmt::format("sim time {}: {} submitted, {} done, {} queued, {} running; {:.0f} s wall",
                    format_duration_ms(p.sim_ms / 1000 * 1000), p.submitted, p.done, p.queued,
                    p.running, wall_s);
    if (terminal)
      fmt::print(stderr, "\r\033[K{}{}", line, p.final ? "\n" : "");
    else
      fmt::print(stderr, "{}\n", line);
    std::fflush(stderr);
  };
}

}  // namespace gpucloud::cli
