// The `podman run` command line of a container job.
#pragma once

#include <string>
#include <vector>

#include "exec/container/container_runtime.h"
#include "exec/executor.h"

namespace gpucloud::exec {

/// The container's name for a replica key: "gpucloud-" + the key with anything but letters,
/// digits, '_', '.' and '-' replaced by '-'.
std::string container_name_for(const std::string& key);

/// The `--ulimit` arguments every container of this node gets: podman's defaults exceed the
/// hard limits the agent runs under (runc then fails in setrlimit), so they are capped to them.
std::vector<std::string> podman_ulimit_args();

/// The argv of `podman run` for spec (whose container must be set), in the foreground (its
/// stdout and stderr are the job's), removed when it ends. The container runs as spec.uid:gid
/// (the executor's own when -1) with no capabilities and no_new_privs, the chosen runtime,
/// ulimits within the executor's hard limits, host networking (like process jobs), spec.cpus and
/// the memory limit in its cgroup, the job's dir and attempt dir (read-only) and the shared
/// paths mounted at the same paths, its devices, and its environment from env_file. With an init
/// (runtime.init), that init is the container's PID 1 and passes signals on to the command.
std::vector<std::string> podman_run_args(const ContainerRuntime& runtime, const LaunchSpec& spec,
                                         const std::string& attempt_dir,
                                         const std::string& env_file);

}  // namespace gpucloud::exec
