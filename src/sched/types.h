// The scheduler's interface types: nodes, job requests, tenants and policy settings in; a plan
// out. sched is pure: no I/O, no clock reads, no threads; the same events give the same plans.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "model/job.h"
#include "model/job_spec.h"

namespace gpucloud::sched {

/// One GPU of a node and how much of it is taken.
struct GpuState {
  int index = 0;
  std::string uuid;
  std::string model;
  int64_t memory_mib = 0;
  int numa_node = 0;
  uint64_t nvlink_mask = 0;  // bit i set: NVLink to the GPU at position i of NodeState::gpus
  int used_milli = 0;        // 0..1000
  int64_t used_memory_mib = 0;

  int free_milli() const { return 1000 - used_milli; }
  bool whole_free() const { return used_milli == 0; }
};

/// A node as the scheduler sees it.
struct NodeState {
  std::string id;
  std::string name;
  std::vector<GpuState> gpus;
  int64_t cpu_milli = 0;
  int64_t cpu_used_milli = 0;
  int64_t memory_mib = 0;
  int64_t memory_used_mib = 0;
  std::map<std::string, std::string> labels;  // "capacity-class" = on-demand | spot
  bool schedulable = true;                    // false: cordoned, draining, unreachable
  // USD per GPU-hour: the node's hourly price divided by its GPU count; -1 = unknown. Jobs
  // with a max_price below it are not placed here (nodes without a price are not excluded).
  double price_per_gpu_hour = -1;
};

/// The resource side of a job: what the scheduler needs to place it.
struct JobRequest {
  std::string job_id;
  std::string tenant;
  int replicas = 1;
  int gpus = 0;       // whole GPUs per replica (1 for a share)
  int gpu_milli = 0;  // 1..999 for a share, else 0
  int64_t gpu_memory_mib = 0;
  std::string gpu_model;
  int64_t cpu_milli = 1000;
  int64_t memory_mib = 0;
  std::map<std::string, std::string> node_selector;
  CapacityClass capacity_class = CapacityClass::kAny;
  double max_price = 0;  // USD per GPU-hour the job pays at most; 0: no limit
  // max_price comes from the job's max_cost over its max_runtime (from_spec), not from its
  // own max_price: pending reasons say so.
  bool price_cap_from_cost = false;
  int priority = 100;          // higher first; the value of the job's priority class
  TimeMs created_at = 0;       // orders jobs of one tenant and priority (older first)
  int64_t max_runtime_ms = 0;  // 0: unknown (backfill cannot plan around it)
  // The user's estimate of the run time (0: none); queue policy sjf orders by it, then by
  // max_runtime_ms. Unlike max_runtime_ms it stops nothing and plans no backfill.
  int64_t expected_runtime_ms = 0;
  // GPU time the job received in its earlier attempts, in GPU-milliseconds (a share counts its
  // fraction: 500 milli for 2 s is 1,000). Queue policy las orders and preempts by it.
  int64_t attained_gpu_ms = 0;

