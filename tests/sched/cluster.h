// Small builders for scheduler tests: nodes with a GPU topology, jobs, and plan lookups.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace gpucloud::sched::testing {

enum class Links { kNone, kPairs, kFullMesh };

/// A node of n GPUs of one model: GPUs 0..n/2-1 on NUMA node 0, the rest on NUMA node 1;
/// NVLink between pairs (0-1, 2-3, ...) or between all of them. 64 CPUs, 512 GiB.
inline NodeState gpu_node(const std::string& name, int n, const std::string& model = "A100",
                          Links links = Links::kPairs, int64_t gpu_memory_mib = 80 * 1024) {
  NodeState node;
  node.id = "id-" + name;
  node.name = name;
  node.cpu_milli = 64'000;
  node.memory_mib = 512 * 1024;
  for (int i = 0; i < n; ++i) {
    GpuState g;
    g.index = i;
    g.uuid = "GPU-" + name + "-" + std::to_string(i);
    g.model = model;
    g.memory_mib = gpu_memory_mib;
    g.numa_node = i < n / 2 ? 0 : 1;
    for (int j = 0; j < n; ++j) {
      bool linked = links == Links::kFullMesh || (links == Links::kPairs && j / 2 == i / 2);
      if (j != i && linked) g.nvlink_mask |= uint64_t{1} << j;
    }
    node.gpus.push_back(g);
  }
  return node;
}

/// Marks whole GPUs of a node as taken by someone else.
inline NodeState with_used(NodeState node, const std::vector<int>& used) {
  for (int i : used) {
    node.gpus[i].used_milli = 1000;
    node.gpus[i].used_memory_mib = node.gpus[i].memory_mib;
  }
  return node;
}

inline JobRequest job(const std::string& id, int gpus, const std::string& model = "") {
  JobRequest r;
  r.job_id = id;
  r.tenant = "default";
  r.gpus = gpus;
  r.gpu_model = model;
  return r;
}

inline JobRequest share(const std::string& id, int milli) {
  JobRequest r = job(id, 1);
  r.gpu_milli = milli;
  return r;
}

inline Plan schedule(std::vector<NodeState> nodes, std::vector<JobRequest> jobs) {
  auto scheduler = create_scheduler({"simple"});
  EXPECT_TRUE(scheduler.ok());
  Snapshot snapshot;
  snapshot.nodes = std::move(nodes);
  snapshot.pending = std::move(jobs);
  return (*scheduler)->schedule(snapshot);
}

inline const Placement* placement_of(const Plan& plan, const std::string& job_id) {
  for (const auto& p : plan.placements)
    if (p.job_id == job_id) return &p;
  return nullptr;
}

/// The pending reason of a job, or "" when the plan has none for it.
inline std::string reason_of(const Plan& plan, const std::string& job_id) {
  for (const auto& p : plan.pending)
    if (p.job_id == job_id) return p.reason;
  return "";
}

/// GPU indices of a single-replica placement.
inline std::vector<int> gpu_indices(const Placement& p) {
  std::vector<int> out;
  for (const auto& g : p.replicas.at(0).gpus) out.push_back(g.index);
  return out;
}

}  // namespace gpucloud::sched::testing
