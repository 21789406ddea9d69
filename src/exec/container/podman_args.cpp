#include "exec/container/podman_args.h"

#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace gpucloud::exec {
namespace {

// conmon, the parent of the container's init, runs with at most this many processes (podman
// 4.3 as root): runc fails in setrlimit ("error setting rlimit type 6") above it.
constexpr rlim_t kConmonMaxProcesses = 32768;

// "soft:hard" for --ulimit: soft at most `soft_cap`, both at most `hard_cap` and within the
// executor's hard limit, which podman's defaults exceed (runc then fails in setrlimit).
std::string ulimit_value(int resource, rlim_t soft_cap, rlim_t hard_cap) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0) return "1024:1024";
  if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max > hard_cap) limit.rlim_max = hard_cap;
  rlim_t soft = limit.rlim_cur;
  if (soft == RLIM_INFINITY || soft > soft_cap) soft = soft_cap;
  if (soft > limit.rlim_max) soft = limit.rlim_max;
  auto text = [](rlim_t v) { return v == RLIM_INFINITY ? std::string("-1") : std::to_string(v); };
  return text(soft) + ":" + text(limit.rlim_max);
}

std::string mount_arg(const std::string& type, const std::string& source, const std::string& target,
                      bool read_only) {
  return "type=" + type + ",source=" + source + ",destination=" + target +
         (read_only ? ",ro=true" : "");
}

}  // namespace

std::string container_name_for(const std::string& key) {
  std::string name = "gpucloud-";
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    name += ok ? c : '-';
  }
  return name;
}

std::vector<std::string> podman_ulimit_args() {
  return {"--ulimit", "nofile=" + ulimit_value(RLIMIT_NOFILE, 1024, RLIM_INFINITY), "--ulimit",
          "nproc=" + ulimit_value(RLIMIT_NPROC, kConmonMaxProcesses, kConmonMaxProcesses)};
}

std::vector<std::string> podman_run_args(const ContainerRuntime& runtime, const LaunchSpec& spec,
                                         const std::string& attempt_dir,
                                         const std::string& env_file) {
  const ContainerLaunch& c = *spec.container;
  int64_t uid = spec.uid >= 0 ? spec.uid : static_cast<int64_t>(::getuid());
  int64_t gid = spec.uid >= 0 ? spec.gid : static_cast<int64_t>(::getgid());
  std::vector<std::string> a = {runtime.podman,
                                "run",
                                "--rm",
                                "--name",
                                container_name_for(spec.key),
                                "--label",
                                "gpucloud.key=" + spec.key,
                                "--runtime",
                                runtime.runtime,
                                "--log-driver",
                                "none",
                                "--network",
                                "host",
                                "--pull",
                                c.pull,
                                "--user",
                                std::to_string(uid) + ":" + std::to_string(gid),
                                "--cap-drop",
                                "all",
                                "--security-opt",
                                "no-new-privileges",
                                "--env-file",
                                env_file};
  for (auto& arg : podman_ulimit_args()) a.push_back(std::move(arg));
  // An init as PID 1 passes SIGTERM on: the command is not PID 1, which ignores signals it
  // has no handler for.
  if (!runtime.init.empty()) a.insert(a.end(), {"--init", "--init-path", runtime.init});
  if (!c.auth_file.empty()) a.insert(a.end(), {"--authfile", c.auth_file});
  if (!spec.cpus.empty()) {
    std::string list;
    for (int cpu : spec.cpus) list += (list.empty() ? "" : ",") + std::to_string(cpu);
    a.insert(a.end(), {"--cpuset-cpus", list});
  }
  if (spec.memory_limit_mib > 0)
    a.insert(a.end(), {"--memory", std::to_string(spec.memory_limit_mib) + "m"});
  if (c.shm_size_mib > 0) a.insert(a.end(), {"--shm-size", std::to_string(c.shm_size_mib) + "m"});
  // The attempt dir read-only (the interruption notice appears in it), the job's own dir inside
  // it writable, and the shared paths (checkpoints): all at the same paths as on the host.
  a.insert(a.end(), {"--mount", mount_arg("bind", attempt_dir, attempt_dir, true)});
  std::string job_dir = job_dir_of(attempt_dir);
  a.insert(a.end(), {"--mount", mount_arg("bind", job_dir, job_dir, false)});
  for (const auto& path : c.shared_paths)
    a.insert(a.end(), {"--mount", mount_arg("bind", path, path, false)});
  for (const auto& m : c.mounts)
    a.insert(a.end(), {"--mount", mount_arg(m.source[0] == '/' ? "bind" : "volume", m.source,
                                            m.target, m.read_only)});
  for (const auto& device : c.devices) a.insert(a.end(), {"--device", device});
  if (!spec.workdir.empty()) a.insert(a.end(), {"--workdir", spec.workdir});
  if (!c.entrypoint.empty())
    a.insert(a.end(), {"--entrypoint", nlohmann::json(c.entrypoint).dump()});
  a.push_back(c.image);
  a.insert(a.end(), spec.argv.begin(), spec.argv.end());
  return a;
}

}  // namespace gpucloud::exec
