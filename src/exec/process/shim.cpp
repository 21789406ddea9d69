// The shim: `gpucloud shim DIR`. It is the job's parent for the job's whole life, so the
// job's exit status is recorded in DIR/exit.json even while no agent is running.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "exec/executor.h"
#include "exec/process/claim.h"
#include "exec/process/crash_point.h"
#include "exec/process/files.h"
#include "exec/process/job_child.h"
#include "exec/process/launch_file.h"
#include "exec/process/proc.h"
#include "exec/process/shim_container.h"

namespace gpucloud::exec {
namespace {

volatile sig_atomic_t g_job_pgid = 0;

// SIGTERM/SIGINT sent to the shim itself are passed on to the job's process group, so the
// shim is never the thing that dies first.
void forward_signal(int sig) {
  if (g_job_pgid > 0) ::kill(-g_job_pgid, sig);
}

void setup_signals() {
  for (int sig : {SIGHUP, SIGPIPE, SIGTTIN, SIGTTOU, SIGTSTP}) ::signal(sig, SIG_IGN);
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGQUIT}) ::sigaction(sig, &forward, nullptr);
}

// fd 0 becomes /dev/null and fd 2 DIR/shim.log; fd 1 stays open until signal_ready() (the
// executor waits for it to close: that is how start() knows the job exists).
void setup_fds(const std::string& dir) {
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  std::string log = dir + "/" + kShimLog;
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  ::dup2(log_fd >= 0 ? log_fd : null_fd, 2);
  ::close_range(3, ~0U, 0);  // nothing of the agent's leaks into the job
}

void signal_ready() {
  int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null_fd >= 0) {
    ::dup2(null_fd, 1);
    ::close(null_fd);
  }
}

int64_t now_unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int record_exit(const std::string& dir, const ExitInfo& info) {
  Status written =
      // Atomic but not fsync'ed, like the agent's own state: both must survive a crash of the
      // agent, not of the machine, which ends the job too (it is then reported lost).
      write_file_atomic(dir + "/" + kExitFile, exit_record_to_json(info, now_unix_ms()), 0600,
                        false);
  if (!written.ok()) {
    std::fprintf(stderr, "gpucloud shim: %s\n", written.error().message.c_str());
    return 1;
  }
  return 0;
}

int record_failed_start(const std::string& dir, int code, const std::string& message) {
  ExitInfo info;
  info.exit_code = code;
  info.failed_to_start = true;
  info.message = message;
  std::fprintf(stderr, "gpucloud shim: the job failed to start: %s\n", message.c_str());
  int rc = record_exit(dir, info);
  signal_ready();
  return rc;
}

ExitInfo exit_from_status(int status) {
  ExitInfo info;
  if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
    info.exit_code = 128 + info.signal;
    const char* name = ::sigabbrev_np(info.signal);
    info.message = std::string("killed by ") +
                   (name ? std::string("SIG") + name : "signal " + std::to_string(info.signal));
  } else {
    info.exit_code = WEXITSTATUS(status);
    info.message = "exited with code " + std::to_string(info.exit_code);
  }
  return info;
}

// Reads the child's "<code> <message>" report; empty when the pipe closed on a successful exec.
std::string read_start_error(int fd) {
  std::string report;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    report.append(buf, static_cast<size_t>(n));
  }
  return report;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

// Records the pid, tells the agent the job is running, waits for its end and records it.
int supervise(const std::string& dir, pid_t pid, const LaunchFile& launch) {
  g_job_pgid = pid;
  // In place: the agent reads it only after signal_ready() below, or long after (re-adoption).
  Status pid_written = write_file_in_place(dir + "/" + kPidFile, std::to_string(pid) + "\n");
  if (!pid_written.ok())
    std::fprintf(stderr, "gpucloud shim: %s\n", pid_written.error().message.c_str());
  signal_ready();

  int status = wait_for(pid);
  g_job_pgid = 0;
  if (status < 0) {
    ExitInfo info;
    info.exit_code = 255;
    info.message = errno_message("the shim could not wait for the job");
    return record_exit(dir, info);
  }
  ExitInfo info = exit_from_status(status);
  if (!launch.container_name.empty()) finish_container(launch, dir, info);
  return record_exit(dir, info);
}

