#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "cluster.h"
#include "sched/scheduler.h"

namespace gpucloud::sched {
namespace {

using namespace testing;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CreateScheduler, KnowsEveryPolicyAndNamesUnknownOnes) {
  for (const auto& name : scheduler_policy_names()) {
    PolicySettings settings;
    settings.policy = name;
    auto scheduler = create_scheduler(settings);
    ASSERT_TRUE(scheduler.ok()) << name;
    EXPECT_EQ((*scheduler)->name(), name);
  }
  PolicySettings drf;
  drf.policy = "drf";
  auto unknown = create_scheduler(drf);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message, HasSubstr("'drf'"));
  EXPECT_THAT(unknown.error().message, HasSubstr("first-fit"));
}

TEST(ClusterScheduler, TwoGpusGetAnNvlinkPairOnOneNumaNode) {
  // GPUs 0 and 3 are taken: 1-2 would share a NUMA node but have no NVLink between them.
  Plan plan = schedule({with_used(gpu_node("a", 8), {0, 3})}, {job("j", 2)});
  const Placement* p = placement_of(plan, "j");
  ASSERT_NE(p, nullptr) << reason_of(plan, "j");
  EXPECT_EQ(gpu_indices(*p), (std::vector<int>{4, 5}));
}

TEST(ClusterScheduler, FourGpusOnAFullMeshStayOnOneNumaNode) {
  // GPU 0 is taken: the first four free GPUs (1-4) would cross NUMA nodes.
  Plan plan = schedule({with_used(gpu_node("a", 8, "A100", Links::kFullMesh), {0})}, {job("j", 4)});
  const Placement* p = placement_of(plan, "j");
  ASSERT_NE(p, nullptr) << reason_of(plan, "j");
  EXPECT_EQ(gpu_indices(*p), (std::vector<int>{4, 5, 6, 7}));
}

TEST(ClusterScheduler, OneGpuGoesToThePartlyUsedNodeNotAnIdleOne) {
  Plan plan = schedule({gpu_node("idle", 8), with_used(gpu_node("busy", 8), {0, 1, 2, 3, 4})},
                       {job("j", 1)});
  const Placement* p = placement_of(plan, "j");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->replicas[0].node_id, "id-busy");
}

TEST(ClusterScheduler, GpuModelConstraintPicksMatchingNodes) {
  std::vector<NodeState> nodes = {gpu_node("a100", 8, "A100"), gpu_node("h100", 8, "H100")};
  Plan plan = schedule(nodes, {job("h", 8, "H100")});
  ASSERT_NE(placement_of(plan, "h"), nullptr);
  EXPECT_EQ(placement_of(plan, "h")->replicas[0].node_id, "id-h100");

  plan = schedule(nodes, {job("x", 8, "A100|H100"), job("y", 8, "A100|H100")});
  ASSERT_NE(placement_of(plan, "x"), nullptr);
  ASSERT_NE(placement_of(plan, "y"), nullptr);
  EXPECT_NE(placement_of(plan, "x")->replicas[0].node_id,
            placement_of(plan, "y")->replicas[0].node_id);

  plan = schedule({gpu_node("a100", 8, "A100")}, {job("h", 1, "H100")});
  EXPECT_EQ(placement_of(plan, "h"), nullptr);
  EXPECT_THAT(reason_of(plan, "h"), HasSubstr("no matching GPU"));
}

TEST(ClusterScheduler, PlacementCarriesTheRequestedResources) {
  JobRequest j = job("j", 2);
  j.cpu_milli = 12'000;
  j.memory_mib = 64 * 1024;
  Plan plan = schedule({gpu_node("a", 8)}, {j});
  ASSERT_EQ(plan.placements.size(), 1u);
  const ReplicaPlacement& r = plan.placements[0].replicas.at(0);
  EXPECT_EQ(r.node_id, "id-a");
  EXPECT_EQ(r.cpu_milli, 12'000);
  EXPECT_EQ(r.memory_mib, 64 * 1024);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].uuid, "GPU-a-0");
  EXPECT_EQ(r.gpus[0].milli, 1000);
}

