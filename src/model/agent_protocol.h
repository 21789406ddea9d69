// The agent protocol (docs/agent-protocol.md): what an agent's long-poll carries each way.
// The agent is the truth about what runs; the server is the truth about what should run.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "model/container_spec.h"
#include "model/interruption.h"
#include "model/job.h"

namespace gpucloud {

/// "<job>.<attempt>.<rank>": names one replica of one attempt everywhere (agent state, logs).
std::string replica_key(const std::string& job_id, int attempt, int rank);

/// One replica the server wants running on the node.
struct Allocation {
  std::string key;
  std::string job_id;
  int attempt = 1;
  int rank = 0;
  int replicas = 1;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;  // the job's env; the agent adds the platform's
  std::string workdir;
  std::vector<GpuShare> gpus;
  // The GPU memory a share asked for (its gpu_memory; 0 = none given): with MPS, its limit.
  int64_t gpu_memory_mib = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t grace_ms = 30'000;
  int64_t max_runtime_ms = 0;
  // Rendezvous of a multi-replica job (docs/jobspec.md): rank 0's node address and a port
  // chosen per job. Empty and 0 for older servers.
  std::string master_addr;
  int master_port = 0;
  // Who the job runs as on the node (docs/security.md, "Job code"). The tenant's configured
  // uid/gid (-1 = none: the agent gives the tenant one of its range), or root when the tenant
  // is allowed to run as root. Empty, -1 and false from older servers.
  std::string tenant;
  int64_t uid = -1;
  int64_t gid = -1;
  bool allow_root = false;
  // The job's image and its options (docs/containers.md); no image = a host process.
  ContainerSpec container;
};

/// The rendezvous port of a job: deterministic in its id, within 20000..39999.
int master_port_for(const std::string& job_id);

/// Something that happened to a replica on the node. Sent until the server acknowledges its seq.
struct ReplicaEvent {
  int64_t seq = 0;
  std::string key;
  std::string type;  // "started" | "exited"
  int exit_code = 0;
  int signal = 0;
  bool lost = false;
  bool failed_to_start = false;
  bool over_runtime = false;  // stopped by the agent for exceeding max_runtime
  std::string message;
  TimeMs at = 0;
  // With lost: the replica's command provably never ran (nor ever will), so its attempt is
  // re-queued without using a restart. Absent (false) from older agents.
  bool not_started = false;
  // With "exited": the last checkpoint the job committed in $GPUCLOUD_CHECKPOINT_DIR (its
  // marker's time, 0: none yet) and the directory's size then; the interruption the agent
  // acted on ("" when none). Absent from older agents.
  TimeMs checkpoint_at = 0;
  int64_t checkpoint_bytes = 0;
  std::string interrupt_cause;
};

/// New output of a replica, from byte offset `offset` of its log.
struct LogChunk {
  std::string key;
  int64_t offset = 0;
  std::string data_base64;
};

/// A GPU's current readings, as the agent's GPU backend reports them.
struct GpuReading {
  int index = 0;
  int utilization_pct = 0;
  int64_t memory_used_mib = 0;
  int temperature_c = 0;
  int power_w = 0;
};

/// A provider's notice that it takes the node (docs/interruptions.md, "Spot notices"), as the
/// agent's --spot-notice-command or its simulated spot interruptions saw it.
struct SpotNotice {
  TimeMs deadline_ms = 0;  // epoch ms: the node is gone then
  std::string reason;      // for people, at most 256 bytes
};

struct PollRequest {
  std::string node_id;
  int64_t applied_version = 0;       // the desired version the agent has acted on
  std::vector<std::string> running;  // keys of every replica process the agent has now
  std::vector<ReplicaEvent> events;
  std::vector<LogChunk> logs;
  int64_t hold_ms = 5000;        // how long the server may hold the poll
  std::vector<GpuReading> gpus;  // latest readings; empty when unchanged or unavailable
  // The agent is stopping (docs/interruptions.md, "Agents that leave"): no new work, its jobs
  // are interrupted and re-queued. Absent (false) from older agents.
  bool leaving = false;
  // The provider takes the node: sent until the server answers that the node is interrupting
  // (PollResponse::node_state). Absent (0) from older agents and when there is no notice.
  SpotNotice spot_notice;
  bool has_spot_notice() const { return spot_notice.deadline_ms > 0; }
};

struct PollResponse {
  int64_t version = 0;
  std::vector<Allocation> allocations;         // the complete desired set for the node
  int64_t acked_seq = 0;                       // events up to here are recorded
  std::map<std::string, int64_t> log_offsets;  // bytes of each log the server holds
  // Replicas the server stops as interruptions (absent from `allocations`): key -> notice.
  // A replica stopped without one (its job ended, say) gets no interrupt file.
  std::map<std::string, InterruptNotice> interrupts;
  // Warnings of an interruption to come (an idle job, docs/interruptions.md): key -> notice.
  // The replica stays desired; the agent writes its interrupt file and sends no signal, and
  // removes the file when the warning is withdrawn. Absent from older servers.
  std::map<std::string, InterruptNotice> warnings;
  // The node's state as the server sees it ("ready", "interrupting", ...): tells the agent its
  // spot notice was acted on. Empty from older servers.
  std::string node_state;
};

nlohmann::json allocation_to_json(const Allocation& a);
Result<Allocation> allocation_from_json(const nlohmann::json& j);
nlohmann::json replica_event_to_json(const ReplicaEvent& e);
Result<ReplicaEvent> replica_event_from_json(const nlohmann::json& j);
nlohmann::json poll_request_to_json(const PollRequest& r);
/// Parses a poll request; bounded: at most 10,000 keys, events and log chunks; a spot notice's
/// deadline within year 1970..9999 and its reason at most 256 bytes.
Result<PollRequest> poll_request_from_json(const nlohmann::json& j);
nlohmann::json poll_response_to_json(const PollResponse& r);
Result<PollResponse> poll_response_from_json(const nlohmann::json& j);

}  // namespace gpucloud
