#include "exec/process/process_executor.h"

#include <fcntl.h>
#include <limits.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "exec/process/bpf_devices.h"
#include "exec/process/claim.h"
#include "exec/process/crash_point.h"
#include "exec/process/files.h"
#include "exec/process/launch_file.h"
#include "exec/process/proc.h"
#include "exec/process/shim_spawn.h"

namespace gpucloud::exec {
namespace {

constexpr int kCgroupRemoveTries = 50;  // 100 ms apart
constexpr auto kCgroupRetryDelay = std::chrono::milliseconds(100);

Status validate(const LaunchSpec& spec) {
  if (spec.key.empty()) return invalid("key: empty; give each replica of an attempt a unique key");
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return invalid("argv: empty for job " + spec.key + "; give the command to run");
  }
  if (spec.attempt_dir.empty()) return invalid("attempt_dir: empty for job " + spec.key);
  if (spec.workdir.empty() || spec.workdir[0] != '/') {
    return invalid("workdir: '" + spec.workdir + "' for job " + spec.key +
                   " is not an absolute path; give the directory the job runs in");
  }
  if (spec.uid > 0xfffffffeLL || spec.gid > 0xfffffffeLL || (spec.uid >= 0) != (spec.gid >= 0))
    return invalid("uid/gid: " + std::to_string(spec.uid) + "/" + std::to_string(spec.gid) +
                   " for job " + spec.key + "; give both, each within 0..4294967294, or neither");
  if (spec.uid > 0 && spec.gid == 0)
    return invalid("gid: 0 (root's group) for job " + spec.key + " with uid " +
                   std::to_string(spec.uid) +
                   "; a job with a user must not get root's group: give it a gid of its own");
  if (spec.uid >= 0 && ::geteuid() != 0 && spec.uid != ::geteuid()) {
    return Error{ErrorCode::kPermissionDenied,
                 "job " + spec.key + " cannot run as uid " + std::to_string(spec.uid) +
                     ": the executor runs as uid " + std::to_string(::geteuid()) +
                     ", not root; run the agent as root or start jobs without a user"};
  }
  for (int cpu : spec.cpus) {
    if (cpu < 0 || cpu >= 65536)
      return invalid("cpus: " + std::to_string(cpu) + " is not a CPU number");
  }
  if (spec.memory_limit_mib < 0) {
    return invalid("memory_limit_mib: " + std::to_string(spec.memory_limit_mib) +
                   " is negative; use 0 for no limit");
  }
  return {};
}

// Makes a directory with exactly `mode` (whatever the umask), owned by uid/gid when given.
Status make_owned_dir(const std::string& path, int mode, int64_t uid, int64_t gid) {
  if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST)
    return internal(errno_message("cannot create " + path));
  if (uid >= 0 && ::chown(path.c_str(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0)
    return internal(errno_message("cannot give " + path + " to uid " + std::to_string(uid)));
  if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0)
    return internal(errno_message("cannot set the mode of " + path));
  return {};
}

// The attempt dir (0711: a job user may pass through it but not list it or read the shim's
// 0600 files) with the job's own dir and private tmp dir in it (0700, the job's user).
Status make_attempt_dirs(const std::string& attempt_dir, const LaunchSpec& spec) {
  std::string parent = attempt_dir.substr(0, attempt_dir.rfind('/'));
  if (!parent.empty()) GPUCLOUD_TRY(make_dirs(parent, 0711));
  GPUCLOUD_TRY(make_owned_dir(attempt_dir, 0711, -1, -1));
  GPUCLOUD_TRY(make_owned_dir(job_dir_of(attempt_dir), 0700, spec.uid, spec.gid));
  // Always a fresh one: the shim's child makes mount points in it as root, which must never
  // follow a link a previous run of the job left there.
  std::error_code ec;
  std::filesystem::remove_all(job_tmp_dir_of(attempt_dir), ec);
  return make_owned_dir(job_tmp_dir_of(attempt_dir), 0700, spec.uid, spec.gid);
}

// The job's process group id if the job may still be running: kUnavailable before the shim has
// written DIR/pid, kConflict once DIR/exit.json exists.
Result<int> job_pgid_of(const ProcessRef& ref) {
  if (path_exists(ref.attempt_dir + "/" + kExitFile)) {
    return Error{ErrorCode::kConflict, "job " + ref.key + " has already ended"};
  }
  auto pid = read_pid_file(ref.attempt_dir);
  if (!pid.ok() && pid.error().code == ErrorCode::kNotFound) {
    return Error{ErrorCode::kUnavailable,
                 "job " + ref.key + " has not started its process yet; retry"};
  }
  return pid;
}

// Kills what is left of a job whose shim vanished, when DIR/pid still names a session leader
// (the job's first process calls setsid(), so pid == pgid == sid).
void kill_orphaned_group(const ProcessRef& ref) {
  auto pid = read_pid_file(ref.attempt_dir);
  if (!pid.ok()) return;
  auto st = read_proc_stat(*pid);
  if (st.ok() && st->session == *pid && st->pgrp == *pid) ::kill(-*pid, SIGKILL);
}

// DIR/launch.json, or nullopt when it is missing or was never written whole.
std::optional<LaunchFile> read_launch_file(const std::string& attempt_dir) {
  auto text = read_file(attempt_dir + "/" + kLaunchFile);
  if (!text.ok()) return std::nullopt;
  auto launch = launch_file_from_json(*text);
  if (!launch.ok()) return std::nullopt;
  return *launch;
}

}  // namespace