TEST(ClusterScheduler, RespectsCpuLimits) {
  NodeState small = gpu_node("small", 8);
  small.cpu_milli = 8'000;
  JobRequest a = job("a", 1), b = job("b", 1);
  a.cpu_milli = b.cpu_milli = 6'000;
  b.created_at = 1;
  Plan plan = schedule({small}, {a, b});
  ASSERT_NE(placement_of(plan, "a"), nullptr);
  EXPECT_EQ(placement_of(plan, "b"), nullptr);
  EXPECT_THAT(reason_of(plan, "b"), HasSubstr("6 CPUs"));
  EXPECT_THAT(reason_of(plan, "b"), HasSubstr("most free on a matching node is 2 CPUs"));
}

TEST(ClusterScheduler, AReasonNamesTheNodeWithTheMostCpusThatLacksMemory) {
  // CPUs fit on "big" (all 64 free) but its memory does not; "small" has memory but 4 CPUs.
  // The node named is the one with the most CPUs free among those the job does not fit.
  NodeState big = gpu_node("big", 8), small = gpu_node("small", 8);
  big.memory_used_mib = big.memory_mib - 10 * 1024;
  small.cpu_used_milli = 60'000;
  JobRequest j = job("j", 1);
  j.cpu_milli = 8'000;
  j.memory_mib = 32 * 1024;
  Plan plan = schedule({big, small}, {j});
  EXPECT_EQ(placement_of(plan, "j"), nullptr);
  EXPECT_THAT(reason_of(plan, "j"),
              HasSubstr("most free on a matching node is 64 CPUs, 10GiB (big)"));
}

TEST(ClusterScheduler, RespectsMemoryLimitsAcrossNodes) {
  NodeState first = gpu_node("first", 8), second = gpu_node("second", 8);
  first.memory_used_mib = first.memory_mib - 10 * 1024;  // 10 GiB left
  JobRequest j = job("j", 1);
  j.memory_mib = 32 * 1024;
  Plan plan = schedule({first, second}, {j});
  ASSERT_NE(placement_of(plan, "j"), nullptr) << reason_of(plan, "j");
  EXPECT_EQ(placement_of(plan, "j")->replicas[0].node_id, "id-second");
}

TEST(ClusterScheduler, JobsThatDifferOnlyInMemoryEachGetTheBestNodeTheirMemoryFits) {
  // Both ask for one GPU, so they are ranked alike: the partly used node first, but it has
  // only 32 GiB of memory left.
  NodeState busy = with_used(gpu_node("busy", 8), {0, 1, 2, 3}), idle = gpu_node("idle", 8);
  busy.memory_used_mib = busy.memory_mib - 32 * 1024;
  JobRequest big = job("big", 1), small = job("small", 1);
  big.memory_mib = 100 * 1024;  // older: decided first
  small.memory_mib = 1024;
  small.created_at = 1;
  Plan plan = schedule({busy, idle}, {big, small});
  ASSERT_NE(placement_of(plan, "big"), nullptr) << reason_of(plan, "big");
  ASSERT_NE(placement_of(plan, "small"), nullptr) << reason_of(plan, "small");
  EXPECT_EQ(placement_of(plan, "big")->replicas[0].node_id, "id-idle");
  EXPECT_EQ(placement_of(plan, "small")->replicas[0].node_id, "id-busy");
}

TEST(ClusterScheduler, NodeSelectorMustMatchALabel) {
  NodeState a = gpu_node("a", 8), b = gpu_node("b", 8);
  a.labels["zone"] = "eu-1";
  b.labels["zone"] = "us-1";
  JobRequest us = job("us", 1), mars = job("mars", 1);
  us.node_selector = {{"zone", "us-1"}};
  mars.node_selector = {{"zone", "mars"}};
  Plan plan = schedule({a, b}, {us, mars});
  ASSERT_NE(placement_of(plan, "us"), nullptr);
  EXPECT_EQ(placement_of(plan, "us")->replicas[0].node_id, "id-b");
  EXPECT_EQ(placement_of(plan, "mars"), nullptr);
  EXPECT_THAT(reason_of(plan, "mars"), HasSubstr("zone=mars"));
}

