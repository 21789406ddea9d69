// ContainerExecutor: runs the replicas whose LaunchSpec has a container in podman, and every
// other replica as a host process, through the one process executor it wraps.
//
// How it works. A container replica becomes a host process: `podman run` of its image in the
// foreground (podman_args.h), run by the process executor's shim as the executor's user while
// the container runs as the job's user. So everything the shim does holds for it: its output
// in output.log, its exit recorded while no agent runs, re-adoption after an agent restart (the
// shim and podman outlive the agent; the container is not started twice), SIGTERM to the
// process group reaching the container (podman's signal proxy), SIGKILL after the grace period.
// The shim reports podman's own failures as failed starts and removes the container when
// podman run is killed (shim_container.h).
//
// Limits:
// - Needs podman and runc or crun (detect_container_runtime); without them container jobs fail
//   to start, saying so. Rootful podman: the executor runs as root to switch users.
// - The container's PID 1 is the job's command (no init): a command that neither handles nor
//   is killed by SIGTERM (the kernel does not apply default actions to PID 1) ends at SIGKILL,
//   after the grace period.
// - stats() of a container reads the container's cgroup, found through `podman inspect` once
//   the container runs (retried at most every few seconds); until then it is podman run's.
// - A container job's environment values cannot contain line breaks (podman's --env-file).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "exec/container/container_runtime.h"
#include "exec/executor.h"

namespace gpucloud::exec {

/// The executor that chooses, per replica, a container (LaunchSpec::container) or a process.
class ContainerExecutor final : public Executor {
 public:
  /// Wraps `processes` (the process executor), running containers with `runtime`.
  ContainerExecutor(std::unique_ptr<Executor> processes, ContainerRuntime runtime);

  /// See Executor::set_exit_callback.
  void set_exit_callback(std::function<void(const ExitInfo&)> callback) override;
  /// See Executor::start. A container replica starts as `podman run` under the shim;
  /// kUnavailable when this node has no usable container runtime.
  Result<ProcessRef> start(const LaunchSpec& spec) override;
  /// See Executor::adopt.
  Status adopt(const ProcessRef& ref) override;
  /// See Executor::recover_start.
  Result<RecoveredStart> recover_start(const std::string& key,
                                       const std::string& attempt_dir) override;
  /// See Executor::signal.
  Status signal(const std::string& key, int signo) override;
  /// See Executor::stop.
  Status stop(const std::string& key, int64_t grace_ms) override;
  /// See Executor::stats. For a container: its cgroup's CPU seconds and memory.
  Result<ProcessStats> stats(const std::string& key) override;

 private:
  // A container replica, for stats(): its name and the host pid of its first process.
  struct Tracked {
    std::string name;
    int pid = 0;
    std::chrono::steady_clock::time_point next_lookup{};
  };
  // Tracks ref's replica when its launch file says it is a container.
  void track_if_container(const ProcessRef& ref);

  ContainerRuntime runtime_;
  std::mutex mu_;
  std::map<std::string, Tracked> containers_;  // by key, until the exit callback
  // Last: destroyed first, so its monitor thread (which calls the exit callback) stops first.
  std::unique_ptr<Executor> processes_;
};

}  // namespace gpucloud::exec
