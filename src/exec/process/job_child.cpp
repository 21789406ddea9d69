#include "exec/process/job_child.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>

namespace gpucloud::exec {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

void write_all(int fd, const std::string& text) {
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    left -= static_cast<size_t>(n);
  }
}

[[noreturn]] void fail(int error_fd, int code, const std::string& message) {
  write_all(error_fd, std::to_string(code) + " " + message);
  // Leaves the reason in output.log too (or in shim.log when it failed before the redirect).
  write_all(2, "gpucloud: " + message + "\n");
  ::_exit(code);
}

std::string reason(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

void reset_signals() {
  // Ignored signals stay ignored across exec; give the job default dispositions.
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

void set_affinity(const std::vector<int>& cpus, int error_fd) {
  int max_cpu = 0;
  for (int cpu : cpus) max_cpu = std::max(max_cpu, cpu);
  cpu_set_t* set = CPU_ALLOC(max_cpu + 1);
  size_t size = CPU_ALLOC_SIZE(max_cpu + 1);
  CPU_ZERO_S(size, set);
  std::string list;
  for (int cpu : cpus) {
    CPU_SET_S(cpu, size, set);
    list += (list.empty() ? "" : ",") + std::to_string(cpu);
  }
  if (::sched_setaffinity(0, size, set) != 0) {
    if (errno == EINVAL) {
      fail(error_fd, 1,
           "cannot pin the job to cpus " + list + ": none of them is online here (" +
               std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) + " CPUs online)");
    }
    fail(error_fd, 1, reason("cannot pin the job to cpus " + list));
  }
  CPU_FREE(set);
}

void enter_workdir(const std::string& workdir, int error_fd) {
  if (::chdir(workdir.c_str()) == 0) return;
  switch (errno) {
    case ENOENT:
      fail(error_fd, 1, "workdir " + workdir + " does not exist");
    case ENOTDIR:
      fail(error_fd, 1, "workdir " + workdir + " is not a directory");
    case EACCES:
      fail(error_fd, 1, "workdir " + workdir + " is not accessible (permission denied)");
    default:
      fail(error_fd, 1, reason("cannot enter workdir " + workdir));
  }
}

}  // namespace

PreparedJob prepare_job(const LaunchFile& launch, const std::string& attempt_dir) {
  PreparedJob job;
  job.argv_storage = launch.argv;
  for (const auto& [name, value] : launch.env) job.env_storage.push_back(name + "=" + value);
  for (auto& arg : job.argv_storage) job.argv.push_back(arg.data());
  job.argv.push_back(nullptr);
  for (auto& var : job.env_storage) job.envp.push_back(var.data());
  job.envp.push_back(nullptr);

  const std::string& command = launch.argv.at(0);
  if (command.find('/') != std::string::npos) {
    job.candidates.push_back(command);
  } else {
    auto path = launch.env.find("PATH");
    job.search_path =
        path != launch.env.end() && !path->second.empty() ? path->second : kDefaultPath;
    std::istringstream dirs(job.search_path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      job.candidates.push_back((dir.empty() ? "." : dir) + "/" + command);
    }
  }
  job.workdir = launch.workdir;
  if (!launch.cgroup.empty()) job.cgroup_procs = launch.cgroup + "/cgroup.procs";
  job.output_log = attempt_dir + "/" + kOutputLog;
  job.cpus = launch.cpus;
  return job;
}

void exec_job(const PreparedJob& job, int error_fd) {
  reset_signals();
  if (::setsid() < 0) fail(error_fd, 1, reason("cannot start a new session"));

  if (!job.cgroup_procs.empty()) {
    int fd = ::open(job.cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
    std::string pid = std::to_string(::getpid());
    if (fd < 0 || ::write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) {
      fail(error_fd, 1, reason("cannot join the job's memory cgroup " + job.cgroup_procs));
    }
    ::close(fd);
  }
  if (!job.cpus.empty()) set_affinity(job.cpus, error_fd);

  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0) fail(error_fd, 1, reason("cannot open /dev/null"));
  int log_fd = ::open(job.output_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (log_fd < 0) fail(error_fd, 1, reason("cannot open " + job.output_log));
  if (::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0) {
    fail(error_fd, 1, reason("cannot redirect output to " + job.output_log));
  }

  enter_workdir(job.workdir, error_fd);

  const std::string& command = job.argv_storage.at(0);
  int saved = ENOENT;
  std::string tried;
  for (const auto& candidate : job.candidates) {
    ::execve(candidate.c_str(), job.argv.data(), job.envp.data());
    if (errno != ENOENT && errno != ENOTDIR) {
      saved = errno;
      tried = candidate;
      if (errno != EACCES) break;  // like execvp: EACCES goes on searching, the rest stop
    }
  }
  std::string where = tried.empty() || tried == command ? "" : " (" + tried + ")";
  if (saved == ENOENT) {
    if (job.search_path.empty()) fail(error_fd, 127, "command '" + command + "' not found");
    fail(error_fd, 127, "command '" + command + "' not found in PATH " + job.search_path);
  }
  errno = saved;
  if (saved == EACCES) {
    fail(error_fd, 126,
         "command '" + command + "'" + where + " is not executable (permission denied)");
  }
  if (saved == ENOEXEC) {
    fail(error_fd, 126,
         "command '" + command + "'" + where +
             " is not an executable file; add a #! line or run it through its interpreter");
  }
  fail(error_fd, 126, reason("cannot execute '" + command + "'" + where));
}

}  // namespace gpucloud::exec
