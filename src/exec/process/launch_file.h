// The files the executor and the shim exchange in an attempt directory:
//   launch.json  what to run (written by the executor, read by the shim)
//   claim        who may run the command, created once (claim.h)
//   pid          the job's pid = its process group id (written by the shim once it has exec'd)
//   exit.json    how the job ended (written atomically by the shim)
//   output.log   the job's stdout and stderr; shim.log the shim's own messages
//   job/         the job's own directory (owned by the job's user); tmp/ its private /tmp
// The attempt dir is 0711 and every file of the shim 0600, owned by the executor's user: a job
// running as another user can enter only job/ and tmp/.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "exec/executor.h"

namespace gpucloud::exec {

inline constexpr const char* kLaunchFile = "launch.json";
inline constexpr const char* kPidFile = "pid";
inline constexpr const char* kExitFile = "exit.json";
inline constexpr const char* kOutputLog = "output.log";
inline constexpr const char* kShimLog = "shim.log";
inline constexpr const char* kJobDir = "job";
inline constexpr const char* kJobTmpDir = "tmp";
/// The mode of every file the executor and the shim write: closed to job users.
inline constexpr int kPrivateFileMode = 0600;

/// The content of launch.json.
struct LaunchFile {
  std::string key;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string workdir;
  std::vector<int> cpus;
  std::string cgroup;          // absolute path of the cgroup directory to join, "" for none
  int64_t uid = -1;            // the user to run as; -1 = the shim's own (LaunchSpec::uid)
  int64_t gid = -1;
  // The shim of this attempt claims it before running the command (claim.h). Written true;
  // false in the launch files of executors from before claims, whose shims never claim.
  bool claims = true;
  // A container job (LaunchSpec::container_name): its name, image and podman binary; "" = none.
  std::string container_name;
  std::string container_image;
  std::string podman;
  std::map<std::string, std::string> container_env;  // written to DIR/container.env by the shim
  std::string devices_cgroup;  // the devices cgroup (v1) to join as well, "" for none
};

/// The environment file of a container job, written by its shim (0600) for podman --env-file.
inline constexpr const char* kContainerEnvFile = "container.env";

/// Serialises a LaunchFile as JSON.
std::string launch_file_to_json(const LaunchFile& launch);
/// Parses launch.json; a malformed file is kInvalidArgument with the parser's reason.
Result<LaunchFile> launch_file_from_json(const std::string& text);

/// Serialises an exit record (ExitInfo without key and lost) plus the end time as JSON.
std::string exit_record_to_json(const ExitInfo& info, int64_t ended_at_unix_ms);
/// Parses exit.json into an ExitInfo (key left empty).
Result<ExitInfo> exit_record_from_json(const std::string& text);

/// Reads DIR/exit.json: kNotFound when the shim has not written it.
Result<ExitInfo> read_exit_record(const std::string& attempt_dir);
/// Reads DIR/pid: kNotFound when the job has not been started (yet).
Result<int> read_pid_file(const std::string& attempt_dir);

}  // namespace gpucloud::exec
