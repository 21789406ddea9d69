// Executor: starts, watches, signals and re-adopts the processes of job replicas on one node.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpucloud::exec {

/// A mount of a container job: a host path (absolute) or a named volume, at target.
struct ContainerMountSpec {
  std::string source;
  std::string target;
  bool read_only = false;
};

/// What makes a replica run in a container (docs/containers.md). Its argv is the command run in
/// the image (empty: the image's CMD), its workdir a path inside it ("" = the image's WORKDIR).
struct ContainerLaunch {
  std::string image;
  std::vector<std::string> entrypoint;  // empty = the image's
  std::vector<ContainerMountSpec> mounts;
  int64_t shm_size_mib = 0;               // 0 = podman's default
  std::string pull = "missing";           // podman --pull: always, missing or never
  std::string auth_file;                  // a registry credentials file on this node; "" = none
  std::vector<std::string> devices;       // "HOST_NODE:CONTAINER_NODE", e.g. the job's GPUs
  std::vector<std::string> shared_paths;  // host paths mounted at the same path (checkpoints)
  // Set by the container executor: the job's environment, which podman reads from a file of
  // the attempt dir (never from its argv, which every user can read, nor from its own
  // environment, which steers podman itself).
  std::map<std::string, std::string> env_file;
};

/// Everything needed to start one replica of one attempt.
struct LaunchSpec {
  std::string key;                // unique per replica of an attempt, e.g. "<job>.<attempt>.<rank>"
  std::vector<std::string> argv;  // never a shell string
  std::map<std::string, std::string> env;  // the complete environment (nothing inherited)
  std::string workdir;           // must exist; otherwise the attempt fails with a clear message
  std::string attempt_dir;       // created by the executor; the shim's files (see job_dir_of)
  std::vector<int> cpus;         // CPU cores to pin to; empty = no pinning
  int64_t memory_limit_mib = 0;  // 0 = no limit
  // The user the job runs as (docs/security.md, "Job code"). -1 = the executor's own user, as
  // it is (no switching, no isolation); 0 = root, only for tenants allowed to run as root;
  // another id = that uid/gid, with no capabilities, no_new_privs, umask 077 and its own /tmp.
  // Switching needs the executor to run as root.
  int64_t uid = -1;
  int64_t gid = -1;
  // A container job (for the container executor, which turns it into a `podman run`).
  std::optional<ContainerLaunch> container;
  // Set by the container executor: argv is `podman run` of this container, run as the
  // executor's own user while uid/gid own the job's directories; the shim reports podman's own
  // failures as failed starts and removes the container when podman run is killed.
  std::string container_name;
  std::string container_image;
  std::string podman;  // the podman binary, for that removal
  // GPU device isolation (docs/security.md, "GPU devices"): when set, the job may open, of the
  // NVIDIA driver's device nodes (char major 195), only these minors and the control nodes
  // (nvidiactl, nvidia-modeset); any other GPU's node is denied (EPERM), whatever its path.
  // Enforced with a cgroup v1 devices cgroup, or a BPF device program on cgroup v2
  // (ProcessExecutorConfig::device_isolation); where neither exists the executor warns once that
  // it is not enforced. Not used for containers (podman passes exactly their nodes).
  std::optional<std::vector<int>> gpu_device_minors;
  // With gpu_device_minors: the NVIDIA driver's MIG capability devices (char major, -1: none on
  // this host), of which the job may open only gpu_caps_minors (its MIG devices' capabilities).
  int gpu_caps_major = -1;
  std::vector<int> gpu_caps_minors;
};

/// The directory a job owns inside its attempt dir: GPUCLOUD_ATTEMPT_DIR, its default workdir
/// and HOME. The attempt dir itself (0711, the executor's user) holds the shim's private files.
std::string job_dir_of(const std::string& attempt_dir);
/// The per-job directory bind-mounted on the job's /tmp (or given as TMPDIR where mount
/// namespaces are unavailable), owned by the job's user.
std::string job_tmp_dir_of(const std::string& attempt_dir);