TEST(ClusterScheduler, CapacityClassFollowsTheNodeLabelWithOnDemandAsDefault) {
  NodeState spot = gpu_node("spot", 8), plain = gpu_node("plain", 8);
  spot.labels["capacity-class"] = "spot";
  JobRequest s = job("s", 1), od = job("od", 1), any = job("any", 8);
  s.capacity_class = CapacityClass::kSpot;
  od.capacity_class = CapacityClass::kOnDemand;
  Plan plan = schedule({spot, plain}, {s, od});
  ASSERT_NE(placement_of(plan, "s"), nullptr);
  ASSERT_NE(placement_of(plan, "od"), nullptr);
  EXPECT_EQ(placement_of(plan, "s")->replicas[0].node_id, "id-spot");
  EXPECT_EQ(placement_of(plan, "od")->replicas[0].node_id, "id-plain");

  plan = schedule({plain}, {s});
  EXPECT_EQ(placement_of(plan, "s"), nullptr);
  EXPECT_THAT(reason_of(plan, "s"),
              HasSubstr("capacity class: the node is on-demand, the job asks for spot nodes"));
  EXPECT_NE(placement_of(schedule({spot}, {any}), "any"), nullptr);
}

TEST(ClusterScheduler, HighPriorityGoesBeforeAnOlderNormalJob) {
  JobRequest old_normal = job("old", 8), new_high = job("new", 8);
  old_normal.created_at = 1'000;
  new_high.created_at = 2'000;
  new_high.priority = 1000;
  Plan plan = schedule({gpu_node("a", 8)}, {old_normal, new_high});
  EXPECT_NE(placement_of(plan, "new"), nullptr);
  EXPECT_EQ(placement_of(plan, "old"), nullptr);
  EXPECT_FALSE(reason_of(plan, "old").empty());
}

TEST(ClusterScheduler, AGangHeldByCpusCountsTheNodesItFitsAndNamesTheClosest) {
  // Replicas of 4 GPUs and 12 CPUs: GPUs fit on a, b, c and d; CPUs only on a. e has CPUs but
  // too few GPUs, f has neither.
  NodeState a = gpu_node("a", 8), b = gpu_node("b", 8), c = gpu_node("c", 8), d = gpu_node("d", 8);
  NodeState e = with_used(gpu_node("e", 8), {0, 1, 2, 3, 4, 5});
  NodeState f = with_used(gpu_node("f", 8), {0, 1, 2, 3, 4, 5, 6, 7});
  a.cpu_used_milli = 50'000;  // 14 free
  b.cpu_used_milli = 56'000;  // 8 free
  c.cpu_used_milli = 60'000;  // 4 free
  d.cpu_used_milli = 56'000;  // as b: one class, named by its first node
  f.cpu_used_milli = 60'000;
  JobRequest gang = job("gang", 4);
  gang.replicas = 3;
  gang.cpu_milli = 12'000;
  Plan plan = schedule({a, b, c, d, e, f}, {gang});
  EXPECT_EQ(placement_of(plan, "gang"), nullptr);
  EXPECT_THAT(reason_of(plan, "gang"), StartsWith("gang of 3 replicas, 1 placeable now; "));
  EXPECT_THAT(reason_of(plan, "gang"),
              HasSubstr("needs 12 CPUs and 0MiB memory; most free on a matching node is 8 CPUs, "
                        "512GiB (b)"));
}

TEST(ClusterScheduler, OlderJobFirstAtEqualPriority) {
  JobRequest older = job("zzz", 8), newer = job("aaa", 8);
  older.created_at = 1'000;
  newer.created_at = 2'000;
  Plan plan = schedule({gpu_node("a", 8)}, {newer, older});
  EXPECT_NE(placement_of(plan, "zzz"), nullptr);
  EXPECT_EQ(placement_of(plan, "aaa"), nullptr);
}

