// NetnsCluster: a real `gpucloud server` in one namespace of a NetnsLab and real
// `gpucloud agent`s in the others, over TLS pinned by fingerprint, with short timeouts.
#pragma once

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dev_cluster.h"
#include "netns_lab.h"

namespace gpucloud::testing {

/// The timeouts every cluster test runs with (flags of server and agents).
struct ClusterTimeouts {
  std::string poll_hold = "1s";
  std::string unreachable_after = "2s";
  std::string down_after = "8s";
  std::string fence_after = "3s";
};

class NetnsCluster {
 public:
  /// Starts the server (with server_args added to its flags, e.g. `--config FILE`) and `agents`
  /// agents (each with 2 simulated A100s); waits until all nodes are ready.
  NetnsCluster(NetnsLab& lab, int agents, ClusterTimeouts timeouts = {},
               std::vector<std::string> server_args = {});
  ~NetnsCluster();

  /// Starts (or restarts) the server with the same data dir; waits until it answers.
  void start_server();
  void kill_server();
  /// Starts (or restarts) agent i (1-based) with its data dir.
  void start_agent(int i);
  void kill_agent(int i);
  /// SIGTERM to agent i (a clean stop: the node leaves); waits up to `timeout` for it to exit.
  /// Returns whether it exited by then (else it is killed).
  bool stop_agent(int i, std::chrono::milliseconds timeout);
  std::string agent_name(int i) const { return "agent" + std::to_string(i); }

  /// Runs `gpucloud ARGS...` in the server's namespace against the server, as admin.
  CommandResult cli(const std::vector<std::string>& args, int timeout_s = 30) const;
  /// The same with another token (a member's), from the server's namespace.
  CommandResult cli_as(const std::string& token, const std::vector<std::string>& args,
                       int timeout_s = 30) const;
  /// Submits with `run` and returns the job id (throws on failure).
  std::string submit(const std::vector<std::string>& run_args) const;
  nlohmann::json job(const std::string& id) const;
  /// A node's state ("ready", "unreachable", "down") or "" when unknown.
  std::string node_state(const std::string& name) const;
  /// Waits until pred(job JSON) holds.
  bool wait_job(const std::string& id, const std::function<bool(const nlohmann::json&)>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

  const std::string& url() const { return url_; }
  const std::string& fingerprint() const { return fingerprint_; }
  const std::string& join_token() const { return join_token_; }
  const std::string& admin_token() const { return admin_token_; }
  const std::string& work_dir() const { return dir_.path(); }
  /// The server's data dir (admin.token, state.db, logs/) and its log file.
  std::string server_dir() const { return dir_.path() + "/server"; }
  std::string server_log() const { return dir_.path() + "/server.log"; }
  /// Agent i's data dir (agent-state.json.{0,1}, attempts/).
  std::string agent_dir(int i) const { return dir_.path() + "/" + agent_name(i); }
  /// A shared directory the jobs may write to (all namespaces share the file system).
  std::string shared_dir() const { return dir_.path() + "/shared"; }
  NetnsLab& lab() { return lab_; }

 private:
  NetnsLab& lab_;
  ClusterTimeouts timeouts_;
  std::vector<std::string> server_args_;
  // Outside /tmp: jobs, which have a /tmp of their own, write their markers in shared_dir().
  TempDir dir_{"/var/tmp"};
  std::string url_, fingerprint_, join_token_, admin_token_;
  pid_t server_pid_ = -1;
  std::vector<pid_t> agent_pids_;  // index i-1
};

}  // namespace gpucloud::testing