  /// The request part of a job spec; `priority` is the value of the spec's priority class.
  static JobRequest from_spec(const std::string& job_id, const JobSpec& spec, TimeMs created_at,
                              int priority);
  /// Whether the job accepted being interrupted for others (capacity class spot).
  bool preemptible() const { return capacity_class == CapacityClass::kSpot; }
};

/// A tenant's share of the cluster, with Kueue's semantics: a nominal quota of GPUs per GPU
/// model, which it may exceed by borrowing other cohort members' unused nominal quota up to its
/// borrowing limit; and a weight for fair sharing.
struct TenantSpec {
  std::string name;
  double weight = 1;
  std::string cohort;                          // empty: lends to and borrows from no one
  bool has_quota = false;                      // false: no quota limit at all
  std::map<std::string, int> quota;            // nominal whole GPUs per GPU model (0 if absent)
  std::map<std::string, int> borrowing_limit;  // per model; absent: no limit within the cohort
};

/// A tenant's GPUs in use on one GPU model, in milli (a share counts its gpu_milli).
struct TenantUsage {
  std::string tenant;
  std::string gpu_model;
  int64_t used_milli = 0;
  int64_t quota_milli = -1;    // -1: no quota
  int64_t borrowed_milli = 0;  // use above the nominal quota
};

/// Typical request shapes and their frequencies (what `fgd` and `default` optimise for).
struct ProfileShape {
  int gpus = 1;       // per replica
  int gpu_milli = 0;  // 1..999 for a share
  int64_t cpu_milli = 0;
  double freq = 0;
};

/// Limits of the las settings: levels (thresholds + 1) and the largest threshold.
constexpr size_t kMaxLasThresholds = 7;
constexpr double kMaxLasThresholdGpuS = 1e12;
/// Under las, priorities must lie within ±this (levels are steps between priority values).
constexpr int kMaxLasPriority = 100'000'000;

/// Policy settings that every scheduler takes.
struct PolicySettings {
  std::string policy = "default";
  uint64_t seed = 42;
  int64_t max_node_cpu_milli = 0;  // score normalisers; 0: the largest node's
  int max_node_gpus = 0;
  std::vector<ProfileShape> profile;  // empty: learned from the jobs submitted so far
  bool backfill = true;
  bool preemption = true;
  // Passes decide only the jobs that an event may let start (new jobs, jobs that fit what was
  // freed). False: every pass after something was freed decides every pending job (slower with
  // deep queues; a reference for tests).
  bool wake_ups = true;
  // Node-class activations (node states entered, which rankings read) kept before the scheduler
  // first drops those every ranking has read; later it drops them once the logs hold twice what
  // they held after the last drop, or twice the classes alive, whichever is more (and at least
  // this). 0: never dropped (a reference for tests).
  size_t activations_kept_at_least = 4096;
  // The order of a tenant's jobs of one priority: "fifo" (oldest first), "sjf" (shortest
  // declared runtime first: expected_runtime_ms, else max_runtime_ms; jobs that declare none
  // after those that do, oldest first) or "las" (least attained service, below).
  std::string queue_policy = "fifo";
  // las: the GPU-seconds of attained service at which a job drops from one level to the next
  // (ascending; N thresholds make N + 1 levels). Levels are steps within a priority class: a
  // job of a higher level goes first and may preempt running jobs of lower levels, as a higher
  // priority class would (docs/scheduler.md, "Queue policies").
  std::vector<double> las_thresholds_gpu_s = {3600, 36000};
  // las starvation guard: a job pending this long since it last entered the queue goes back
  // to the first level (its service so far no longer counts for levels). 0: no guard.
  int64_t las_starvation_ms = 8 * 3600 * 1000;
};

/// Checks a policy's settings that a user may give (queue policy, las levels); the message
/// names the setting and what is accepted.
Status validate_queue_settings(const PolicySettings& settings);

/// Where one replica goes.
struct ReplicaPlacement {
  int rank = 0;
  std::string node_id;
  std::vector<GpuShare> gpus;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
};

/// A job to start: all of its replicas (a gang is placed all or nothing).
struct Placement {
  std::string job_id;
  std::vector<ReplicaPlacement> replicas;
};

/// A running job to interrupt so that others can start.
struct Preemption {
  std::string job_id;
  std::string reason;
};

/// A job that stays pending, with a reason a user understands.
struct PendingReason {
  std::string job_id;
  std::string reason;
};

/// The scheduler's answer at one point in time.
struct Plan {
  std::vector<Placement> placements;
  std::vector<Preemption> preemptions;
  std::vector<PendingReason> pending;
};

/// A job running on the caller's side, as reported to the scheduler.
struct RunningJob {
  JobRequest request;
  Placement placement;
  TimeMs started_at = 0;
};

/// Everything the caller knows, for sync_snapshot(): nodes (their used fields are ignored),
/// running jobs with their placements, and pending jobs.
struct Snapshot {
  TimeMs now = 0;
  std::vector<NodeState> nodes;
  std::vector<RunningJob> running;
  std::vector<JobRequest> pending;
};

/// What sync_snapshot() reported before: node and job ids with a fingerprint of their content.
struct SyncState {
  std::map<std::string, std::string> nodes;    // id -> fingerprint
  std::map<std::string, std::string> running;  // job id -> fingerprint
  std::map<std::string, std::string> pending;  // job id -> fingerprint
};

}  // namespace gpucloud::sched