Result<std::unique_ptr<ProcessExecutor>> ProcessExecutor::create(
    const ProcessExecutorConfig& config) {
  ProcessExecutorConfig cfg = config;
  if (cfg.shim_binary.empty()) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
      return internal(errno_message("cannot read /proc/self/exe to find the shim binary"));
    cfg.shim_binary.assign(buf, static_cast<size_t>(n));
    // Prefer the small gpucloud-shim installed beside this binary: it starts in a fraction of
    // the time, and a shim is exec'd for every job.
    std::string beside =
        cfg.shim_binary.substr(0, cfg.shim_binary.rfind('/') + 1) + "gpucloud-shim";
    if (::access(beside.c_str(), X_OK) == 0) cfg.shim_binary = beside;
  }
  if (::access(cfg.shim_binary.c_str(), X_OK) != 0) {
    return invalid(errno_message("shim_binary " + cfg.shim_binary + " cannot be executed"));
  }
  int probe = pidfd_open(::getpid());
  if (probe < 0) {
    return Error{
        ErrorCode::kUnavailable,
        errno_message("pidfd_open is not available (the process executor needs Linux 5.3+)")};
  }
  ::close(probe);
  auto watcher = PidWatcher::create();
  if (!watcher.ok()) return watcher.error();
  auto root = find_memory_cgroup_root();
  if (root) {
    spdlog::debug("exec: memory cgroup {} at {}", root->version == CgroupVersion::kV2 ? "v2" : "v1",
                  root->path);
  }
  return std::unique_ptr<ProcessExecutor>(
      new ProcessExecutor(std::move(cfg), root, std::move(*watcher)));
}

ProcessExecutor::ProcessExecutor(ProcessExecutorConfig config,
                                 std::optional<MemoryCgroupRoot> cgroup_root,
                                 std::unique_ptr<PidWatcher> watcher)
    : config_(std::move(config)),
      cgroup_root_(std::move(cgroup_root)),
      watcher_(std::move(watcher)) {
  const std::string& how = config_.device_isolation;
  if (how != "bpf") devices_root_ = find_devices_cgroup_root();
  if (how == "bpf" || (how == "auto" && !devices_root_)) unified_root_ = find_unified_cgroup_root();
}

// Stops the monitor thread before any member goes: its callbacks use watcher_ and entries_.
ProcessExecutor::~ProcessExecutor() {
  watcher_->stop();
}

void ProcessExecutor::set_exit_callback(std::function<void(const ExitInfo&)> callback) {
  std::lock_guard lock(mu_);
  callback_ = std::move(callback);
}

