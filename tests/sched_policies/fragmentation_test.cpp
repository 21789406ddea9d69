#include "sched/policies/fragmentation.h"

#include <gtest/gtest.h>

#include <random>

namespace gpucloud::sched {
namespace {

NodeShape shape(std::vector<int> free, int64_t cpu_free, int model = 0) {
  ShareNode n = ShareNode::make("n", model, static_cast<int>(free.size()), cpu_free, 1 << 20);
  for (size_t i = 0; i < free.size(); ++i) n.gpu_free[i] = static_cast<int16_t>(free[i]);
  return NodeShape::of(n);
}

WorkloadProfile three_types() {
  WorkloadProfile p;
  p.types = {{0, 0, 0, 0, 0.2}, {4000, 1, 500, 0, 0.5}, {8000, 1, 1000, 0, 0.3}};
  return p;
}

TEST(FragmentationTest, PerTypeRules) {
  NodeShape s = shape({1000, 300}, 16000);
  EXPECT_EQ(type_fragmentation(s, {0, 0, 0, 0}), 1300);          // CPU-only: all free milli
  EXPECT_EQ(type_fragmentation(s, {4000, 1, 500, 0}), 300);      // GPUs with < 500 free
  EXPECT_EQ(type_fragmentation(s, {4000, 1, 200, 0}), 0);        // every GPU can take 200
  EXPECT_EQ(type_fragmentation(s, {4000, 2, 1000, 0}), 1300);    // too few whole GPUs
  EXPECT_EQ(type_fragmentation(s, {32000, 1, 500, 0}), 1300);    // not enough CPU
  EXPECT_EQ(type_fragmentation(s, {4000, 1, 500, 0b10}), 1300);  // wrong GPU model
  EXPECT_EQ(type_fragmentation(shape({}, 16000), {4000, 1, 500, 0}), 0);  // no GPUs
}

TEST(FragmentationTest, NodeFragmentationWeightsByFrequency) {
  WorkloadProfile p = three_types();
  EXPECT_DOUBLE_EQ(node_fragmentation(shape({1000, 300}, 16000), p), 500);
  EXPECT_DOUBLE_EQ(node_fragmentation(shape({1000, 300}, 2000), p), 1300);
  EXPECT_DOUBLE_EQ(node_fragmentation(shape({1000, 1000}, 16000), p), 400);  // 0.2·2000
  EXPECT_DOUBLE_EQ(node_fragmentation(shape({0, 0}, 16000), p), 0);
}

TEST(FragmentationTest, TheCacheAnswersAsTheMeasureDoesWhenShapesShareSlots) {
  // Random shapes, many asked again, more distinct ones than the cache has slots: every answer
  // is node_fragmentation's, whichever shape held the slot before.
  WorkloadProfile p = three_types();
  FragmentationCache cache;
  std::mt19937 rng(5);
  const size_t distinct = 4 * FragmentationCache::kSlots;
  for (size_t i = 0; i < 3 * distinct; ++i) {
    const size_t id = i % 3 == 0 ? i / 3 : rng() % (i / 3 + 1);  // new, or seen before
    std::vector<int> free = {static_cast<int>(id % 1001), static_cast<int>((id / 1001) % 1001)};
    NodeShape s = shape(free, 3000 * static_cast<int64_t>(id % 7));
    ASSERT_EQ(cache.of(s, p), node_fragmentation(s, p)) << "shape " << id;
  }
}

TEST(FragmentationTest, ProfileTakesMostFrequentTypesUpToCoverage) {
  std::vector<PodRequest> pods;
  for (int i = 0; i < 6; ++i) pods.push_back({1000, 5, 1, 1000});  // memory is not part of a type
  for (int i = 0; i < 3; ++i) pods.push_back({2000, 0, 1, 500});
  pods.push_back({4000, 0, 0, 0});
  WorkloadProfile p = WorkloadProfile::from_pods(pods, 0.85);
  ASSERT_EQ(p.types.size(), 2u);  // 60 % then 90 % ≥ 85 %: the rare CPU-only type is left out
  EXPECT_EQ(p.types[0].cpu_milli, 1000);
  EXPECT_DOUBLE_EQ(p.types[0].freq, 6.0 / 9);
  EXPECT_DOUBLE_EQ(p.types[1].freq, 3.0 / 9);
  EXPECT_EQ(WorkloadProfile::from_pods(pods, 0.95).types.size(), 3u);
}

}  // namespace
}  // namespace gpucloud::sched
