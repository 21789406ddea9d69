#include "exec/process/job_child.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <spawn.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <sstream>

#include "exec/process/spawn_attr.h"

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

// Pins the calling process to cpus; on failure, says why.
std::optional<std::string> pin_to_cpus(const std::vector<int>& cpus) {
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
  int rc = ::sched_setaffinity(0, size, set);
  int saved = errno;
  CPU_FREE(set);
  if (rc == 0) return std::nullopt;
  errno = saved;
  if (saved == EINVAL)
    return "cannot pin the job to cpus " + list + ": none of them is online here (" +
           std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) + " CPUs online)";
  return reason("cannot pin the job to cpus " + list);
}

void set_affinity(const std::vector<int>& cpus, int error_fd) {
  if (auto problem = pin_to_cpus(cpus)) fail(error_fd, 1, *problem);
}

// What is wrong with a workdir that could not be entered, from the errno of the attempt.
std::string workdir_message(const std::string& workdir, int err) {
  switch (err) {
    case ENOENT:
      return "workdir " + workdir + " does not exist";
    case ENOTDIR:
      return "workdir " + workdir + " is not a directory";
    case EACCES:
      return "workdir " + workdir + " is not accessible (permission denied)";
    default:
      errno = err;
      return reason("cannot enter workdir " + workdir);
  }
}

// Why the job's user cannot enter its workdir, with what to do about it.
std::string workdir_not_accessible(const PreparedJob& job) {
  return "workdir " + job.workdir + " is not accessible to the job's user (uid " +
         std::to_string(job.uid) +
         ", permission denied); make it and its parents reachable by that user (chmod o+x, or "
         "give the tenant a uid that owns it) or leave workdir unset";
}

void enter_workdir(const PreparedJob& job, int error_fd) {
  if (::chdir(job.workdir.c_str()) == 0) return;
  if (errno == EACCES && job.uid > 0) fail(error_fd, 1, workdir_not_accessible(job));
  fail(error_fd, 1, workdir_message(job.workdir, errno));
}

