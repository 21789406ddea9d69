// The job side of the shim: what runs between fork() and exec of the user's command.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <string>
#include <variant>
#include <vector>

#include "exec/process/launch_file.h"

namespace gpucloud::exec {

/// Everything the forked child needs, prepared before fork() so the child only makes system
/// calls between fork and exec.
struct PreparedJob {
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;              // null-terminated, points into argv_storage
  std::vector<char*> envp;              // null-terminated, points into env_storage
  std::vector<std::string> candidates;  // paths to try for argv[0], in PATH order
  std::string search_path;              // the PATH searched, for messages
  std::string workdir;
  std::string cgroup_procs;          // "<cgroup>/cgroup.procs", "" for none
  std::string devices_cgroup_procs;  // the devices cgroup's cgroup.procs, "" for none
  std::string output_log;
  std::vector<int> cpus;
  // The user to switch to (LaunchFile::uid); -1 = stay the shim's user (no isolation).
  int64_t uid = -1;
  int64_t gid = -1;
  std::vector<std::string> tmp_keep;  // the job's paths under /tmp, kept visible in its own
  std::string tmp_dir;                // bind-mounted on /tmp in a private mount namespace
  std::vector<std::string> env_tmpdir_storage;  // the environment plus TMPDIR=tmp_dir, used
  std::vector<char*> envp_tmpdir;               // when the private /tmp cannot be mounted
};

/// Builds a PreparedJob. The command is looked up in the job's own PATH (falling back to
/// /usr/local/bin:/usr/bin:/bin), never in the shim's.
PreparedJob prepare_job(const LaunchFile& launch, const std::string& attempt_dir);

/// Runs in the forked child: new session and process group, cgroup, CPU affinity, output
/// redirection, workdir, default signal dispositions, then exec with exactly the job's
/// environment. With a user (job.uid >= 0) it first isolates the job: a private mount
/// namespace with job.tmp_dir on /tmp, in which only those of job.tmp_keep that the job's user
/// can reach without a symbolic link are bound back (their mount points made without following
/// any symbolic link in the tenant's tmp dir); where no namespace can be made, TMPDIR=job.tmp_dir
/// instead, said in the output log. Then, unless the uid is 0, an empty capability bounding set and
/// ambient set, the uid/gid with only that gid as group, and no_new_privs; umask 077; the workdir
/// is entered as that user. On failure writes "<exit code> <message>" to error_fd (a close-on-exec
/// pipe, so the parent reads EOF on success) and exits with that code: 127 when the command is not
/// found, 126 when it cannot be executed, 1 for any other setup failure.
[[noreturn]] void exec_job(const PreparedJob& job, int error_fd);

/// The soft limit on open files a job starts with (its hard limit is left as it is, so it may
/// raise it). The same as systemd's default for services: select() and some older libraries
/// fail on file descriptors of 1024 and above, and a job must not inherit the raised soft
/// limit of the server it may run within (`gpucloud dev`).
inline constexpr rlim_t kJobOpenFilesSoftLimit = 1024;

/// Lowers the calling process's soft RLIMIT_NOFILE to kJobOpenFilesSoftLimit (when above), for
/// the job it is about to start to inherit.
void limit_open_files_for_job();

/// Why a job could not be started: the exit code to record (as exec_job uses them) and a message.
struct StartFailure {
  int code = 1;
  std::string message;
};

/// Starts the job with posix_spawn (only for jobs without a user: it cannot switch users) (no copy
/// of the shim's address space, unlike fork), for jobs without a cgroup: the shim first pins itself
/// to job.cpus (the child inherits it), checks the workdir and finds the command in the job's PATH,
/// then spawns it in a new session with the output redirected, the workdir set and default signal
/// dispositions. Returns the job's pid, or the failure (also appended to the output log, like
/// exec_job does).
std::variant<pid_t, StartFailure> spawn_job(const PreparedJob& job);

}  // namespace gpucloud::exec
