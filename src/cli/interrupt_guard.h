// Ctrl-C during a long computation: the first SIGINT asks it to stop (it finishes cleanly and
// reports what it has), a second one exits at once.
#pragma once

#include <atomic>
#include <csignal>

namespace gpucloud::cli {

/// Installs a SIGINT handler for its lifetime (the previous handler comes back after). The first
/// SIGINT sets stop_requested() and says on stderr that the work stops at the next step; a
/// second exits the process with status 130. One guard at a time.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  /// The flag the first SIGINT sets; pass it to the work as its stop request.
  const std::atomic<bool>* stop_requested() const;

 private:
  struct sigaction previous_ {};
};

}  // namespace gpucloud::cli
