// Shared plumbing of the long-running commands (dev, server, agent): the --listen flag and
// signal handling on one thread.
#pragma once

#include <csignal>
#include <functional>
#include <string>
#include <utility>

#include "common/result.h"

namespace gpucloud::cli {

/// Parses --listen HOST:PORT ("[::1]:8080" for IPv6; port 0 = any free port).
Result<std::pair<std::string, int>> parse_listen(const std::string& listen);

/// Blocks SIGINT, SIGTERM, SIGHUP and SIGUSR1 in the calling thread and every thread it starts
/// afterwards (construct it before starting threads), so that only wait() sees them.
class SignalWaiter {
 public:
  SignalWaiter();
  /// Waits for a signal; SIGHUP runs on_hup and keeps waiting. Returns the stopping signal
  /// (SIGUSR1 means "stop: the program asked itself", see request_stop()).
  int wait(const std::function<void()>& on_hup = {});
  /// Makes wait() return SIGUSR1; callable from any thread.
  static void request_stop();

 private:
  sigset_t signals_;
};

}  // namespace gpucloud::cli