/// A started process as the agent persists it, so a restarted agent can re-adopt it.
struct ProcessRef {
  std::string key;
  int shim_pid = 0;
  uint64_t shim_start_ticks = 0;  // from /proc/<pid>/stat, guards against pid reuse
  std::string attempt_dir;
  std::string cgroup;  // "" when no cgroup was made
};

/// How a process ended.
struct ExitInfo {
  std::string key;
  int exit_code = 0;  // the process's exit code, or 128+N when killed by signal N
  int signal = 0;     // N when killed by a signal, else 0
  bool lost = false;  // true when the end could not be observed (shim vanished, no exit record)
  bool failed_to_start = false;  // exec failed, workdir missing, ...
  bool never_started = false;    // with lost: provably never ran (its shim ended before it
                                 // claimed the attempt, which now never runs)
  std::string message;           // human-readable, e.g. "workdir /x does not exist"
};

/// What Executor::recover_start() found.
struct RecoveredStart {
  bool never_started = false;  // the command never ran, and now never will
  ProcessRef ref;              // otherwise its shim, adopted
};

/// Resource use of a running process tree.
struct ProcessStats {
  int64_t memory_rss_mib = 0;
  double cpu_seconds = 0;
};

/// Runs job processes. Implementations are thread-safe; exit callbacks arrive on the
/// executor's own thread.
class Executor {
 public:
  virtual ~Executor() = default;
  /// Sets the function called exactly once for each started or adopted process when it ends.
  /// Must be called before start() or adopt().
  virtual void set_exit_callback(std::function<void(const ExitInfo&)> callback) = 0;
  /// Starts a process. Returns once the process exists; a failure to exec (bad workdir,
  /// missing binary) is reported through the exit callback with failed_to_start.
  virtual Result<ProcessRef> start(const LaunchSpec& spec) = 0;
  /// Re-adopts a process started earlier (by this or a previous agent process). If it has
  /// already ended, its recorded exit is reported through the callback (or lost if none).
  virtual Status adopt(const ProcessRef& ref) = 0;
  /// For a replica whose start() was cut short before its shim's pid was known (the caller
  /// crashed, or start() refused an attempt dir that had been started before): decides for
  /// certain whether its command ran. Either it never ran and now never will (never_started),
  /// or a shim claimed it: that shim is adopted as with adopt(), and its end (the one it
  /// recorded, or lost when it vanished without one) is reported through the exit callback.
  /// Valid within one boot of the machine: after a machine crash, never_started proves nothing
  /// (the attempt's files may not have reached the disk), and the caller reports it lost.
  virtual Result<RecoveredStart> recover_start(const std::string& key,
                                               const std::string& attempt_dir) = 0;
  /// Sends a signal to the process group of the job process.
  virtual Status signal(const std::string& key, int signo) = 0;
  /// SIGTERM to the process group, then SIGKILL once grace_ms passes without an exit.
  virtual Status stop(const std::string& key, int64_t grace_ms) = 0;
  /// Current resource use.
  virtual Result<ProcessStats> stats(const std::string& key) = 0;
};

/// Where the process executor finds the shim and how it isolates jobs.
struct ProcessExecutorConfig {
  /// Run as `<bin> shim DIR`. Default: gpucloud-shim beside this executable when it exists,
  /// else this executable itself (/proc/self/exe).
  std::string shim_binary;
  std::string cgroup_parent = "gpucloud";  // relative to the memory controller's root
  // How a job is confined to its GPU device nodes (docs/security.md, "GPU devices"): "auto"
  // (the cgroup v1 devices controller where mounted, else a BPF device program on cgroup v2),
  // "cgroup-v1" or "bpf" (either alone).
  std::string device_isolation = "auto";
};

/// Creates the process executor (see process/process_executor.h for its limits).
Result<std::unique_ptr<Executor>> create_process_executor(const ProcessExecutorConfig& config);

/// The body of `gpucloud shim DIR`: runs the job described in DIR/launch.json and records its
/// exit in DIR/exit.json. Returns the shim's own exit code.
int run_shim(const std::string& attempt_dir);

}  // namespace gpucloud::exec