Result<ProcessRef> ProcessExecutor::start(const LaunchSpec& spec) {
  GPUCLOUD_TRY(validate(spec));
  ProcessRef ref;
  ref.key = spec.key;
  std::error_code ec;
  ref.attempt_dir = std::filesystem::absolute(spec.attempt_dir, ec).lexically_normal().string();
  if (ec) return invalid("attempt_dir: cannot resolve " + spec.attempt_dir + ": " + ec.message());
  {
    std::lock_guard lock(mu_);
    if (entries_.count(spec.key) != 0) {
      return Error{ErrorCode::kConflict, "job " + spec.key + " is already running on this node"};
    }
    entries_[spec.key] = ref;  // reserves the key; shim_pid 0 until spawned
  }
  auto release = [&](Error error) {
    std::lock_guard lock(mu_);
    entries_.erase(spec.key);
    return error;
  };

  Status dir = make_attempt_dirs(ref.attempt_dir, spec);
  if (!dir.ok()) return release(dir.error());
  if (path_exists(ref.attempt_dir + "/" + kClaimFile)) {
    return release(Error{ErrorCode::kConflict,
                         "job " + spec.key + " was started before in " + ref.attempt_dir +
                             " (its claim file exists); an attempt never runs twice: recover "
                             "it with recover_start()"});
  }
  for (const char* stale : {kPidFile, kExitFile}) ::unlink((ref.attempt_dir + "/" + stale).c_str());

  auto cgroup = make_cgroup(spec);
  if (!cgroup.ok()) return release(cgroup.error());
  ref.cgroup = *cgroup;
  auto devices = make_devices_cgroup(spec);
  if (!devices.ok()) {
    remove_cgroup(ref.cgroup);
    return release(devices.error());
  }

  LaunchFile launch{spec.key,  spec.argv,  spec.env, spec.workdir,
                    spec.cpus, ref.cgroup, spec.uid, spec.uid < 0 ? -1 : spec.gid};
  launch.devices_cgroup = *devices;
  if (!spec.container_name.empty()) {
    // podman runs as the executor's user; the container itself as spec.uid (its --user).
    launch.uid = launch.gid = -1;
    launch.container_name = spec.container_name;
    launch.container_image = spec.container_image;
    launch.podman = spec.podman;
    if (spec.container) launch.container_env = spec.container->env_file;
  }
  Status written =
      write_file_in_place(ref.attempt_dir + "/" + kLaunchFile, launch_file_to_json(launch));
  if (!written.ok()) {
    remove_cgroup(ref.cgroup);
    remove_cgroup(*devices);
    return release(written.error());
  }

  crash_point("exec.before_shim");
  auto shim = spawn_shim(config_.shim_binary, ref.attempt_dir);
  if (!shim.ok()) {
    remove_cgroup(ref.cgroup);
    remove_cgroup(*devices);
    return release(shim.error());
  }
  crash_point("exec.shim_spawned");
  ref.shim_pid = shim->pid;
  int ready_fd = shim->ready_fd;
  auto st = read_proc_stat(ref.shim_pid);  // the shim is our unreaped child: /proc has it
  ref.shim_start_ticks = st.ok() ? st->start_ticks : 0;
  {
    std::lock_guard lock(mu_);
    entries_[spec.key] = ref;
  }
  Status watching = watch(ref);
  if (!watching.ok() && watching.error().code != ErrorCode::kNotFound) {
    ::close(ready_fd);
    return release(watching.error());
  }
  if (!watching.ok()) {
    ::waitpid(ref.shim_pid, nullptr, WNOHANG);  // already gone: report what it recorded
    watcher_->post([this, ref] { report_unwatched(ref); });
  }
  wait_until_started(ready_fd, spec.key);
  ::close(ready_fd);
  return ref;
}

Result<std::string> ProcessExecutor::make_cgroup(const LaunchSpec& spec) {
  if (spec.memory_limit_mib <= 0) return std::string();
  auto warn_once = [&](const std::string& why) {
    if (!warned_no_cgroup_.exchange(true)) {
      spdlog::warn("no writable memory cgroup (v2 or v1); memory limits are not enforced ({})",
                   why);
    }
  };
  if (!cgroup_root_) {
    warn_once("no memory controller is mounted");
    return std::string();
  }
  auto cgroup =
      create_memory_cgroup(*cgroup_root_, config_.cgroup_parent, spec.key, spec.memory_limit_mib);
  if (cgroup.ok()) return *cgroup;
  if (cgroup.error().code == ErrorCode::kPermissionDenied) {
    warn_once(cgroup.error().message);
  } else {
    spdlog::warn("exec: job {} runs without its memory limit of {} MiB: {}", spec.key,
                 spec.memory_limit_mib, cgroup.error().message);
  }
  return std::string();
}

