// Which container engine and OCI runtime this node runs container jobs with.
#pragma once

#include <string>

namespace gpucloud::exec {

/// The node's podman and the OCI runtime it is told to use (--runtime).
struct ContainerRuntime {
  std::string podman;   // absolute path; "" when podman is not installed
  std::string runtime;  // absolute path of runc or crun; "" when neither fits
  std::string reason;   // why this runtime (for the agent's log), or why none is usable
  std::string init;     // catatonit, the containers' PID 1; "" when not installed (no init)

  /// Whether container jobs can run here.
  bool usable() const { return !podman.empty() && !runtime.empty(); }
};

/// Finds podman and chooses its OCI runtime: on hybrid cgroups (v1 controllers with cgroup2
/// mounted at /sys/fs/cgroup/unified) runc, since crun refuses them ("cgroups in hybrid mode not
/// supported"); elsewhere crun, else runc. The init is podman's catatonit where installed.
/// Reads only the file system; runs nothing.
ContainerRuntime detect_container_runtime();

}  // namespace gpucloud::exec
