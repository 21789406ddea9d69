// DevCluster: runs a real `gpucloud dev` process on port 0 with a temporary data dir, and runs
// the real CLI against it. Used by every integration test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpucloud::testing {

/// What a finished command printed and returned.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs argv with extra environment variables (added to this process's), in cwd if given;
/// waits up to timeout_s. stdin is /dev/null.
CommandResult run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {},
                          const std::string& cwd = "", int timeout_s = 60);

/// Waits until pred() is true or timeout passes; returns pred()'s last value.
bool wait_until(const std::function<bool()>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));

/// The environment that makes a process see the wall clock start at `start` ("YYYY-MM-DD
/// hh:mm:ss", UTC) and run on from there, through libfaketime (Debian's libfaketime, installed by
/// scripts/install-deps.sh). Steady clocks are left alone, so timers keep their real durations.
/// Fails the calling test when the library is missing.
std::map<std::string, std::string> fake_wall_clock_env(const std::string& start);

/// A fresh temporary directory under `base`, removed by the destructor. It is 0711: jobs, which
/// run as their tenant's user, pass through it to their own dirs.
class TempDir {
 public:
  explicit TempDir(const std::string& base = "/tmp");
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// An API answer: its status (0 when the request failed) and its JSON body (null if not JSON).
struct ApiAnswer {
  int status = 0;
  nlohmann::json body;
  /// "code: message" of an error body, or "".
  std::string error() const;
  /// The error's message alone, or "".
  std::string message() const;
};

/// One API call on a new connection to base_url, with a bearer token unless token is "".
ApiAnswer api_call(const std::string& base_url, const std::string& method, const std::string& path,
                   const std::string& body, const std::string& token);

class DevCluster {
 public:
  /// Starts `gpucloud dev --listen 127.0.0.1:0 --data-dir <tmp>/.gpucloud` plus extra_args.
  /// Its temporary dir is made under base_dir.
  explicit DevCluster(std::vector<std::string> extra_args = {"--sim-gpus", "8xA100-80GB"},
                      std::map<std::string, std::string> env = {},
                      const std::string& base_dir = "/tmp");
  ~DevCluster();

  /// (Re)starts the dev process with the same data dir; waits until it serves and a node is ready.
  void start();
  /// kill -9 of the dev process (jobs keep running under their shims); reaps it when it has
  /// already ended by itself.
  void kill9();
  /// The extra environment of the next start().
  void set_env(std::map<std::string, std::string> env) { env_ = std::move(env); }

  /// Runs `gpucloud ARGS...` as a client of this cluster, from the cluster's work dir.
  CommandResult cli(const std::vector<std::string>& args, int timeout_s = 60) const;
  /// `gpucloud show ID --json`, parsed.
  nlohmann::json job(const std::string& id) const;
  /// Waits for a job to reach a state that is not pending or running; returns its JSON.
  nlohmann::json wait_done(const std::string& id,
                           std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  /// Submits with `run` and returns the job id (asserts success).
  std::string submit(const std::vector<std::string>& run_args) const;

  const std::string& address() const { return address_; }
  std::string token() const;
  const std::string& data_dir() const { return data_dir_; }
  /// Where the dev agents keep their state and job dirs: beside the data dir, not in it.
  std::string nodes_dir() const { return data_dir_ + "-nodes"; }
  const std::string& work_dir() const { return dir_.path(); }
  pid_t pid() const { return pid_; }

 private:
  TempDir dir_;
  std::string data_dir_;
  std::vector<std::string> extra_args_;
  std::map<std::string, std::string> env_;
  std::string address_;
  pid_t pid_ = -1;
};

}  // namespace gpucloud::testing
