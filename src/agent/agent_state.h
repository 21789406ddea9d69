// The agent's local state file: what it runs, so a restarted agent re-adopts its processes.
#pragma once

#include <deque>
#include <map>
#include <string>

#include "common/result.h"
#include "exec/executor.h"
#include "model/agent_protocol.h"

namespace gpucloud::agent {

/// One replica this agent started (or was told to start).
struct LocalReplica {
  Allocation allocation;
  exec::ProcessRef process;
  TimeMs started_at = 0;
  bool exited = false;
  bool stop_sent = false;
  bool over_runtime = false;
  std::string interrupt_cause;  // the interruption being carried out ("" when none)
  int64_t job_gid = -1;         // the group the job runs as (-1: the agent's)
  int64_t log_shipped = 0;      // bytes of the log the server has confirmed
  bool starting = false;  // queued or being started (not persisted: a restart reports it lost)
  bool fenced = false;    // stopped because the server was out of reach (not persisted)
  // Its "started" event went out ahead of an exit seen while it was being started (not
  // persisted).
  bool start_reported = false;
  TimeMs warned_deadline = 0;  // the idle warning written to its interrupt file (not persisted)
  // Recorded before the machine last restarted (not persisted): its attempt's files may not
  // have reached the disk, so a missing claim does not prove it never started.
  bool before_reboot = false;
};

/// Everything the agent persists, in two files <path>.0 and <path>.1 written alternately in
/// place (the newest whole one wins on load, so a save torn by a crash loses only itself).
/// Saves survive agent crashes (the page cache does); only durable saves, the ones that record
/// replicas about to start, also survive a machine crash. After one, replicas whose shims are
/// gone are reported lost, or never started when their attempt was never claimed.
struct AgentState {
  int64_t generation = 0;  // counts saves; picks the newer slot
  std::string node_id;
  std::string credential;
  std::string boot_id;  // the machine's boot when saved (/proc/sys/kernel/random/boot_id)
  int64_t next_seq = 1;
  std::deque<ReplicaEvent> unacked;  // events not yet confirmed by the server
  std::map<std::string, LocalReplica> replicas;
  /// The uid each tenant's jobs run as on this node (job_users.h): stable across restarts.
  std::map<std::string, int64_t> tenant_uids;

  /// Loads the state file; a missing file gives an empty state.
  static Result<AgentState> load(const std::string& path);
  /// Saves into the older slot; with durable, the slot is fsync'ed before this returns.
  Status save(const std::string& path, bool durable = false);
};

}  // namespace gpucloud::agent