TEST(ClusterScheduler, AGangThatDoesNotFullyFitPlacesNothing) {
  JobRequest gang = job("gang", 8);
  gang.replicas = 2;
  JobRequest small = job("small", 8);
  small.created_at = 1;  // after the gang, so it sees what the gang left
  Plan plan = schedule({gpu_node("a", 8)}, {gang, small});
  EXPECT_EQ(placement_of(plan, "gang"), nullptr);
  EXPECT_THAT(reason_of(plan, "gang"), StartsWith("gang of 2 replicas"));
  EXPECT_THAT(reason_of(plan, "gang"), HasSubstr("1 placeable now"));
  // The failed gang's first replica was rolled back: the node is free for the next job.
  EXPECT_NE(placement_of(plan, "small"), nullptr);
}

TEST(ClusterScheduler, AGangThatFitsGetsAllItsReplicasOnDistinctGpus) {
  JobRequest gang = job("gang", 4);
  gang.replicas = 3;
  Plan plan = schedule({gpu_node("a", 8), gpu_node("b", 8)}, {gang});
  const Placement* p = placement_of(plan, "gang");
  ASSERT_NE(p, nullptr) << reason_of(plan, "gang");
  ASSERT_EQ(p->replicas.size(), 3u);
  std::set<std::string> uuids;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(p->replicas[rank].rank, rank);
    EXPECT_EQ(p->replicas[rank].gpus.size(), 4u);
    for (const auto& g : p->replicas[rank].gpus) uuids.insert(g.uuid);
  }
  EXPECT_EQ(uuids.size(), 12u);
}

TEST(ClusterScheduler, PendingReasonNamesTheLargestFreeBlock) {
  NodeState x = with_used(gpu_node("node-x", 8), {0, 1, 2, 3});
  NodeState y = with_used(gpu_node("node-y", 8), {0, 1, 2, 3, 4, 5});
  Plan plan = schedule({y, x}, {job("big", 8, "A100")});
  EXPECT_EQ(reason_of(plan, "big"), "needs 8×A100 on one node; largest free block is 4 (node-x)");
}

TEST(ClusterScheduler, PendingReasonWithoutNodes) {
  Plan plan = schedule({}, {job("j", 1)});
  EXPECT_THAT(reason_of(plan, "j"), HasSubstr("no nodes registered"));
}

TEST(ClusterScheduler, TwoHalfGpuSharesFitOnOneGpuAndAThirdGoesToAnother) {
  JobRequest a = share("a", 500), b = share("b", 500), c = share("c", 500);
  b.created_at = 1;
  c.created_at = 2;
  Plan plan = schedule({gpu_node("n", 2)}, {a, b, c});
  ASSERT_EQ(plan.placements.size(), 3u);
  const auto& ga = placement_of(plan, "a")->replicas[0].gpus;
  const auto& gb = placement_of(plan, "b")->replicas[0].gpus;
  const auto& gc = placement_of(plan, "c")->replicas[0].gpus;
  ASSERT_EQ(ga.size(), 1u);
  EXPECT_EQ(ga[0].milli, 500);
  EXPECT_EQ(ga[0].uuid, gb[0].uuid);
  EXPECT_NE(gc[0].uuid, ga[0].uuid);
}

TEST(ClusterScheduler, ASharedGpuIsNotGivenOutWhole) {
  NodeState n = gpu_node("n", 1);
  n.gpus[0].used_milli = 300;
  Plan plan = schedule({n}, {job("whole", 1), share("part", 700)});
  EXPECT_EQ(placement_of(plan, "whole"), nullptr);
  EXPECT_NE(placement_of(plan, "part"), nullptr);
  plan = schedule({n}, {share("too-big", 800)});
  EXPECT_THAT(reason_of(plan, "too-big"), HasSubstr("800 milli"));
}

TEST(ClusterScheduler, UnschedulableNodesAreSkipped) {
  NodeState cordoned = gpu_node("cordoned", 8);
  cordoned.schedulable = false;
  Plan plan =
      schedule({cordoned, with_used(gpu_node("open", 8), {0, 1, 2, 3, 4, 5, 6})}, {job("j", 1)});
  ASSERT_NE(placement_of(plan, "j"), nullptr);
  EXPECT_EQ(placement_of(plan, "j")->replicas[0].node_id, "id-open");
  plan = schedule({cordoned}, {job("j", 1)});
  EXPECT_EQ(placement_of(plan, "j"), nullptr);
  EXPECT_THAT(reason_of(plan, "j"), HasSubstr("not schedulable"));
}

