// Resource use of a running container, from its cgroup (the container's processes are not in
// the shim's process group: conmon, not podman run, is their parent).
#pragma once

#include <string>

#include "common/result.h"
#include "exec/executor.h"

namespace gpucloud::exec {

/// The host pid of the container's first process as `podman inspect` reports it; 0 when the
/// container is not running (yet, or any more) or podman cannot say.
int container_pid(const std::string& podman, const std::string& name);

/// CPU seconds and memory in use of the cgroup that `pid` is in: cgroup v2 (cpu.stat,
/// memory.current) or v1 (cpuacct.usage, memory.usage_in_bytes). kNotFound when pid is gone or
/// its cgroup files cannot be read.
Result<ProcessStats> cgroup_stats_of(int pid);

}  // namespace gpucloud::exec
