#include "sched/policies/default_policy.h"

#include <gtest/gtest.h>

#include "sched/policies/policy_scores.h"
#include "sched/policies/share_placer.h"

namespace gpucloud::sched {
namespace {

ShareNode node_with(std::vector<int> free, int64_t cpu = 16000) {
  ShareNode n = ShareNode::make("n", 0, static_cast<int>(free.size()), cpu, 65536);
  for (size_t i = 0; i < free.size(); ++i) n.gpu_free[i] = static_cast<int16_t>(free[i]);
  return n;
}

NodeShape shape(std::vector<int> free, int64_t cpu_free) {
  return NodeShape::of(node_with(std::move(free), cpu_free));
}

/// 20 % CPU-only pods; GPU types ask for 4000 CPU per 500 milli and 8000 CPU per 1000 milli.
WorkloadProfile three_types() {
  WorkloadProfile p;
  p.types = {{2000, 0, 0, 0, 0.2}, {4000, 1, 500, 0, 0.5}, {8000, 1, 1000, 0, 0.3}};
  return p;
}

TEST(DefaultPolicyTest, GpuPerCpuIsTheProfilesAverageRatio) {
  // (0.5·500 + 0.3·1000) / (0.5·4000 + 0.3·8000) = 550 / 4400; CPU-only types do not count.
  EXPECT_DOUBLE_EQ(gpu_milli_per_cpu_milli(three_types()), 0.125);
  WorkloadProfile cpu_only;
  cpu_only.types = {{2000, 0, 0, 0, 1.0}};
  EXPECT_DOUBLE_EQ(gpu_milli_per_cpu_milli(cpu_only), 0);
}

TEST(DefaultPolicyTest, StrandedIsFreeGpuTheFreeCpuCannotFeed) {
  EXPECT_DOUBLE_EQ(stranded_gpu_milli(shape({1000, 1000}, 16000), 0.125), 0);  // feeds 2000
  EXPECT_DOUBLE_EQ(stranded_gpu_milli(shape({1000, 1000}, 8000), 0.125), 1000);
  EXPECT_DOUBLE_EQ(stranded_gpu_milli(shape({1000, 300}, 0), 0.125), 1300);
  EXPECT_DOUBLE_EQ(stranded_gpu_milli(shape({0, 0}, 0), 0.125), 0);
}

TEST(DefaultPolicyTest, ScoreIsFragmentationGradientMinusStranding) {
  WorkloadProfile p = three_types();
  double r = gpu_milli_per_cpu_milli(p);
  NodeShape node = shape({1000, 1000}, 16000);
  double f = node_fragmentation(node, p);
  PodRequest cpu_pod{8000, 0, 0, 0};
  NodeShape after = shape_after_whole(node, cpu_pod);
  double expected = (f - node_fragmentation(after, p)) -
                    (stranded_gpu_milli(after, r) - stranded_gpu_milli(node, r));
  EXPECT_NEAR(default_score(node, cpu_pod, p, f, r), expected, 1e-6);
  // Taking half the CPU strands 1000 milli of GPU: the score charges for it.
  EXPECT_NEAR(stranded_gpu_milli(after, r) - stranded_gpu_milli(node, r), 1000, 1e-9);
}

TEST(DefaultPolicyTest, ShareGoesToTheGpuThatFragmentsLeastThenTheTightest) {
  WorkloadProfile p = three_types();
  double r = gpu_milli_per_cpu_milli(p);
  ShareNode node = node_with({1000, 500, 700}, 64000);
  double f = node_fragmentation(NodeShape::of(node), p);
  // 500 on the GPU with exactly 500 free leaves no partial GPU behind.
  EXPECT_EQ(default_share_gpu(node, {4000, 0, 1, 500}, p, f, r), 1);
  // 100 on the 500-free GPU would leave 400, too little for the 500 type: it goes to the
  // 700-free GPU, which keeps 600 for it.
  EXPECT_EQ(default_share_gpu(node, {1000, 0, 1, 100}, p, f, r), 2);
  EXPECT_EQ(default_share_gpu(node, {1000, 0, 1, 800}, p, f, r), 0);
  // Equal scores (both GPUs keep room for the 500 type): the tightest GPU wins.
  ShareNode tie = node_with({1000, 700, 600}, 64000);
  double f_tie = node_fragmentation(NodeShape::of(tie), p);
  EXPECT_EQ(default_share_gpu(tie, {1000, 0, 1, 100}, p, f_tie, r), 2);
  ShareNode full = node_with({100, 0}, 64000);
  EXPECT_EQ(default_share_gpu(full, {1000, 0, 1, 500}, p, f, r), -1);
}

TEST(DefaultPolicyTest, CpuHeavyPodsAvoidNodesWhoseGpusTheyWouldStrand) {
  WorkloadProfile p = three_types();
  // Node 0: 8 free GPUs and 64 CPUs (exactly fed at 8 CPUs per GPU); node 1: no free GPU.
  // A 32-CPU CPU-only pod on node 0 would strand 4 GPUs; FGD sees no fragmentation either
  // way (every type still fits) and leaves it to the tie-break order.
  std::vector<ShareNode> nodes{node_with(std::vector<int>(8, 1000), 64000),
                               node_with({0, 0}, 64000)};
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    SharePlacer placer(nodes, p, Policy::kDefault, seed);
    auto placed = placer.place({32000, 0, 0, 0});
    ASSERT_TRUE(placed.has_value());
    EXPECT_EQ(placed->node, 1) << "seed " << seed;
  }
}

TEST(DefaultPolicyTest, KeepsAnIdleNodeWholeForAWholeGpuPod) {
  WorkloadProfile p = three_types();
  SharePlacer placer({node_with({1000, 1000}, 64000), node_with({1000, 400}, 64000)}, p,
                     Policy::kDefault, 1);
  auto placed = placer.place({4000, 0, 1, 400});
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->node, 1);
  EXPECT_EQ(placed->gpus, std::vector<int>{1});
  EXPECT_EQ(placer.nodes()[1].gpu_free[1], 0);
}

