// ProcessExecutor: runs each job replica as a plain host process under a small supervisor,
// the shim (`gpucloud shim DIR`, see shim.cpp).
//
// How it works. start() makes DIR (0711) with the job's own DIR/job and DIR/tmp (0700, owned by
// the job's user), writes DIR/launch.json (0600) and spawns the shim in a session of its own.
// The shim claims the attempt (DIR/claim, see claim.h) before anything of the command runs,
// then forks the job into its own session and process group, joins the job's memory cgroup,
// pins its CPUs, sends its stdout and stderr to DIR/output.log, enters the workdir and execs the
// argv with exactly the given environment. It writes DIR/pid, waits for the job and records
// DIR/exit.json atomically. The shim, not the agent, is the job's parent: killing or restarting
// the agent leaves jobs running and their exit status recorded, and a new agent re-adopts them
// with adopt(). One monitor thread per executor watches all shims through pidfds.
//
// At most once. An attempt's command runs only in a shim that won DIR/claim, which is created
// once (link(2) of a complete file) and never replaced; start() refuses a DIR that has one. A
// caller that crashed before it learned the shim's pid calls recover_start(), which claims DIR
// as abandoned: if that wins, the command never ran and never will (a late shim sees the claim
// and exits); otherwise the shim that claimed it is adopted by the pid and start time it
// recorded, or its recorded exit is reported. A shim gone without exit.json and without a claim
// is reported lost with never_started; with a claim, lost. Claims are not fsync'ed: after a
// machine crash the caller must not take a missing claim for proof (see recover_start()).
//
// Limits (what this plug-in does not isolate or assume):
// - A job with a user (LaunchSpec::uid, docs/security.md "Job code") runs as that uid/gid with
//   no capabilities, no_new_privs, umask 077 and a private /tmp; one without runs as the
//   agent's user, with its privileges. Jobs of one uid can signal and ptrace each other. Its
//   gid must not be 0 (refused by start()). Its paths under the host's /tmp (workdir, job dir)
//   are made visible in its own /tmp only when its user can reach them without following a
//   symbolic link. Where no mount namespace can be made, it shares the host's /tmp (with TMPDIR
//   set to its own tmp dir), said in its output log.
// - Every job starts with a soft limit of 1024 open files (kJobOpenFilesSoftLimit, systemd's
//   default for services; select() fails above it) and the agent's hard limit, up to which it
//   may raise its own: not the raised soft limit of the server it may run within.
// - No network or PID isolation, and no filesystem isolation beyond file permissions and /tmp:
//   a job sees the host's files (as its user may), network and processes. Of the GPUs' device
//   nodes it may open only its own (LaunchSpec::gpu_device_minors), through a cgroup v1 devices
//   cgroup or a BPF device program on cgroup v2; where cgroups are not writable (or BPF is not
//   allowed), it sees every GPU's node and only CUDA_VISIBLE_DEVICES (which a job can ignore)
//   selects its GPUs.
// - The memory limit is enforced only where a memory cgroup (v2, else v1) is writable; elsewhere
//   a warning is logged once and jobs run without a limit. CPU pinning is sched_setaffinity,
//   which a job can undo.
// - signal() and stop() reach the job's process group (and, for SIGKILL, every process of its
//   cgroup); a process that leaves the group with setsid() escapes unless a cgroup holds it.
// - A stop() still in its grace period when the executor is destroyed does not escalate to
//   SIGKILL.
// - A job whose end could not be observed is reported with lost = true and exit_code -1. A shim
//   that dies after its claim but before it has started the command is reported lost like
//   that, not never_started: nothing proves the command did not run.
// - A shim killed between starting the job and writing DIR/pid leaves the job running
//   unsupervised (its pid was recorded nowhere); it is reported lost.
// - Needs Linux 5.3+ (pidfd_open).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "exec/executor.h"
#include "exec/process/cgroup.h"
#include "exec/process/pid_watcher.h"

namespace gpucloud::exec {

/// The process executor; see the comment at the top of this file for what it does not isolate.
class ProcessExecutor final : public Executor {
 public:
  /// Checks the kernel (pidfd_open) and the shim binary, finds the memory cgroup controller and
  /// starts the monitor thread.
  static Result<std::unique_ptr<ProcessExecutor>> create(const ProcessExecutorConfig& config);
  /// Stops the monitor thread. Running jobs and their shims are left running, to be adopted.
  /// Must not be called from the exit callback.
  ~ProcessExecutor() override;

  /// See Executor::set_exit_callback.
  void set_exit_callback(std::function<void(const ExitInfo&)> callback) override;
  /// See Executor::start. Returns once the job has been exec'd (or has failed to start); waits
  /// at most a few seconds for a slow shim.
  Result<ProcessRef> start(const LaunchSpec& spec) override;
  /// See Executor::adopt. The shim is recognised by pid and start time, never by pid alone.
  Status adopt(const ProcessRef& ref) override;
  /// See Executor::recover_start. Decided by the attempt's claim file (claim.h): the executor
  /// claims the attempt as abandoned unless the shim claimed it first.
  Result<RecoveredStart> recover_start(const std::string& key,
                                       const std::string& attempt_dir) override;
  /// See Executor::signal. kConflict when the job has already ended.
  Status signal(const std::string& key, int signo) override;
  /// See Executor::stop. The SIGKILL is a timer on the monitor thread. Succeeds if the job has
  /// already ended.
  Status stop(const std::string& key, int64_t grace_ms) override;
  /// See Executor::stats. Memory is the cgroup's charge when the job has a cgroup, else the RSS
  /// summed over its process group; CPU seconds are summed over its process group.
  Result<ProcessStats> stats(const std::string& key) override;

 private:
  ProcessExecutor(ProcessExecutorConfig config, std::optional<MemoryCgroupRoot> cgroup_root,
                  std::unique_ptr<PidWatcher> watcher);

  Result<std::string> make_cgroup(const LaunchSpec& spec);
  /// The job's devices cgroup when it confines GPU devices (LaunchSpec::gpu_device_minors): a
  /// v1 devices cgroup, or a v2 cgroup with a BPF device program; "" when the host has neither
  /// (warned once), or an error.
  Result<std::string> make_devices_cgroup(const LaunchSpec& spec);
  /// Where a job's devices cgroup is, whether or not it was made ("" without a controller).
  std::string devices_cgroup_of(const std::string& key) const;
  Status watch(const ProcessRef& ref);
  void on_shim_exit(const std::string& key);
  void report_unwatched(const ProcessRef& ref);
  ExitInfo unrecorded_end(const ProcessRef& ref, std::string message);
  void finish(const ProcessRef& ref, ExitInfo info);
  void remove_cgroup_later(const std::string& cgroup, int tries_left);
  void escalate(const std::string& key, int shim_pid);
  Result<ProcessRef> find(const std::string& key);

  ProcessExecutorConfig config_;
  std::optional<MemoryCgroupRoot> cgroup_root_;
  std::atomic<bool> warned_no_cgroup_{false};
  std::optional<std::string> devices_root_;  // the v1 devices controller's mount point
  std::optional<std::string> unified_root_;  // the cgroup v2 mount, when BPF confines devices
  std::atomic<bool> warned_no_devices_cgroup_{false};

  std::mutex mu_;
  std::map<std::string, ProcessRef> entries_;  // started or adopted, not yet reported
  std::function<void(const ExitInfo&)> callback_;

  std::unique_ptr<PidWatcher> watcher_;  // stopped first, in the destructor
};

}  // namespace gpucloud::exec
