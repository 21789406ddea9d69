// The job side of the shim: what runs between fork() and exec of the user's command.
#pragma once

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
  std::string cgroup_procs;  // "<cgroup>/cgroup.procs", "" for none
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
/// namespace with job.tmp_dir on /tmp and only job.tmp_keep of the host's /tmp bound back in it
/// (else TMPDIR=job.tmp_dir, said in the output log), then,
/// unless the uid is 0, an empty capability bounding set and ambient set, the uid/gid with
/// only that gid as group, and no_new_privs; umask 077; the workdir is entered as that user. On
/// failure writes "<exit code> <message>" to error_fd (a close-on-exec pipe, so the parent reads
/// EOF on success) and exits with that code: 127 when the command is not found, 126 when it cannot
/// be executed, 1 for any other setup failure.
[[noreturn]] void exec_job(const PreparedJob& job, int error_fd);

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
