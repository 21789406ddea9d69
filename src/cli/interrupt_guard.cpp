#include "cli/interrupt_guard.h"

#include <unistd.h>

namespace gpucloud::cli {

namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

void on_sigint(int) {
  if (g_stop.exchange(true)) _exit(130);
  static const char kMessage[] =
      "\ninterrupted: stopping at the next event and printing the report so far (Ctrl-C again "
      "to quit now)\n";
  ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  (void)ignored;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_stop = false;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previous_, nullptr);
}

const std::atomic<bool>* InterruptGuard::stop_requested() const {
  return &g_stop;
}

}  // namespace gpucloud::cli