// Opens the directory `relative` below dir_fd with O_PATH, one component at a time, following no
// symbolic link (not even one in the last component); with `create`, a missing component is
// made (0755) first. Returns the fd, or -1 with errno set (ELOOP when a component is a symbolic
// link) and *failed_at the path up to the component that failed.
int open_dir_nofollow(int dir_fd, const std::string& relative, bool create,
                      std::string* failed_at) {
  int fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return -1;
  size_t start = 0;
  while (start <= relative.size()) {
    size_t end = relative.find('/', start);
    if (end == std::string::npos) end = relative.size();
    std::string name = relative.substr(start, end - start);
    start = end + 1;
    if (name.empty() || name == ".") continue;
    *failed_at = relative.substr(0, end);
    int err = 0;
    int next = -1;
    if (name == "..") {
      err = EINVAL;  // prepare_job keeps no path with "..": never climb out
    } else if (create && ::mkdirat(fd, name.c_str(), 0755) != 0 && errno != EEXIST) {
      err = errno;
    } else {
      next = ::openat(fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      err = errno;
      struct stat st {};
      if (next < 0 && (err == ENOTDIR || err == ELOOP) &&
          ::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        err = ELOOP;
    }
    ::close(fd);
    if (next < 0) {
      errno = err;
      return -1;
    }
    fd = next;
  }
  failed_at->clear();
  return fd;
}

// Opens each of job.tmp_keep (O_PATH, following no symbolic link) as the job's user would: its
// uid, gid and only that group as the filesystem identity, so that a path the user cannot reach
// (a parent it may not search) is not made visible to the job by root. Root's identity again
// afterwards. A workdir that cannot be opened (other than missing: that fails later, clearly)
// fails the start; another kept path is left out, said in the output log.
std::vector<std::pair<std::string, int>> open_kept_paths(const PreparedJob& job, int error_fd) {
  const bool switch_user = job.uid > 0;
  uid_t saved_fsuid = 0;
  gid_t saved_fsgid = 0;
  if (switch_user) {
    auto uid = static_cast<uid_t>(job.uid);
    auto gid = static_cast<gid_t>(job.gid);
    // The job gets only its gid as group anyway (drop_privileges); root's groups must not
    // grant it anything here.
    if (::setgroups(1, &gid) != 0) fail(error_fd, 1, reason("cannot set the job's groups"));
    saved_fsgid = static_cast<gid_t>(::setfsgid(gid));
    saved_fsuid = static_cast<uid_t>(::setfsuid(uid));
    if (static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != uid ||
        static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != gid)
      fail(error_fd, 1,
           "cannot take the job's uid " + std::to_string(uid) + " to open its paths under /tmp");
  }
  std::vector<std::pair<std::string, int>> keep;
  std::vector<std::pair<std::string, int>> refused;  // path, errno
  int root = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  for (const auto& path : job.tmp_keep) {
    std::string failed_at;
    int fd = root < 0 ? -1 : open_dir_nofollow(root, path, false, &failed_at);
    if (fd >= 0) {
      keep.emplace_back(path, fd);
    } else if (errno != ENOENT) {  // one that is missing fails later, clearly
      refused.emplace_back(path, errno);
    }
  }
  if (root >= 0) ::close(root);
  if (switch_user) {
    ::setfsuid(saved_fsuid);
    ::setfsgid(saved_fsgid);
  }
  for (const auto& [path, err] : refused) {
    std::string message;
    if (err == EACCES && path == job.workdir) {
      message = workdir_not_accessible(job);
    } else if (err == ELOOP) {
      message = (path == job.workdir ? "workdir " : "") + path +
                " has a symbolic link in its path; a job with a user sees only real directories "
                "of the host's /tmp in its own: give the real path";
    } else if (path == job.workdir) {
      message = workdir_message(path, err);
    } else {
      errno = err;
      message = reason("cannot open " + path + " as the job's user");
    }
    if (path == job.workdir) fail(error_fd, 1, message);
    write_all(2, "gpucloud: " + message + "; it is not visible in the job's /tmp\n");
  }
  return keep;
}

// Gives the job its own /tmp: a private mount namespace (mounts made on the host still
// propagate in) with the job's tmp dir bound on /tmp. The job's own paths that lay under the
// host's /tmp (its job dir, its workdir) are bound back at the same place inside it, and
// nothing else of the host's /tmp is visible. False, with errno set, when the namespace or a
// mount cannot be made (the namespace then shows the host's /tmp as before). Fails the start
// when a kept path or a mount point is refused (see open_kept_paths, open_dir_nofollow): the
// job's tmp dir is the tenant's, so a symbolic link in it is never followed.
bool mount_private_tmp(const PreparedJob& job, int error_fd) {
  if (::unshare(CLONE_NEWNS) != 0 ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
    return false;
  // The paths to keep, opened in the new namespace before /tmp is covered: bound back from
  // /proc/self/fd/N.
  std::vector<std::pair<std::string, int>> keep = open_kept_paths(job, error_fd);
  int tmp_fd = -1;
  auto close_all = [&] {
    int saved = errno;
    for (auto& [path, fd] : keep) ::close(fd);
    if (tmp_fd >= 0) ::close(tmp_fd);
    errno = saved;
  };
  if (::mount(job.tmp_dir.c_str(), "/tmp", nullptr, MS_BIND, nullptr) != 0) {
    close_all();
    return false;
  }
  tmp_fd = ::open("/tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (tmp_fd < 0) fail(error_fd, 1, reason("cannot open the job's private /tmp"));
  for (auto& [path, fd] : keep) {
    // The mount point: root's directories inside the job's tmp dir, which the tenant's other
    // jobs may reach: made and opened without following any symbolic link.
    std::string failed_at;
    int target = open_dir_nofollow(tmp_fd, path.substr(std::strlen("/tmp/")), true, &failed_at);
    if (target < 0) {
      std::string where = job.tmp_dir + "/" + failed_at;
      if (errno == ELOOP)
        fail(error_fd, 1,
             "cannot make the mount point for " + path + " in the job's private /tmp: " + where +
                 " is a symbolic link, which is not followed; remove it and start the job again");
      fail(error_fd, 1, reason("cannot make the mount point for " + path + " at " + where));
    }
    std::string source = "/proc/self/fd/" + std::to_string(fd);
    std::string dest = "/proc/self/fd/" + std::to_string(target);
    int rc = ::mount(source.c_str(), dest.c_str(), nullptr, MS_BIND | MS_REC, nullptr);
    int saved = errno;
    ::close(target);
    if (rc != 0) {
      ::umount2("/tmp", MNT_DETACH);  // back to the host's /tmp, which has the path
      errno = saved;
      close_all();
      return false;
    }
  }
  close_all();
  return true;
}

// Becomes the job's user for good: no capability can be kept or regained, not even by exec of
// a set-uid binary.
void drop_privileges(const PreparedJob& job, int error_fd) {
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      fail(error_fd, 1, reason("cannot drop capability " + std::to_string(cap)));
    }
  }
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);  // EINVAL before Linux 4.3: none
  auto uid = static_cast<uid_t>(job.uid);
  auto gid = static_cast<gid_t>(job.gid);
  if (gid == 0)  // the executor refuses it too (validate): root's group opens root's files
    fail(error_fd, 1,
         "the job's uid " + std::to_string(uid) +
             " comes with gid 0 (root's group); give the tenant a gid of its own");
  if (::setgroups(1, &gid) != 0) fail(error_fd, 1, reason("cannot set the job's groups"));
  if (::setresgid(gid, gid, gid) != 0)
    fail(error_fd, 1, reason("cannot switch to the job's gid " + std::to_string(gid)));
  if (::setresuid(uid, uid, uid) != 0)
    fail(error_fd, 1, reason("cannot switch to the job's uid " + std::to_string(uid)));
  if (::getuid() != uid || ::geteuid() != uid || ::setuid(0) == 0)
    fail(error_fd, 1, "the job's uid " + std::to_string(uid) + " did not stick");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(error_fd, 1, reason("no_new_privs"));
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
  if (!launch.devices_cgroup.empty())
    job.devices_cgroup_procs = launch.devices_cgroup + "/cgroup.procs";
  job.output_log = attempt_dir + "/" + kOutputLog;
  job.cpus = launch.cpus;
  job.uid = launch.uid;
  job.gid = launch.gid < 0 ? launch.uid : launch.gid;
  if (job.uid >= 0) {
    job.tmp_dir = job_tmp_dir_of(attempt_dir);
    for (const auto& path : {job_dir_of(attempt_dir), launch.workdir}) {
      if (path.rfind("/tmp/", 0) == 0 && path.find("/..") == std::string::npos &&
          std::find(job.tmp_keep.begin(), job.tmp_keep.end(), path) == job.tmp_keep.end())
        job.tmp_keep.push_back(path);
    }
    for (const auto& [name, value] : launch.env) {
      if (name != "TMPDIR") job.env_tmpdir_storage.push_back(name + "=" + value);
    }
    job.env_tmpdir_storage.push_back("TMPDIR=" + job.tmp_dir);
    for (auto& var : job.env_tmpdir_storage) job.envp_tmpdir.push_back(var.data());
    job.envp_tmpdir.push_back(nullptr);
  }
  return job;
}

void limit_open_files_for_job() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur <= kJobOpenFilesSoftLimit) return;
  limit.rlim_cur = kJobOpenFilesSoftLimit;
  ::setrlimit(RLIMIT_NOFILE, &limit);  // lowering the soft limit cannot fail
}

