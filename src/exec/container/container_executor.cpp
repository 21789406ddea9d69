#include "exec/container/container_executor.h"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>

#include "exec/container/podman_args.h"
#include "exec/process/launch_file.h"

namespace gpucloud::exec {

ContainerExecutor::ContainerExecutor(std::unique_ptr<Executor> processes, ContainerRuntime runtime)
    : processes_(std::move(processes)), runtime_(std::move(runtime)) {}

void ContainerExecutor::set_exit_callback(std::function<void(const ExitInfo&)> callback) {
  processes_->set_exit_callback(std::move(callback));
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
  return processes_->start(host);
}

Status ContainerExecutor::adopt(const ProcessRef& ref) {
  return processes_->adopt(ref);
}

Result<RecoveredStart> ContainerExecutor::recover_start(const std::string& key,
                                                        const std::string& attempt_dir) {
  return processes_->recover_start(key, attempt_dir);
}

Status ContainerExecutor::signal(const std::string& key, int signo) {
  return processes_->signal(key, signo);
}

Status ContainerExecutor::stop(const std::string& key, int64_t grace_ms) {
  return processes_->stop(key, grace_ms);
}

Result<ProcessStats> ContainerExecutor::stats(const std::string& key) {
  return processes_->stats(key);
}

}  // namespace gpucloud::exec