Result<std::string> ProcessExecutor::make_devices_cgroup(const LaunchSpec& spec) {
  if (!spec.gpu_device_minors) return std::string();
  if (!devices_root_ && !unified_root_) {
    if (!warned_no_devices_cgroup_.exchange(true))
      spdlog::warn("no {} is mounted: a job's GPU device nodes are not confined to its own GPUs",
                   config_.device_isolation == "cgroup-v1" ? "cgroup v1 devices controller"
                   : config_.device_isolation == "bpf"     ? "cgroup v2 hierarchy"
                                                           : "cgroup v1 devices controller nor "
                                                             "cgroup v2 hierarchy");
    return std::string();
  }
  GpuDeviceAccess access{*spec.gpu_device_minors, spec.gpu_caps_major, spec.gpu_caps_minors};
  auto cgroup =
      devices_root_
          ? create_gpu_devices_cgroup(*devices_root_, config_.cgroup_parent, spec.key, access)
          : create_gpu_devices_bpf_cgroup(*unified_root_, config_.cgroup_parent, spec.key, access);
  if (cgroup.ok()) return *cgroup;
  if (cgroup.error().code == ErrorCode::kPermissionDenied) {
    // An executor that may not write cgroups runs jobs as its own user, who may open every
    // device anyway: nothing to confine them from. A host that refuses BPF device programs to
    // root (no cgroup BPF in its kernel) cannot confine them either: warned once here, and the
    // doctor's cgroups check says so.
    if (!warned_no_devices_cgroup_.exchange(true))
      spdlog::warn("GPU device nodes are not confined to each job's GPUs: {}",
                   cgroup.error().message);
    return std::string();
  }
  // Running the job unconfined would let it open every GPU of the node: it does not start.
  return Error{cgroup.error().code,
               "cannot confine the job to its GPU devices: " + cgroup.error().message};
}

std::string ProcessExecutor::devices_cgroup_of(const std::string& key) const {
  const auto& root = devices_root_ ? devices_root_ : unified_root_;
  if (!root) return "";
  return *root + "/" + config_.cgroup_parent + "/" + cgroup_name_for_key(key);
}

Status ProcessExecutor::watch(const ProcessRef& ref) {
  int fd = pidfd_open(ref.shim_pid);
  if (fd < 0 && errno == ESRCH) return not_found("the shim of job " + ref.key + " is gone");
  if (fd < 0)
    return internal(errno_message("cannot watch the shim of job " + ref.key + " (pid " +
                                  std::to_string(ref.shim_pid) + ")"));
  // The pidfd pins the process: if its start time matches now, it is the shim we started.
  auto st = read_proc_stat(ref.shim_pid);
  if (!st.ok() || st->start_ticks != ref.shim_start_ticks) {
    ::close(fd);
    return not_found("the shim of job " + ref.key + " is gone");
  }
  std::string key = ref.key;
  watcher_->watch(fd, [this, key] { on_shim_exit(key); });
  return {};
}

Status ProcessExecutor::adopt(const ProcessRef& ref) {
  if (ref.key.empty() || ref.attempt_dir.empty() || ref.shim_pid <= 0) {
    return invalid("adopt: the process ref needs a key, an attempt_dir and a shim_pid");
  }
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(ref.key);
    if (it != entries_.end()) {
      if (it->second.shim_pid == ref.shim_pid) return {};
      return Error{ErrorCode::kConflict, "job " + ref.key + " is already watched with shim pid " +
                                             std::to_string(it->second.shim_pid)};
    }
    entries_[ref.key] = ref;
  }
  Status watching = watch(ref);
  if (watching.ok()) return {};
  if (watching.error().code != ErrorCode::kNotFound) {
    std::lock_guard lock(mu_);
    entries_.erase(ref.key);
    return watching.error();
  }
  // The shim ended while nobody watched: report what it recorded, on the monitor thread.
  watcher_->post([this, ref] { report_unwatched(ref); });
  return {};
}

