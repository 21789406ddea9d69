// posix_spawn attributes shared by the agent (starting shims) and the shim (starting jobs).
#pragma once

#include <signal.h>
#include <spawn.h>

namespace gpucloud::exec {

/// Initialises attr for a child in a new session, with an empty signal mask and every signal
/// at its default disposition (nothing the parent ignores or handles carries over).
inline void init_new_session_spawnattr(posix_spawnattr_t& attr) {
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

}  // namespace gpucloud::exec