TEST(ClusterScheduler, CpuOnlyJobsNeedNoGpu) {
  NodeState cpu = gpu_node("cpu", 0);
  Plan plan = schedule({gpu_node("gpu", 8), cpu}, {job("etl", 0)});
  ASSERT_NE(placement_of(plan, "etl"), nullptr);
  EXPECT_TRUE(placement_of(plan, "etl")->replicas[0].gpus.empty());
  EXPECT_EQ(placement_of(plan, "etl")->replicas[0].node_id, "id-cpu")
      << "keeps GPU nodes for GPU jobs";
}

TEST(ClusterScheduler, ALongLivedSchedulerKeepsABoundedHistoryAndPlacesAsIfItKeptAll) {
  // Jobs sharing GPUs come and go on 8 nodes for thousands of passes: the nodes go through many
  // distinct states. What the scheduler keeps of them stays bounded, and it places every job as
  // a scheduler that keeps all of it does.
  std::vector<NodeState> nodes;
  for (int i = 0; i < 8; ++i) nodes.push_back(gpu_node("n" + std::to_string(i), 4));
  std::unique_ptr<Scheduler> trims, keeps;
  for (size_t at_least : {256, 0}) {
    PolicySettings settings;
    settings.activations_kept_at_least = at_least;
    auto created = create_scheduler(settings);
    ASSERT_TRUE(created.ok());
    add_nodes(**created, nodes);
    (at_least > 0 ? trims : keeps) = std::move(*created);
  }
  std::mt19937 rng(7);
  std::vector<std::string> running;
  int64_t most_kept = 0, kept_before = 0, placed = 0;
  bool fell = false;
  for (int step = 0; step < 12000; ++step) {
    JobRequest r = share("j" + std::to_string(step), 100 + 50 * static_cast<int>(rng() % 17));
    r.cpu_milli = 250 * static_cast<int64_t>(1 + rng() % 8);
    std::vector<Plan> plans;
    for (auto* s : {trims.get(), keeps.get()}) {
      ASSERT_TRUE(s->submit(r).ok());
      plans.push_back(s->schedule(step));
    }
    ASSERT_EQ(plans[0].placements.size(), plans[1].placements.size()) << r.job_id;
    for (size_t i = 0; i < plans[0].placements.size(); ++i) {
      const Placement &a = plans[0].placements[i], &b = plans[1].placements[i];
      ASSERT_EQ(a.job_id, b.job_id);
      ASSERT_EQ(a.replicas[0].node_id, b.replicas[0].node_id) << a.job_id;
      ASSERT_EQ(gpu_indices(a), gpu_indices(b)) << a.job_id;
      running.push_back(a.job_id);
      ++placed;
    }
    if (running.size() > 40 || rng() % 2 == 0) {
      const size_t at = rng() % running.size();
      for (auto* s : {trims.get(), keeps.get()}) s->finish(running[at]);
      running.erase(running.begin() + static_cast<long>(at));
    }
    const int64_t kept = trims->last_pass().activations_kept;
    most_kept = std::max(most_kept, kept);
    fell |= kept < kept_before;
    kept_before = kept;
  }
  EXPECT_GT(placed, 9000);
  EXPECT_TRUE(fell) << "the history was never trimmed";
  // At most twice what is kept after a trim: a lag of 256 × the classes alive (8 nodes: 8).
  EXPECT_LE(most_kept, 2 * 256 * 8 + 64);
  EXPECT_GT(keeps->last_pass().activations_kept, 2 * most_kept) << "(the test's premise)";
}

}  // namespace
}  // namespace gpucloud::sched