void ProcessExecutor::on_shim_exit(const std::string& key) {
  auto ref = find(key);
  if (!ref.ok()) return;
  int status = 0;
  ::waitpid(ref->shim_pid, &status, WNOHANG);  // reaps it when it is our child; ECHILD otherwise
  auto record = read_exit_record(ref->attempt_dir);
  if (record.ok()) return finish(*ref, *record);
  std::string message = "the shim exited without recording an exit status";
  if (record.error().code != ErrorCode::kNotFound) message += " (" + record.error().message + ")";
  kill_orphaned_group(*ref);
  finish(*ref, unrecorded_end(*ref, std::move(message)));
}

void ProcessExecutor::report_unwatched(const ProcessRef& ref) {
  auto record = read_exit_record(ref.attempt_dir);
  if (record.ok()) return finish(ref, *record);
  std::string message = "process vanished while the agent was down";
  if (record.error().code != ErrorCode::kNotFound) message += " (" + record.error().message + ")";
  finish(ref, unrecorded_end(ref, std::move(message)));
}

// The end of a job whose shim is gone without an exit record. If the shim never claimed the
// attempt, its command never ran: the executor claims the attempt as abandoned, so that it
// never will, and reports it never started. Otherwise (or when the shim was of a kind that does
// not claim) the job is lost.
ExitInfo ProcessExecutor::unrecorded_end(const ProcessRef& ref, std::string message) {
  ExitInfo info;
  info.lost = true;
  info.exit_code = -1;
  info.message = std::move(message);
  auto launch = read_launch_file(ref.attempt_dir);
  if (!launch || !launch->claims) return info;
  Claim abandon;
  abandon.abandoned = true;
  auto won = try_claim(ref.attempt_dir, abandon);
  bool never_started = won.ok() && *won;
  if (won.ok() && !*won) {
    auto claim = read_claim(ref.attempt_dir);
    never_started = claim.ok() && claim->abandoned;
  }
  if (never_started) {
    info.never_started = true;
    info.message = "the shim ended before it started the command, which never ran";
  } else if (!won.ok()) {
    info.message += " (" + won.error().message + ")";
  }
  return info;
}

Result<RecoveredStart> ProcessExecutor::recover_start(const std::string& key,
                                                      const std::string& attempt_dir) {
  if (key.empty() || attempt_dir.empty())
    return invalid("recover_start: needs the replica's key and attempt_dir");
  std::error_code ec;
  std::string dir = std::filesystem::absolute(attempt_dir, ec).lexically_normal().string();
  if (ec) return invalid("attempt_dir: cannot resolve " + attempt_dir + ": " + ec.message());
  // A start cut short before it made the directory: claiming it there is what makes sure that
  // a late shim never runs the command.
  GPUCLOUD_TRY(make_dirs(dir, 0700));
  // Without a whole launch.json no shim was spawned (it is written first); with one from an
  // executor before claims, the shim never claims and whether it ran cannot be told.
  auto launch = read_launch_file(dir);
  std::string cgroup = launch ? launch->cgroup : "";
  if (launch && !launch->claims) {
    ProcessRef unknown{key, 0, 0, dir, cgroup};
    kill_orphaned_group(unknown);
    return Error{ErrorCode::kConflict, "job " + key +
                                           " was started by an older executor whose "
                                           "shim records no claim; whether it ran is unknown"};
  }
  Claim abandon;
  abandon.abandoned = true;
  auto won = try_claim(dir, abandon);
  if (!won.ok()) return won.error();
  RecoveredStart out;
  if (!*won) {
    auto claim = read_claim(dir);
    if (!claim.ok()) return claim.error();
    out.never_started = claim->abandoned;
    if (!claim->abandoned) {
      out.ref.key = key;
      out.ref.attempt_dir = dir;
      out.ref.cgroup = cgroup;
      out.ref.shim_pid = claim->shim_pid;
      out.ref.shim_start_ticks = claim->shim_start_ticks;
      GPUCLOUD_TRY(adopt(out.ref));
      return out;
    }
  } else {
    out.never_started = true;
  }
  if (!cgroup.empty()) remove_cgroup(cgroup);
  remove_cgroup(devices_cgroup_of(key));
  return out;
}

