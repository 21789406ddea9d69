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

/// Registers the nodes; use already marked on them (used GPUs, CPUs, memory) becomes a running
/// job "occupied-<node>" of tenant "other" at a priority no test job preempts.
inline void add_nodes(Scheduler& scheduler, const std::vector<NodeState>& nodes) {
  for (const auto& node : nodes) {
    scheduler.upsert_node(node);
    JobRequest occupied;
    occupied.job_id = "occupied-" + node.name;
    occupied.tenant = "other";
    occupied.priority = 1'000'000;
    occupied.cpu_milli = node.cpu_used_milli;
    occupied.memory_mib = node.memory_used_mib;
    ReplicaPlacement rp{0, node.id, {}, node.cpu_used_milli, node.memory_used_mib};
    for (const auto& g : node.gpus)
      if (g.used_milli > 0) rp.gpus.push_back({g.index, g.uuid, g.used_milli});
    if (rp.gpus.empty() && rp.cpu_milli == 0 && rp.memory_mib == 0) continue;
    occupied.gpus = static_cast<int>(rp.gpus.size());
    ASSERT_TRUE(scheduler.start(occupied, {occupied.job_id, {rp}}, 0).ok());
  }
}

/// A scheduler with the policy, the nodes (see add_nodes) and the jobs submitted.
inline std::unique_ptr<Scheduler> scheduler_with(const std::vector<NodeState>& nodes,
                                                 const std::vector<JobRequest>& jobs,
                                                 const std::string& policy = "default") {
  PolicySettings settings;
  settings.policy = policy;
  auto scheduler = create_scheduler(settings);
  EXPECT_TRUE(scheduler.ok());
  add_nodes(**scheduler, nodes);
  for (const auto& j : jobs) EXPECT_TRUE((*scheduler)->submit(j).ok()) << j.job_id;
  return std::move(*scheduler);
}

/// One scheduling pass at time 0 over the nodes and jobs.
inline Plan schedule(const std::vector<NodeState>& nodes, const std::vector<JobRequest>& jobs,
                     const std::string& policy = "default") {
  return scheduler_with(nodes, jobs, policy)->schedule(0);
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