namespace gpucloud::sched {
namespace {

// One GPU, held by a running job; three jobs wait: the oldest declares no runtime, then a long
// one, then a short one. When the GPU frees, the queue policy says which starts.
std::string first_started(const std::string& queue_policy) {
  PolicySettings settings;
  settings.queue_policy = queue_policy;
  auto created = create_scheduler(settings);
  EXPECT_TRUE(created.ok());
  Scheduler& s = **created;
  s.upsert_node(gpu_node("n0", 1));
  JobRequest running = job("running", 1);
  EXPECT_TRUE(s.submit(running).ok());
  EXPECT_EQ(s.schedule(0).placements.size(), 1u);
  JobRequest unknown = job("no-runtime", 1), long_job = job("long", 1), short_job = job("short", 1);
  unknown.created_at = 1;
  long_job.created_at = 2;
  long_job.max_runtime_ms = 10 * 3'600'000;
  short_job.created_at = 3;
  short_job.max_runtime_ms = 3'600'000;
  for (const auto& j : {unknown, long_job, short_job}) EXPECT_TRUE(s.submit(j).ok());
  EXPECT_TRUE(s.schedule(10).placements.empty());
  s.finish("running");
  Plan plan = s.schedule(20);
  return plan.placements.size() == 1 ? plan.placements[0].job_id : "";
}

TEST(QueuePolicy, FifoStartsTheOldestJob) {
  EXPECT_EQ(first_started("fifo"), "no-runtime");
}

TEST(QueuePolicy, SjfStartsTheShortestDeclaredRuntimeFirst) {
  EXPECT_EQ(first_started("sjf"), "short");
}

TEST(QueuePolicy, SjfPrefersTheExpectedRuntimeToTheLimit) {
  PolicySettings settings;
  settings.queue_policy = "sjf";
  auto s = create_scheduler(settings).value();
  s->upsert_node(gpu_node("n0", 1));
  ASSERT_TRUE(s->submit(job("running", 1)).ok());
  s->schedule(0);
  JobRequest limited = job("limited", 1), estimated = job("estimated", 1);
  limited.max_runtime_ms = 3'600'000;  // may run an hour, says nothing more
  estimated.max_runtime_ms = 10 * 3'600'000;
  estimated.expected_runtime_ms = 600'000;  // expects ten minutes
  estimated.created_at = 1;
  ASSERT_TRUE(s->submit(limited).ok());
  ASSERT_TRUE(s->submit(estimated).ok());
  s->schedule(10);
  s->finish("running");
  Plan plan = s->schedule(20);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].job_id, "estimated");
}

TEST(QueuePolicy, AnUnknownQueuePolicyIsRefusedWithTheKnownOnes) {
  PolicySettings settings;
  settings.queue_policy = "lifo";
  auto created = create_scheduler(settings);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().message, "unknown queue policy 'lifo'; known: fifo, sjf, las");
}

TEST(QueuePolicy, LasThresholdsMustAscendAndBePositive) {
  PolicySettings settings;
  settings.queue_policy = "las";
  settings.las_thresholds_gpu_s = {3600, 600};
  ASSERT_FALSE(create_scheduler(settings).ok());
  EXPECT_THAT(create_scheduler(settings).error().message, HasSubstr("ascending"));
  settings.las_thresholds_gpu_s = {-1};
  EXPECT_THAT(create_scheduler(settings).error().message, HasSubstr("-1"));
  settings.las_thresholds_gpu_s = std::vector<double>(kMaxLasThresholds + 1, 1);
  EXPECT_THAT(create_scheduler(settings).error().message, HasSubstr("at most"));
  settings.las_thresholds_gpu_s = {60};
  settings.las_starvation_ms = -5;
  EXPECT_THAT(create_scheduler(settings).error().message, HasSubstr("negative"));
}

constexpr TimeMs kHour = 3'600'000;

std::unique_ptr<Scheduler> las_scheduler(int64_t starvation_ms = 0) {
  PolicySettings settings;
  settings.queue_policy = "las";
  settings.las_thresholds_gpu_s = {3600, 36000};  // levels: < 1, < 10, >= 10 GPU-hours
  settings.las_starvation_ms = starvation_ms;
  auto s = create_scheduler(settings).value();
  s->upsert_node(gpu_node("n0", 1));
  return s;
}

