#include "sched/policies/policy_scores.h"

#include <gtest/gtest.h>

namespace gpucloud::sched {
namespace {

NodeShape shape(std::vector<int> free, int64_t cpu_free, uint8_t kinds = 0) {
  ShareNode n = ShareNode::make("n", 0, static_cast<int>(free.size()), cpu_free, 1 << 20);
  for (size_t i = 0; i < free.size(); ++i) n.gpu_free[i] = static_cast<int16_t>(free[i]);
  NodeShape s = NodeShape::of(n);
  s.kinds = kinds;
  return s;
}

const ScoreNormalizers kNorm;  // MaxCpu 128000, MaxGpu 8000

TEST(PolicyScoresTest, NamesRoundTrip) {
  for (Policy p : fgd_experiment_policies()) EXPECT_EQ(parse_policy(policy_name(p)), p);
  EXPECT_EQ(parse_policy("default"), Policy::kDefault);
  EXPECT_EQ(policy_name(Policy::kDefault), "default");
  EXPECT_FALSE(parse_policy("fgd2").has_value());
  EXPECT_EQ(fgd_experiment_policies().size(), 6u);
}

TEST(PolicyScoresTest, DotProductTruncates) {
  // 100·(1 − (64000/128000·8000/128000 + 2000/8000·500/8000)/2) = 97.656 → 97
  EXPECT_EQ(dot_product_score(shape({1000, 1000}, 64000), {8000, 0, 1, 500}, kNorm), 97);
  // 100·(1 − (1·1 + 1·1)/2) = 0: a full-size pod on a full-size free node
  EXPECT_EQ(
      dot_product_score(shape(std::vector<int>(8, 1000), 128000), {128000, 0, 8, 1000}, kNorm), 0);
}

TEST(PolicyScoresTest, ClusteringBonusByKind) {
  PodRequest share{1000, 0, 1, 200}, whole{1000, 0, 1, 1000}, cpu{1000, 0, 0, 0};
  // 25·(8000 − 1400)/8000 = 20.6 → 20 (integer division)
  EXPECT_EQ(clustering_score(shape({400, 1000}, 8000, NodeShape::kRunsShare), share, kNorm), 95);
  EXPECT_EQ(clustering_score(shape({400, 1000}, 8000, NodeShape::kRunsShare), whole, kNorm), 20);
  EXPECT_EQ(clustering_score(shape({400, 1000}, 8000, 3), share, kNorm), 70);
  // an empty node: 25·6000/8000 = 18.75 → 18, plus 25 for running no GPU pods
  EXPECT_EQ(clustering_score(shape({1000, 1000}, 8000), whole, kNorm), 43);
  EXPECT_EQ(clustering_score(shape({400, 1000}, 8000, 3), cpu, kNorm), 0);
}

TEST(PolicyScoresTest, PackingPrefersPartlyUsedNodes) {
  PodRequest cpu{1000, 0, 0, 0};
  EXPECT_EQ(packing_score(shape(std::vector<int>(8, 1000), 8000), {0, 0, 1, 500}), 25);
  EXPECT_EQ(packing_score(shape({1000, 1000}, 8000), {0, 0, 1, 500}), 31);
  // the GPU it would take is the 700 one: 100 − ⌊700·100/1000⌋/10 = 93
  EXPECT_EQ(packing_score(shape({300, 700, 1000, 1000}, 8000), {0, 0, 1, 500}), 93);
  // ⌊655·100/1000⌋ = 65, 65/10 = 6 → 94
  EXPECT_EQ(packing_score(shape({300, 655, 1000}, 8000), {0, 0, 1, 500}), 94);
  // only a fully free GPU fits: max(50 − 1, 33)
  EXPECT_EQ(packing_score(shape({300, 700, 1000, 1000}, 8000), {0, 0, 1, 800}), 49);
  EXPECT_EQ(packing_score(shape({300, 700, 1000, 1000}, 8000), {0, 0, 2, 1000}), 48);
  EXPECT_EQ(packing_score(shape({300, 700}, 8000), cpu), 0);
}

TEST(PolicyScoresTest, BestFitRawAndNormalisation) {
  // 100·(1 − [0.5·56000/128000 + 0.5·1000/8000]) = 71.875 → 71
  EXPECT_EQ(best_fit_raw_score(shape({1000, 1000}, 64000), {8000, 0, 1, 1000}, kNorm), 71);
  EXPECT_EQ(normalize_min_max(71, 50, 90), 52);  // 21·100/40 = 52.5 → 52
  EXPECT_EQ(normalize_min_max(50, 50, 90), 0);
  EXPECT_EQ(normalize_min_max(90, 50, 90), 100);
  EXPECT_EQ(normalize_min_max(7, 7, 7), 100);
}

WorkloadProfile three_types() {
  WorkloadProfile p;
  p.types = {{0, 0, 0, 0, 0.2}, {4000, 1, 500, 0, 0.5}, {8000, 1, 1000, 0, 0.3}};
  return p;
}

TEST(PolicyScoresTest, FgdScoresTheBestGpuForAShare) {
  WorkloadProfile p = three_types();
  NodeShape s = shape({1000, 300}, 16000);
  double f = node_fragmentation(s, p);
  ASSERT_DOUBLE_EQ(f, 500);
  // on the 300 GPU: F after 300, 100·sigmoid(0.2) = 54.98 → 54; on the 1000 one: 45
  EXPECT_EQ(fgd_score(s, {1000, 0, 1, 200}, p, f), 54);
  NodeShape unsorted = shape({1000, 300}, 16000);
  std::swap(unsorted.gpu_free[0], unsorted.gpu_free[1]);  // [1000, 300] in node order
  EXPECT_EQ(fgd_share_gpu_score(unsorted, 0, {1000, 0, 1, 200}, p, f), 45);
  EXPECT_EQ(fgd_share_gpu_score(unsorted, 1, {1000, 0, 1, 200}, p, f), 54);
  EXPECT_EQ(fgd_share_gpu_score(unsorted, 1, {1000, 0, 1, 400}, p, f), -1);
}

TEST(PolicyScoresTest, FgdWholeGpuPod) {
  WorkloadProfile p = three_types();
  NodeShape s = shape({1000, 300}, 16000);
  // after: [0, 300], CPU 8000 left: F = 0.2·300 + 0.5·300 + 0.3·300 = 300 → sigmoid(0.2) → 54
  EXPECT_EQ(fgd_score(s, {8000, 0, 1, 1000}, p, 500), 54);
  NodeShape after = shape_after_whole(s, {8000, 0, 1, 1000});
  EXPECT_EQ(after.cpu_free, 8000);
  EXPECT_EQ(after.free_gpu_milli(), 300);
}

}  // namespace
}  // namespace gpucloud::sched