void exec_job(const PreparedJob& job, int error_fd) {
  reset_signals();
  if (::setsid() < 0) fail(error_fd, 1, reason("cannot start a new session"));

  for (const auto& [procs, what] :
       {std::pair{&job.cgroup_procs, "memory"}, std::pair{&job.devices_cgroup_procs, "devices"}}) {
    if (procs->empty()) continue;
    int fd = ::open(procs->c_str(), O_WRONLY | O_CLOEXEC);
    std::string pid = std::to_string(::getpid());
    if (fd < 0 || ::write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) {
      fail(error_fd, 1, reason(std::string("cannot join the job's ") + what + " cgroup " + *procs));
    }
    ::close(fd);
  }
  if (!job.cpus.empty()) set_affinity(job.cpus, error_fd);

  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0) fail(error_fd, 1, reason("cannot open /dev/null"));
  int log_fd = ::open(job.output_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) fail(error_fd, 1, reason("cannot open " + job.output_log));
  if (::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0) {
    fail(error_fd, 1, reason("cannot redirect output to " + job.output_log));
  }

  char* const* envp = job.envp.data();
  if (job.uid >= 0) {
    if (!mount_private_tmp(job, error_fd)) {
      write_all(2, "gpucloud: no private /tmp for this job (" +
                       reason("cannot make its mount namespace") +
                       "): it shares the host's /tmp, where other jobs may see its files; "
                       "TMPDIR is " +
                       job.tmp_dir + ", its own\n");
      envp = job.envp_tmpdir.data();
    }
    if (job.uid != 0) drop_privileges(job, error_fd);
    ::umask(077);
  }

  enter_workdir(job, error_fd);

  const std::string& command = job.argv_storage.at(0);
  int saved = ENOENT;
  std::string tried;
  for (const auto& candidate : job.candidates) {
    ::execve(candidate.c_str(), job.argv.data(), envp);
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

namespace {

StartFailure failure(int code, const std::string& message, const std::string& output_log) {
  int fd = ::open(output_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    write_all(fd, "gpucloud: " + message + "\n");
    ::close(fd);
  }
  return {code, message};
}

std::optional<std::string> workdir_problem(const std::string& workdir) {
  struct stat st {};
  if (::stat(workdir.c_str(), &st) != 0) return workdir_message(workdir, errno);
  if (!S_ISDIR(st.st_mode)) return workdir_message(workdir, ENOTDIR);
  if (::access(workdir.c_str(), X_OK) != 0) return workdir_message(workdir, EACCES);
  return std::nullopt;
}

}  // namespace

std::variant<pid_t, StartFailure> spawn_job(const PreparedJob& job) {
  const std::string& log = job.output_log;
  if (!job.cpus.empty()) {  // the shim pins itself: the job inherits it
    if (auto problem = pin_to_cpus(job.cpus)) return failure(1, *problem, log);
  }
  if (auto problem = workdir_problem(job.workdir)) return failure(1, *problem, log);

  // The command: the first candidate in PATH order that is an executable file (like execvp,
  // one without permission is skipped but remembered for the message).
  const std::string& command = job.argv_storage.at(0);
  std::string found, not_executable;
  for (const auto& name : job.candidates) {
    // Relative paths (./train.sh, or a relative PATH entry) are relative to the workdir, where
    // the job starts; the shim itself runs in /.
    std::string candidate = name.front() == '/' ? name : job.workdir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
    if (::access(candidate.c_str(), X_OK) == 0) {
      found = candidate;
      break;
    }
    if (not_executable.empty()) not_executable = candidate;
  }
  if (found.empty()) {
    if (!not_executable.empty()) {
      std::string where = not_executable == command ? "" : " (" + not_executable + ")";
      return failure(
          126, "command '" + command + "'" + where + " is not executable (permission denied)", log);
    }
    if (job.search_path.empty()) return failure(127, "command '" + command + "' not found", log);
    return failure(127, "command '" + command + "' not found in PATH " + job.search_path, log);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addchdir_np(&actions, job.workdir.c_str());
  posix_spawnattr_t attr;
  init_new_session_spawnattr(attr);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, found.c_str(), &actions, &attr, job.argv.data(), job.envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc == 0) return pid;
  // A file action failed, or something changed since the checks above: say which.
  if (auto problem = workdir_problem(job.workdir)) return failure(1, *problem, log);
  if (int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600); fd < 0) {
    return failure(1, reason("cannot open " + log), log);
  } else {
    ::close(fd);
  }
  if (::access(found.c_str(), F_OK) != 0)
    return failure(
        127, "command '" + command + "' (" + found + ") disappeared before it could start", log);
  std::string where = found == command ? "" : " (" + found + ")";
  if (rc == ENOEXEC)
    return failure(
        126,
        "command '" + command + "'" + where +
            " is not an executable file; add a #! line or run it through its interpreter",
        log);
  if (rc == EACCES)
    return failure(
        126, "command '" + command + "'" + where + " is not executable (permission denied)", log);
  errno = rc;
  return failure(126, reason("cannot execute '" + command + "'" + where), log);
}

}  // namespace gpucloud::exec