TEST(QueuePolicy, LasStartsTheJobWithTheLeastServiceFirst) {
  auto s = las_scheduler();
  ASSERT_TRUE(s->submit(job("running", 1)).ok());
  s->schedule(0);
  JobRequest resumed = job("resumed", 1), fresh = job("fresh", 1);
  resumed.attained_gpu_ms = 2 * kHour;  // ran two GPU-hours before it was preempted
  fresh.created_at = 5;                 // newer
  ASSERT_TRUE(s->submit(resumed).ok());
  ASSERT_TRUE(s->submit(fresh).ok());
  s->schedule(10);
  s->finish("running");
  Plan plan = s->schedule(20);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].job_id, "fresh");
}

TEST(QueuePolicy, LasPreemptsAJobThatDropsALevelWhileAFresherJobWaits) {
  auto s = las_scheduler();
  ASSERT_TRUE(s->submit(job("long", 1)).ok());
  s->schedule(0);
  JobRequest fresh = job("fresh", 1);
  fresh.created_at = 1000;
  ASSERT_TRUE(s->submit(fresh).ok());
  Plan plan = s->schedule(1000);
  EXPECT_TRUE(plan.preemptions.empty()) << "both are at the first level: first come, first served";
  // One GPU for one hour: "long" reaches the first threshold then.
  ASSERT_EQ(s->next_timed_decision(), std::optional<TimeMs>(kHour));
  plan = s->schedule(kHour - 1);
  EXPECT_TRUE(plan.preemptions.empty());
  plan = s->schedule(kHour);
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].job_id, "long");
  EXPECT_THAT(plan.preemptions[0].reason, HasSubstr("priority 100, service level 1 of 3"));
  // The caller stops it and queues it again with the service it received.
  s->finish("long");
  JobRequest again = job("long", 1);
  again.attained_gpu_ms = kHour;
  ASSERT_TRUE(s->submit(again).ok());
  plan = s->schedule(kHour + 100);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].job_id, "fresh");
  EXPECT_EQ(s->next_timed_decision(), std::optional<TimeMs>(2 * kHour + 100));
}

TEST(QueuePolicy, LasKeepsALevelTwoJobRunningWhenNobodyWaits) {
  auto s = las_scheduler();
  ASSERT_TRUE(s->submit(job("long", 1)).ok());
  s->schedule(0);
  Plan plan = s->schedule(kHour);
  EXPECT_TRUE(plan.preemptions.empty());
  EXPECT_EQ(s->next_timed_decision(), std::optional<TimeMs>(10 * kHour));
}

TEST(QueuePolicy, LasStarvationGuardPutsALongWaitingJobBeforeNewerFirstLevelJobs) {
  auto s = las_scheduler(/*starvation_ms=*/2 * kHour);
  ASSERT_TRUE(s->submit(job("first", 1)).ok());
  s->schedule(0);
  JobRequest resumed = job("resumed", 1);
  resumed.attained_gpu_ms = 5 * kHour;  // level 2
  ASSERT_TRUE(s->submit(resumed).ok());
  s->schedule(0);
  EXPECT_EQ(s->next_timed_decision(), std::optional<TimeMs>(kHour)) << "first's crossing";
  JobRequest later = job("later", 1);
  later.created_at = 100;
  ASSERT_TRUE(s->submit(later).ok());
  s->schedule(100);
  s->finish("first");
  Plan plan = s->schedule(200);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].job_id, "later") << "less service goes first";
  // Two hours after it queued, "resumed" is promoted to the first level: it preempts "later",
  // which has had an hour of GPU by then and dropped a level.
  plan = s->schedule(2 * kHour);
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].job_id, "later");
  s->finish("later");
  JobRequest newest = job("newest", 1);
  newest.created_at = 2 * kHour;
  ASSERT_TRUE(s->submit(newest).ok());
  plan = s->schedule(2 * kHour + 1);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].job_id, "resumed") << "older than every other first-level job";
}

}  // namespace
}  // namespace gpucloud::sched
