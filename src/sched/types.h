// The scheduler's interface types: a read-only cluster snapshot in, a plan out.
// sched is pure: no I/O, no clock reads, no threads; the same snapshot gives the same plan.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
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
  Priority priority = Priority::kNormal;
  TimeMs created_at = 0;
  int64_t max_runtime_ms = 0;

  /// The request part of a job spec.
  static JobRequest from_spec(const std::string& job_id, const JobSpec& spec, TimeMs created_at);
};

/// Policy settings that every scheduler takes.
struct PolicySettings {
  std::string policy = "simple";
  uint64_t seed = 42;
};

/// Everything the scheduler may look at. Nodes carry current allocations in their used fields.
struct Snapshot {
  TimeMs now = 0;
  std::vector<NodeState> nodes;
  std::vector<JobRequest> pending;
  PolicySettings settings;
};

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

/// The scheduler's answer for one snapshot.
struct Plan {
  std::vector<Placement> placements;
  std::vector<Preemption> preemptions;
  std::vector<PendingReason> pending;
};

}  // namespace gpucloud::sched
