// Invariants of the simple scheduler over 200 seeded random clusters and queues.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "cluster.h"
#include "model/gpu_model.h"
#include "sched/scheduler.h"

namespace gpucloud::sched {
namespace {

using namespace testing;

struct Random {
  std::mt19937 rng;
  explicit Random(uint32_t seed) : rng(seed) {}
  int between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool chance(int percent) { return between(1, 100) <= percent; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[between(0, static_cast<int>(v.size()) - 1)];
  }
};

NodeState random_node(Random& r, int i) {
  static const std::vector<std::string> kModels = {"A100", "H100", "T4"};
  static const std::vector<Links> kLinks = {Links::kNone, Links::kPairs, Links::kFullMesh};
  NodeState n =
      gpu_node("n" + std::to_string(i), r.pick(std::vector<int>{0, 1, 2, 4, 8, 8}), r.pick(kModels),
               r.pick(kLinks), r.pick(std::vector<int64_t>{16 * 1024, 40 * 1024, 80 * 1024}));
  n.cpu_milli = r.between(4, 128) * 1000;
  n.memory_mib = r.between(16, 1024) * 1024;
  n.cpu_used_milli = r.chance(50) ? r.between(0, static_cast<int>(n.cpu_milli)) : 0;
  n.memory_used_mib = r.chance(50) ? r.between(0, static_cast<int>(n.memory_mib)) : 0;
  for (auto& g : n.gpus) {
    if (r.chance(25)) {
      g.used_milli = 1000;
      g.used_memory_mib = g.memory_mib;
    } else if (r.chance(20)) {
      g.used_milli = r.between(1, 999);
      g.used_memory_mib = r.between(0, static_cast<int>(g.memory_mib));
    }
  }
  if (r.chance(30)) n.labels["capacity-class"] = r.chance(50) ? "spot" : "on-demand";
  if (r.chance(50)) n.labels["zone"] = r.chance(50) ? "a" : "b";
  n.schedulable = r.chance(90);
  return n;
}

JobRequest random_job(Random& r, int i) {
  static const std::vector<std::string> kConstraints = {"",          "",   "A100",     "H100",
                                                        "A100|H100", "T4", "A100-80GB"};
  JobRequest j = job("j" + std::to_string(i), r.pick(std::vector<int>{0, 1, 1, 2, 4, 8}),
                     r.pick(kConstraints));
  if (j.gpus == 0) j.gpu_model.clear();
  if (j.gpus == 1 && r.chance(30)) j.gpu_milli = r.pick(std::vector<int>{100, 250, 500, 750});
  if (j.gpus > 0 && r.chance(20)) j.gpu_memory_mib = r.between(1, 80) * 1024;
  j.replicas = r.chance(25) ? r.between(2, 4) : 1;
  j.cpu_milli = r.between(1, 32) * 500;
  j.memory_mib = r.chance(50) ? r.between(0, 256) * 1024 : 0;
  if (r.chance(15)) j.node_selector["zone"] = r.chance(50) ? "a" : "b";
  if (r.chance(20))
    j.capacity_class = r.chance(50) ? CapacityClass::kSpot : CapacityClass::kOnDemand;
  j.priority = r.pick(
      std::vector<Priority>{Priority::kLow, Priority::kNormal, Priority::kNormal, Priority::kHigh});
  j.created_at = r.between(0, 100);
  return j;
}

std::string describe(const Plan& plan) {
  std::ostringstream out;
  for (const auto& p : plan.placements) {
    out << "place " << p.job_id << ":";
    for (const auto& r : p.replicas) {
      out << " [" << r.rank << " " << r.node_id << " cpu=" << r.cpu_milli
          << " mem=" << r.memory_mib;
      for (const auto& g : r.gpus) out << " " << g.index << "/" << g.uuid << "/" << g.milli;
      out << "]";
    }
    out << "\n";
  }
  for (const auto& p : plan.preemptions) out << "preempt " << p.job_id << ": " << p.reason << "\n";
  for (const auto& p : plan.pending) out << "pending " << p.job_id << ": " << p.reason << "\n";
  return out.str();
}

bool labels_allow(const JobRequest& j, const NodeState& n) {
  for (const auto& [k, v] : j.node_selector) {
    auto it = n.labels.find(k);
    if (it == n.labels.end() || it->second != v) return false;
  }
  if (j.capacity_class == CapacityClass::kAny) return true;
  auto it = n.labels.find("capacity-class");
  return (it == n.labels.end() ? "on-demand" : it->second) == to_string(j.capacity_class);
}

bool gpu_ok(const JobRequest& j, const GpuState& g) {
  return gpu_model_matches(j.gpu_model, g.model, g.memory_mib) && j.gpu_memory_mib <= g.memory_mib;
}

// An independent check that one replica of j would fit on n as it is now.
bool replica_fits(const JobRequest& j, const NodeState& n) {
  if (!n.schedulable || !labels_allow(j, n)) return false;
  if (n.cpu_used_milli + j.cpu_milli > n.cpu_milli ||
      n.memory_used_mib + j.memory_mib > n.memory_mib)
    return false;
  int whole = 0;
  for (const auto& g : n.gpus) {
    if (!gpu_ok(j, g)) continue;
    if (j.gpu_milli > 0 && 1000 - g.used_milli >= j.gpu_milli &&
        g.memory_mib - g.used_memory_mib >= j.gpu_memory_mib)
      return true;
    whole += g.used_milli == 0 ? 1 : 0;
  }
  return j.gpu_milli == 0 && whole >= j.gpus;
}

// Applies the plan to the snapshot's nodes, failing the test on any over-commitment.
void apply(const Snapshot& s, const Plan& plan, const std::string& ctx,
           std::map<std::string, NodeState>& nodes) {
  for (const auto& n : s.nodes) nodes[n.id] = n;
  std::map<std::string, const JobRequest*> jobs;
  for (const auto& j : s.pending) jobs[j.job_id] = &j;
  for (const auto& p : plan.placements) {
    ASSERT_TRUE(jobs.count(p.job_id)) << ctx;
    const JobRequest& j = *jobs[p.job_id];
    ASSERT_EQ(static_cast<int>(p.replicas.size()), j.replicas)
        << ctx << "partial gang " << p.job_id;
    for (int rank = 0; rank < j.replicas; ++rank) {
      const ReplicaPlacement& r = p.replicas[rank];
      EXPECT_EQ(r.rank, rank) << ctx;
      ASSERT_TRUE(nodes.count(r.node_id)) << ctx;
      NodeState& n = nodes[r.node_id];
      EXPECT_TRUE(n.schedulable) << ctx << p.job_id << " on unschedulable " << n.name;
      EXPECT_TRUE(labels_allow(j, n)) << ctx << p.job_id << " on " << n.name;
      EXPECT_EQ(static_cast<int>(r.gpus.size()), j.gpus) << ctx << p.job_id;
      EXPECT_EQ(r.cpu_milli, j.cpu_milli) << ctx;
      EXPECT_EQ(r.memory_mib, j.memory_mib) << ctx;
      n.cpu_used_milli += r.cpu_milli;
      n.memory_used_mib += r.memory_mib;
      EXPECT_LE(n.cpu_used_milli, n.cpu_milli) << ctx << "CPUs over capacity on " << n.name;
      EXPECT_LE(n.memory_used_mib, n.memory_mib) << ctx << "memory over capacity on " << n.name;
      for (const auto& share : r.gpus) {
        ASSERT_TRUE(share.index >= 0 && share.index < static_cast<int>(n.gpus.size())) << ctx;
        GpuState& g = n.gpus[share.index];
        EXPECT_EQ(share.uuid, g.uuid) << ctx;
        EXPECT_TRUE(gpu_ok(j, g)) << ctx << p.job_id << " got a " << g.model;
        EXPECT_EQ(share.milli, j.gpu_milli > 0 ? j.gpu_milli : 1000) << ctx;
        if (share.milli == 1000) {
          EXPECT_EQ(g.used_milli, 0) << ctx << g.uuid << " given out whole twice";
        }
        g.used_milli += share.milli;
        g.used_memory_mib += j.gpu_milli > 0 ? j.gpu_memory_mib : g.memory_mib;
        EXPECT_LE(g.used_milli, 1000) << ctx << g.uuid << " over 1000 milli";
        EXPECT_LE(g.used_memory_mib, g.memory_mib) << ctx << g.uuid << " memory over capacity";
      }
    }
  }
}

TEST(SimpleSchedulerProperties, HoldOnRandomClusters) {
  auto scheduler = create_scheduler({"simple"});
  ASSERT_TRUE(scheduler.ok());
  int placed = 0, waiting = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    Random r(seed);
    Snapshot s;
    int node_count = r.between(0, 6), job_count = r.between(0, 16);
    for (int i = 0; i < node_count; ++i) s.nodes.push_back(random_node(r, i));
    for (int i = 0; i < job_count; ++i) s.pending.push_back(random_job(r, i));
    const std::string ctx = "seed " + std::to_string(seed) + ": ";

    Plan plan = (*scheduler)->schedule(s);
    EXPECT_EQ(describe((*scheduler)->schedule(s)), describe(plan))
        << ctx << "same snapshot, different plan";
    std::map<std::string, NodeState> nodes;
    apply(s, plan, ctx, nodes);
    if (::testing::Test::HasFatalFailure()) return;

    std::set<std::string> decided;
    for (const auto& p : plan.placements)
      EXPECT_TRUE(decided.insert(p.job_id).second) << ctx << p.job_id;
    for (const auto& p : plan.pending) {
      EXPECT_TRUE(decided.insert(p.job_id).second) << ctx << p.job_id << " both placed and pending";
      EXPECT_FALSE(p.reason.empty()) << ctx << p.job_id;
    }
    for (const auto& j : s.pending) {
      EXPECT_TRUE(decided.count(j.job_id))
          << ctx << j.job_id << " neither placed nor given a reason";
      if (placement_of(plan, j.job_id) || j.replicas != 1) continue;
      // Work-conserving: a single replica left pending does not fit anywhere after the plan.
      for (const auto& [id, n] : nodes)
        EXPECT_FALSE(replica_fits(j, n)) << ctx << j.job_id << " left pending but fits on "
                                         << n.name << " (" << reason_of(plan, j.job_id) << ")";
    }
    placed += static_cast<int>(plan.placements.size());
    waiting += static_cast<int>(plan.pending.size());
  }
  // The generator must exercise both outcomes, or the invariants above prove little.
  EXPECT_GT(placed, 100);
  EXPECT_GT(waiting, 100);
}

}  // namespace
}  // namespace gpucloud::sched
