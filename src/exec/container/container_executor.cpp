#include "exec/container/container_executor.h"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>

#include "exec/container/container_stats.h"
#include "exec/container/podman_args.h"
#include "exec/process/files.h"
#include "exec/process/launch_file.h"

namespace gpucloud::exec {

ContainerExecutor::ContainerExecutor(std::unique_ptr<Executor> processes, ContainerRuntime runtime)
    : runtime_(std::move(runtime)), processes_(std::move(processes)) {}

void ContainerExecutor::set_exit_callback(std::function<void(const ExitInfo&)> callback) {
  processes_->set_exit_callback([this, callback = std::move(callback)](const ExitInfo& info) {
    {
      std::lock_guard lock(mu_);
      containers_.erase(info.key);
    }
    callback(info);
  });
}

void ContainerExecutor::track_if_container(const ProcessRef& ref) {
  auto text = read_file(ref.attempt_dir + "/" + kLaunchFile);
  if (!text.ok()) return;
  auto launch = launch_file_from_json(*text);
  if (!launch.ok() || launch->container_name.empty()) return;
  std::lock_guard lock(mu_);
  containers_[ref.key].name = launch->container_name;
}

Result<ProcessRef> ContainerExecutor::start(const LaunchSpec& spec) {
  if (!spec.container) return processes_->start(spec);
  if (!runtime_.usable())
    return Error{ErrorCode::kUnavailable, "this node cannot run container jobs (image " +
                                              spec.container->image + "): " + runtime_.reason};
  std::error_code ec;
  std::string attempt_dir =
      std::filesystem::absolute(spec.attempt_dir, ec).lexically_normal().string();
  if (ec) return invalid("attempt_dir: cannot resolve " + spec.attempt_dir + ": " + ec.message());
  LaunchSpec host = spec;
  host.argv = podman_run_args(runtime_, spec, attempt_dir, attempt_dir + "/" + kContainerEnvFile);
  host.container->env_file = spec.env;
  // podman's own environment: nothing of the job's, which could steer podman itself.
  host.env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}};
  if (const passwd* pw = ::getpwuid(::getuid())) host.env["HOME"] = pw->pw_dir;
  host.workdir = "/";
  host.cpus.clear();          // --cpuset-cpus
  host.memory_limit_mib = 0;  // --memory
  host.container_name = container_name_for(spec.key);
  host.container_image = spec.container->image;
  host.podman = runtime_.podman;
  {
    std::lock_guard lock(mu_);  // before start: its exit callback may come at once
    containers_[spec.key].name = host.container_name;
  }
  auto started = processes_->start(host);
  if (!started.ok()) {
    std::lock_guard lock(mu_);
    containers_.erase(spec.key);
  }
  return started;
}

Status ContainerExecutor::adopt(const ProcessRef& ref) {
  track_if_container(ref);
  return processes_->adopt(ref);
}

Result<RecoveredStart> ContainerExecutor::recover_start(const std::string& key,
                                                        const std::string& attempt_dir) {
  ProcessRef ref;
  ref.key = key;
  ref.attempt_dir = attempt_dir;
  track_if_container(ref);
  auto recovered = processes_->recover_start(key, attempt_dir);
  if (!recovered.ok() || recovered->never_started) {
    std::lock_guard lock(mu_);
    containers_.erase(key);
  }
  return recovered;
}

Status ContainerExecutor::signal(const std::string& key, int signo) {
  return processes_->signal(key, signo);
}

Status ContainerExecutor::stop(const std::string& key, int64_t grace_ms) {
  return processes_->stop(key, grace_ms);
}

Result<ProcessStats> ContainerExecutor::stats(const std::string& key) {
  std::string name;
  int pid = 0;
  {
    std::lock_guard lock(mu_);
    auto it = containers_.find(key);
    if (it == containers_.end()) return processes_->stats(key);
    name = it->second.name;
    pid = it->second.pid;
    auto now = std::chrono::steady_clock::now();
    if (pid == 0) {
      if (now < it->second.next_lookup) return processes_->stats(key);
      it->second.next_lookup = now + std::chrono::seconds(5);
    }
  }
  if (pid > 0) {
    if (auto stats = cgroup_stats_of(pid); stats.ok()) return stats;
  }
  // Outside the lock: podman takes a while. Not running yet, or its pid is gone: look again.
  int found = container_pid(runtime_.podman, name);
  {
    std::lock_guard lock(mu_);
    if (auto it = containers_.find(key); it != containers_.end()) it->second.pid = found;
  }
  if (found > 0) {
    if (auto stats = cgroup_stats_of(found); stats.ok()) return stats;
  }
  return processes_->stats(key);
}

}  // namespace gpucloud::exec