TEST(DefaultPolicyTest, PodsLimitedToAScarceModelStillFindRoom) {
  // Ten 2-GPU nodes of model 0 and one of model 1. A fifth of the workload's pods need model 1
  // but are too rare for the profile F is computed with, so F sees every node alike. After 21
  // unlimited 1-GPU pods on the 22 GPUs, the model-1 node must still have a GPU for a
  // model-1 pod, whatever the tie-break order.
  WorkloadProfile typical;
  typical.types = {{8000, 1, 1000, 0, 1.0}};
  WorkloadProfile all_types;
  all_types.types = {{8000, 1, 1000, 0, 0.8}, {8000, 1, 1000, uint64_t{1} << 1, 0.2}};
  std::vector<ShareNode> nodes(10, node_with({1000, 1000}, 64000));
  nodes.push_back(ShareNode::make("scarce", 1, 2, 64000, 65536));
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
    SharePlacer placer(nodes, typical, Policy::kDefault, seed);
    placer.guard_scarce_types(all_types);
    for (int i = 0; i < 21; ++i) ASSERT_TRUE(placer.place({8000, 0, 1, 1000}).has_value());
    auto limited = placer.place({8000, 0, 1, 1000, uint64_t{1} << 1});
    ASSERT_TRUE(limited.has_value()) << "seed " << seed;
    EXPECT_EQ(limited->node, 10);
  }
}

TEST(DefaultPolicyTest, SamePlanForTheSameSeedAndBookkeepingInStep) {
  WorkloadProfile p = three_types();
  std::vector<ShareNode> nodes;
  for (int i = 0; i < 6; ++i)
    nodes.push_back(node_with(std::vector<int>(i % 2 == 0 ? 4 : 2, 1000), 32000));
  std::vector<PodRequest> pods{{4000, 0, 1, 500},  {2000, 0, 0, 0},    {8000, 0, 1, 1000},
                               {4000, 0, 2, 1000}, {1000, 0, 1, 300},  {4000, 0, 1, 500},
                               {6000, 0, 0, 0},    {8000, 0, 4, 1000}, {4000, 0, 1, 700}};
  auto run = [&](uint64_t seed) {
    SharePlacer placer(nodes, p, Policy::kDefault, seed);
    std::vector<std::pair<int, std::vector<int>>> out;
    int64_t used = 0;
    for (const PodRequest& pod : pods) {
      auto placed = placer.place(pod);
      out.emplace_back(placed ? placed->node : -1, placed ? placed->gpus : std::vector<int>{});
      if (placed) used += pod.total_gpu_milli();
    }
    EXPECT_EQ(placer.free_gpu_milli(), 18000 - used);
    double f = 0;
    for (const ShareNode& n : placer.nodes()) {
      f += node_fragmentation(NodeShape::of(n), p);
      EXPECT_LE(n.cpu_used, n.cpu_milli);
      for (int g = 0; g < n.num_gpus; ++g) EXPECT_GE(n.gpu_free[g], 0);
    }
    EXPECT_NEAR(placer.fragmentation(), f, 1e-6);
    return out;
  };
  EXPECT_EQ(run(7), run(7));
}

}  // namespace
}  // namespace gpucloud::sched
