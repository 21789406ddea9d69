// How the agent side starts a shim and learns that the job has started.
#pragma once

#include <string>

#include "common/result.h"

namespace gpucloud::exec {

/// A shim just spawned: its pid, and the read end of a pipe that is its stdout.
struct SpawnedShim {
  int pid = 0;
  int ready_fd = -1;  // reaches EOF once the job has exec'd or its failure is recorded
};

/// Runs `<shim_binary> shim <attempt_dir>` in a new session, with stdin and stderr on /dev/null,
/// default signal dispositions and no descriptor of ours beyond stdout (the ready pipe).
Result<SpawnedShim> spawn_shim(const std::string& shim_binary, const std::string& attempt_dir);

/// Waits until the shim closes its stdout (it has exec'd the job or recorded why it could not)
/// or exits. Gives up after a few seconds with a warning: the job may still start later.
void wait_until_started(int ready_fd, const std::string& key);

}  // namespace gpucloud::exec