void ProcessExecutor::finish(const ProcessRef& ref, ExitInfo info) {
  info.key = ref.key;
  if (!ref.cgroup.empty()) {
    int64_t kills = cgroup_oom_kills(ref.cgroup);
    if (kills > 0) {
      auto limit = cgroup_memory_limit_bytes(ref.cgroup);
      std::string limit_text =
          limit ? " of " + std::to_string(*limit / (1024 * 1024)) + " MiB" : "";
      std::string oom = "the kernel OOM killer ended " + std::to_string(kills) +
                        " process(es) of the job at its memory limit" + limit_text +
                        "; ask for more memory";
      info.message = info.signal == SIGKILL ? "killed: " + oom : info.message + "; " + oom;
    }
    remove_cgroup_later(ref.cgroup, kCgroupRemoveTries);
  }
  if (std::string devices = devices_cgroup_of(ref.key); !devices.empty())
    remove_cgroup_later(devices, kCgroupRemoveTries);
  std::function<void(const ExitInfo&)> callback;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(ref.key);
    if (it == entries_.end() || it->second.shim_pid != ref.shim_pid) return;  // already reported
    entries_.erase(it);
    callback = callback_;
  }
  if (callback) callback(info);
}

void ProcessExecutor::remove_cgroup_later(const std::string& cgroup, int tries_left) {
  if (remove_cgroup(cgroup)) return;
  if (tries_left <= 0) {
    spdlog::warn("exec: cannot remove cgroup {}: it still holds processes", cgroup);
    return;
  }
  watcher_->post_after(kCgroupRetryDelay,
                       [this, cgroup, tries_left] { remove_cgroup_later(cgroup, tries_left - 1); });
}

Result<ProcessRef> ProcessExecutor::find(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.shim_pid == 0)
    return not_found("no running job " + key + " on this node");
  return it->second;
}

Status ProcessExecutor::signal(const std::string& key, int signo) {
  auto ref = find(key);
  if (!ref.ok()) return ref.error();
  auto pgid = job_pgid_of(*ref);
  if (!pgid.ok()) return pgid.error();
  if (::kill(-*pgid, signo) != 0) {
    if (errno == ESRCH) return Error{ErrorCode::kConflict, "job " + key + " has already ended"};
    return internal(
        errno_message("cannot send signal " + std::to_string(signo) + " to job " + key));
  }
  return {};
}

Status ProcessExecutor::stop(const std::string& key, int64_t grace_ms) {
  auto ref = find(key);
  if (!ref.ok()) return ref.error();
  Status sent = signal(key, grace_ms > 0 ? SIGTERM : SIGKILL);
  if (!sent.ok()) return sent.error().code == ErrorCode::kConflict ? Status{} : sent;
  if (grace_ms <= 0) {
    escalate(key, ref->shim_pid);
    return {};
  }
  int shim_pid = ref->shim_pid;
  watcher_->post_after(std::chrono::milliseconds(grace_ms),
                       [this, key, shim_pid] { escalate(key, shim_pid); });
  return {};
}

void ProcessExecutor::escalate(const std::string& key, int shim_pid) {
  auto ref = find(key);
  if (!ref.ok() || ref->shim_pid != shim_pid) return;  // ended, maybe already restarted
  auto pgid = job_pgid_of(*ref);
  if (!pgid.ok()) return;
  ::kill(-*pgid, SIGKILL);
  if (!ref->cgroup.empty()) {
    for (int pid : cgroup_pids(ref->cgroup)) ::kill(pid, SIGKILL);
  }
}

Result<ProcessStats> ProcessExecutor::stats(const std::string& key) {
  auto ref = find(key);
  if (!ref.ok()) return ref.error();
  auto pgid = job_pgid_of(*ref);
  if (!pgid.ok()) return pgid.error();
  GroupUsage usage = process_group_usage(*pgid);
  ProcessStats stats;
  stats.cpu_seconds = usage.cpu_seconds;
  int64_t bytes = usage.rss_bytes;
  if (!ref->cgroup.empty()) {
    auto charged = cgroup_memory_bytes(ref->cgroup);
    if (charged.ok()) bytes = *charged;
  }
  stats.memory_rss_mib = bytes / (1024 * 1024);
  return stats;
}

Result<std::unique_ptr<Executor>> create_process_executor(const ProcessExecutorConfig& config) {
  auto executor = ProcessExecutor::create(config);
  if (!executor.ok()) return executor.error();
  return std::unique_ptr<Executor>(std::move(*executor));
}

}  // namespace gpucloud::exec
