#include "cli/daemon.h"

#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <stdexcept>

namespace gpucloud::cli {

Result<std::pair<std::string, int>> parse_listen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return invalid(fmt::format(
        "--listen '{}' is not HOST:PORT (e.g. 127.0.0.1:8080, or port 0 for any free port)",
        listen));
  std::string host = listen.substr(0, colon);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  try {
    size_t used = 0;
    int port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1 || port < 0 || port > 65535) throw std::out_of_range("");
    return std::make_pair(host, port);
  } catch (...) {
    return invalid(fmt::format("--listen '{}': the port must be a number 0..65535", listen));
  }
}

SignalWaiter::SignalWaiter() {
  sigemptyset(&signals_);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaddset(&signals_, sig);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

int SignalWaiter::wait(const std::function<void()>& on_hup) {
  for (;;) {
    int sig = 0;
    if (sigwait(&signals_, &sig) != 0) continue;
    if (sig == SIGHUP) {
      if (on_hup) on_hup();
      continue;
    }
    return sig;
  }
}

void SignalWaiter::request_stop() {
  ::kill(::getpid(), SIGUSR1);
}

}  // namespace gpucloud::cli