// Claims the attempt for this shim before its command runs (claim.h): the command then runs at
// most once, and an agent recovering an unfinished start finds this shim by pid and start time.
// Returns -1 when this shim may run the command; otherwise the shim's exit code, after saying
// why: an agent gave the attempt up first (or another shim claimed it), or the claim could not
// be written (recorded as a failed start; the command did not run).
int claim_attempt(const std::string& dir) {
  auto self = read_proc_stat(::getpid());
  if (!self.ok()) return record_failed_start(dir, 1, self.error().message);
  Claim claim;
  claim.shim_pid = ::getpid();
  claim.shim_start_ticks = self->start_ticks;
  auto won = try_claim(dir, claim);
  if (!won.ok()) return record_failed_start(dir, 1, won.error().message);
  if (!*won) {
    std::fprintf(stderr,
                 "gpucloud shim: %s/%s exists: the attempt was given up or claimed before this "
                 "shim could start it; not running its command\n",
                 dir.c_str(), kClaimFile);
    signal_ready();
    return 3;
  }
  return -1;
}

}  // namespace

int run_shim(const std::string& attempt_dir) {
  std::error_code ec;
  std::string dir = std::filesystem::absolute(attempt_dir, ec).lexically_normal().string();
  if (ec) dir = attempt_dir;
  ::setsid();  // not in the agent's session or process group (already so when spawned with SETSID)
  setup_fds(dir);
  setup_signals();
  if (::chdir("/") != 0) std::fprintf(stderr, "gpucloud shim: cannot chdir to /\n");

  auto text = read_file(dir + "/" + kLaunchFile);
  if (!text.ok()) {
    record_failed_start(dir, 1, text.error().message);
    return 2;
  }
  auto launch = launch_file_from_json(*text);
  if (!launch.ok()) {
    record_failed_start(dir, 1, launch.error().message);
    return 2;
  }
  PreparedJob job = prepare_job(*launch, dir);

  crash_point("shim.before_claim");
  if (int rc = claim_attempt(dir); rc >= 0) return rc;
  crash_point("shim.claimed");

  if (!launch->container_name.empty()) {
    if (auto problem = write_container_env(*launch, dir))
      return record_failed_start(dir, 1, *problem);
  }
  limit_open_files_for_job();  // the job inherits it, on either path below
  pid_t pid = 0;
  if (job.cgroup_procs.empty() && job.devices_cgroup_procs.empty() && job.uid < 0) {
    // The common case: posix_spawn, which does not copy the shim's address space. A job with
    // a memory cgroup takes the fork path below, where the child joins the cgroup before exec,
    // so not one page of it is charged elsewhere; so does a job with a user to switch to.
    auto spawned = spawn_job(job);
    if (auto* failed = std::get_if<StartFailure>(&spawned))
      return record_failed_start(dir, failed->code, failed->message);
    pid = std::get<pid_t>(spawned);
    return supervise(dir, pid, *launch);
  }

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    record_failed_start(dir, 1, errno_message("the shim cannot create a pipe"));
    return 2;
  }
  pid = ::fork();
  if (pid < 0) {
    record_failed_start(dir, 1, errno_message("the shim cannot fork"));
    return 2;
  }
  if (pid == 0) {
    ::close(pipe_fds[0]);
    exec_job(job, pipe_fds[1]);
  }
  ::close(pipe_fds[1]);
  std::string report = read_start_error(pipe_fds[0]);
  ::close(pipe_fds[0]);

  if (!report.empty()) {
    wait_for(pid);
    size_t space = report.find(' ');
    int code = std::atoi(report.substr(0, space).c_str());
    std::string message = space == std::string::npos ? report : report.substr(space + 1);
    return record_failed_start(dir, code, message);
  }

  return supervise(dir, pid, *launch);
}

}  // namespace gpucloud::exec
