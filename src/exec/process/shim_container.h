// The shim's part of a container job (LaunchFile::container_name): its environment file, and
// what it does when `podman run` ends.
#pragma once

#include <optional>
#include <string>

#include "exec/executor.h"
#include "exec/process/launch_file.h"

namespace gpucloud::exec {

/// Writes DIR/container.env (0600) from launch.container_env for podman --env-file. Returns why
/// it could not (a value with a newline, which that file cannot hold; a write error).
std::optional<std::string> write_container_env(const LaunchFile& launch, const std::string& dir);

/// After `podman run` ended as `info` says: removes the container when podman was killed or
/// failed itself (so nothing of the job outlives it), and turns podman's own failures (exit 125,
/// and 126/127 with podman's "Error:" line in the output) into a failed start that names the
/// image and podman's reason, instead of the job's exit code.
void finish_container(const LaunchFile& launch, const std::string& dir, ExitInfo& info);

}  // namespace gpucloud::exec
