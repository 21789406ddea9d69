// A job as the server tracks it: its spec, its state, and where its current attempt runs.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "model/job_spec.h"

namespace gpucloud {

/// The states a user sees. pending -> running -> succeeded | failed | cancelled | lost |
/// idle-reclaimed; a lost or failed attempt whose restart policy allows another goes back to
/// pending. idle-reclaimed: its GPUs sat idle for its idle window and were handed back
/// (docs/interruptions.md); it is never re-queued.
enum class JobState { kPending, kRunning, kSucceeded, kFailed, kCancelled, kLost, kIdleReclaimed };

const char* to_string(JobState s);
Result<JobState> job_state_from_string(const std::string& s);
inline bool is_terminal(JobState s) {
  return s != JobState::kPending && s != JobState::kRunning;
}

/// A GPU or a share of one bound to a replica.
struct GpuShare {
  int index = 0;
  std::string uuid;
  int milli = 1000;  // 1000 = the whole GPU
};

/// Where one replica of the current attempt runs, and how it is doing there.
enum class ReplicaState { kAssigned, kRunning, kExited };
const char* to_string(ReplicaState s);

struct ReplicaAssignment {
  int rank = 0;
  std::string node_id;
  std::string node_name;
  std::vector<GpuShare> gpus;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  ReplicaState state = ReplicaState::kAssigned;
  std::optional<int> exit_code;
  bool lost = false;
  /// Why it ended when that is not just its exit code: "" | "failed_to_start" | "max_runtime" |
  /// "not_started" (lost before its command ever ran).
  std::string end_reason;
  std::string message;
  // From its exit: the job's last committed checkpoint then (0: none) and its size, and the
  // interruption the agent carried out ("" when none).
  TimeMs checkpoint_at = 0;
  int64_t checkpoint_bytes = 0;
  std::string interrupt_cause;
  // Its price, fixed when it was placed (docs/cost.md): its share of its node's price in USD
  // per hour (-1: the node has no price), the same share at on-demand (savings), and the
  // node's GPU model.
  double usd_per_hour = -1;
  double on_demand_usd_per_hour = -1;
  std::string gpu_model;
};

/// One ended attempt of a job, as `gpucloud show` lists it.
struct AttemptRecord {
  int attempt = 1;
  std::vector<std::string> nodes;  // node names, by rank
  TimeMs started_at = 0;           // 0: it never started
  TimeMs ended_at = 0;
  std::string end;    // what ended it, e.g. "succeeded", "exit code 3", "interrupted (drain)"
  std::string cause;  // the interruption's cause, e.g. "preemption"; "" when not interrupted
  TimeMs checkpoint_at = 0;  // the job's last committed checkpoint when it ended
  int64_t checkpoint_bytes = 0;
  bool checkpoint_committed = false;  // committed during this attempt (before its end)
  double gpu_seconds_lost = 0;        // interrupted: GPU time since its last checkpoint (or start)
  double price_per_hour = 0;  // USD per hour of its replicas' shares, fixed when it was placed
  double cost_usd = 0;        // price_per_hour over its running time (0 if it never started)
};

/// One step in a job's life with its time, as `gpucloud events JOB` lists it. Types:
/// submitted, placed, running, interrupt, stop, idle-warning, idle-warning-withdrawn, exited,
/// requeued, cancel-requested, ended.
struct JobEvent {
  TimeMs at = 0;
  std::string type;
  std::string message;
};

/// Events a job record keeps: the first (submitted) and the newest.
inline constexpr size_t kMaxJobEvents = 200;

/// Attempts a job record keeps (the oldest are dropped beyond this).
inline constexpr size_t kMaxAttemptRecords = 100;

/// A job record. Timestamps are ms since the epoch; 0 means "not yet".
struct Job {
  std::string id;
  JobSpec spec;
  JobState state = JobState::kPending;
  std::optional<int> exit_code;
  std::string pending_reason;  // why it waits, while pending
  std::string message;         // why it ended, or what happened last
  int attempt = 1;
  std::vector<ReplicaAssignment> replicas;  // of the current attempt; empty while unplaced
  TimeMs created_at = 0;
  TimeMs started_at = 0;
  TimeMs finished_at = 0;
  bool cancel_requested = false;
  /// Set while the attempt is stopped to be re-queued (a preemption: "preempted for job
  /// 0193…", or a drain: "node gpu-7 is draining"): once its replicas have stopped the job
  /// returns to pending whatever its restart policy, without using a restart.
  std::string interrupt_reason;
  // Set when idle reclaim stops the job (why, e.g. "GPUs idle for 2h"): once its replicas have
  // stopped it ends as idle-reclaimed, whatever its restart policy.
  std::string reclaim_reason;
  // Set when the job is stopped for reaching its max_cost (why, e.g. "cost limit: $9.98 of
  // max_cost $10.00"): once its replicas have stopped it ends as failed, whatever its restart
  // policy.
  std::string cost_limit_reason;
  int interruptions = 0;  // attempts interrupted or never started (not counted as restarts)
  // GPU time its earlier attempts received, in GPU-ms (a share counts its fraction): queue
  // policy las orders by it.
  int64_t attained_gpu_ms = 0;
  // Since when all its GPUs have been idle (0: busy, or not known yet); from its nodes'
  // readings, not persisted (written with the job, not read back).
  TimeMs idle_since = 0;
  std::vector<AttemptRecord> attempts;  // ended attempts, oldest first
  std::vector<JobEvent> events;         // oldest first; see add_job_event
  std::string submitted_by;             // the token's name
};

/// Appends an event to the job's list; beyond kMaxJobEvents the oldest after the first go.
void add_job_event(Job& job, TimeMs at, std::string type, std::string message);

/// Whether a replica ended in a way that fails its attempt: lost, a non-zero exit, or stopped
/// for exceeding max_runtime (even if it then exited 0).
bool replica_failed(const ReplicaAssignment& r);

/// Whether the platform or the user has asked the current attempt to stop: cancelled,
/// interrupted, being idle-reclaimed or
/// stopped at its max_cost (its replicas are then being stopped).
bool stop_requested(const Job& job);

/// Whether the current attempt is being wound down: cancelled, interrupted, or a replica failed.
/// Its other replicas are then stopped (and not started if they have not been yet).
bool attempt_ending(const Job& job);

/// The job's stable public JSON (docs/api.md): id, name, tenant, state, exit_code,
/// pending_reason, attempt, replicas, created_at, started_at, finished_at, spec, message.
nlohmann::json job_to_json(const Job& job);

/// Reads what job_to_json wrote (the store keeps jobs in this form).
Result<Job> job_from_json(const nlohmann::json& j);

}  // namespace gpucloud
