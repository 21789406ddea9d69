#include "sched/policies/share_placer.h"

#include <gtest/gtest.h>

namespace gpucloud::sched {
namespace {

ShareNode node_with(std::vector<int> free, int64_t cpu = 16000) {
  ShareNode n = ShareNode::make("n", 0, static_cast<int>(free.size()), cpu, 65536);
  for (size_t i = 0; i < free.size(); ++i) n.gpu_free[i] = static_cast<int16_t>(free[i]);
  return n;
}

WorkloadProfile three_types() {
  WorkloadProfile p;
  p.types = {{0, 0, 0, 0, 0.2}, {4000, 1, 500, 0, 0.5}, {8000, 1, 1000, 0, 0.3}};
  return p;
}

double sum_of_f(const SharePlacer& placer, const WorkloadProfile& p) {
  double f = 0;
  for (const ShareNode& n : placer.nodes()) f += node_fragmentation(NodeShape::of(n), p);
  return f;
}

TEST(SharePlacerTest, TiesGoToTheSeedsNodeOrder) {
  WorkloadProfile p = three_types();
  for (Policy policy : {Policy::kDotProduct, Policy::kBestFit, Policy::kFgd, Policy::kPacking}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SharePlacer placer({node_with({1000}), node_with({1000}), node_with({1000})}, p, policy,
                         seed);
      auto placed = placer.place({1000, 0, 1, 1000});
      ASSERT_TRUE(placed.has_value());
      EXPECT_EQ(placer.tie_rank(placed->node), 0) << policy_name(policy) << " seed " << seed;
    }
  }
}

TEST(SharePlacerTest, BestFitTakesTheFullestNode) {
  WorkloadProfile p = three_types();
  SharePlacer placer({node_with({1000, 1000}), node_with({1000, 400}), node_with({1000, 1000})}, p,
                     Policy::kBestFit, 7);
  auto placed = placer.place({1000, 0, 1, 300});
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->node, 1);
  EXPECT_EQ(placed->gpus, std::vector<int>{1});  // the tightest GPU that fits
  EXPECT_EQ(placer.nodes()[1].gpu_free[1], 100);
}

TEST(SharePlacerTest, FgdTakesTheGpuThatFragmentsLeast) {
  WorkloadProfile p = three_types();
  SharePlacer placer({node_with({1000, 300})}, p, Policy::kFgd, 1);
  auto placed = placer.place({1000, 0, 1, 200});
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->gpus, std::vector<int>{1});
  EXPECT_DOUBLE_EQ(placer.fragmentation(), 300);
}

TEST(SharePlacerTest, APodThatFitsNowhereChangesNothing) {
  WorkloadProfile p = three_types();
  SharePlacer placer({node_with({1000, 300}), node_with({})}, p, Policy::kFgd, 1);
  double f = placer.fragmentation();
  EXPECT_FALSE(placer.place({1000, 0, 2, 1000}).has_value());
  EXPECT_FALSE(placer.place({17000, 0, 0, 0}).has_value());
  EXPECT_DOUBLE_EQ(placer.fragmentation(), f);
  EXPECT_EQ(placer.free_gpu_milli(), 1300);
}

TEST(SharePlacerTest, KeepsFragmentationAndFreeMilliInStep) {
  WorkloadProfile p = three_types();
  for (Policy policy : fgd_experiment_policies()) {
    SharePlacer placer({node_with({1000, 1000, 1000, 1000}, 32000), node_with({1000, 1000})}, p,
                       policy, 5);
    std::vector<PodRequest> pods{{4000, 0, 1, 300}, {2000, 0, 0, 0},   {4000, 0, 2, 1000},
                                 {4000, 0, 1, 600}, {1000, 0, 1, 100}, {4000, 0, 1, 1000}};
    int64_t used = 0;
    for (const PodRequest& pod : pods)
      if (placer.place(pod)) used += pod.total_gpu_milli();
    EXPECT_EQ(placer.free_gpu_milli(), 6000 - used) << policy_name(policy);
    EXPECT_NEAR(placer.fragmentation(), sum_of_f(placer, p), 1e-6) << policy_name(policy);
  }
}

TEST(SharePlacerTest, RandomIsDeterministicPerSeed) {
  WorkloadProfile p = three_types();
  auto run = [&](uint64_t seed) {
    std::vector<ShareNode> nodes;
    for (int i = 0; i < 20; ++i) nodes.push_back(node_with({1000, 1000, 1000, 1000}, 64000));
    SharePlacer placer(nodes, p, Policy::kRandom, seed);
    std::vector<std::pair<int, int>> where;
    for (int i = 0; i < 30; ++i) {
      auto placed = placer.place({1000, 0, 1, 250});
      where.emplace_back(placed->node, placed->gpus[0]);
    }
    return where;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

}  // namespace
}  // namespace gpucloud::sched
