#include "sched/policies/share_node.h"

#include <gtest/gtest.h>

namespace gpucloud::sched {
namespace {

ShareNode node_with(std::vector<int> free, int64_t cpu = 16000, int model = 0) {
  ShareNode n = ShareNode::make("n", model, static_cast<int>(free.size()), cpu, 65536);
  for (size_t i = 0; i < free.size(); ++i) n.gpu_free[i] = static_cast<int16_t>(free[i]);
  return n;
}

TEST(ShareNodeTest, PodKinds) {
  EXPECT_EQ(pod_kind({1000, 0, 0, 0}), PodKind::kCpuOnly);
  EXPECT_EQ(pod_kind({1000, 0, 1, 500}), PodKind::kShare);
  EXPECT_EQ(pod_kind({1000, 0, 1, 1000}), PodKind::kWholeGpus);
  EXPECT_EQ(pod_kind({1000, 0, 4, 1000}), PodKind::kWholeGpus);
}

TEST(ShareNodeTest, FitChecksCpuMemoryModelAndGpus) {
  ShareNode n = node_with({1000, 300});
  EXPECT_TRUE(fits(n, {16000, 65536, 1, 1000}));
  EXPECT_FALSE(fits(n, {16001, 0, 0, 0}));     // CPU
  EXPECT_FALSE(fits(n, {1000, 65537, 0, 0}));  // memory
  EXPECT_FALSE(fits(n, {1000, 0, 2, 1000}));   // two whole GPUs: only one free
  EXPECT_TRUE(fits(n, {1000, 0, 1, 300}));     // the 300 GPU takes a 300 share
  EXPECT_FALSE(fits(node_with({250, 300}), {1000, 0, 1, 301}));
  EXPECT_FALSE(fits(n, {1000, 0, 1, 500, /*mask=*/0b10}));  // model 1 only
  EXPECT_TRUE(fits(n, {1000, 0, 1, 500, /*mask=*/0b11}));
  EXPECT_FALSE(fits(node_with({}), {1000, 0, 1, 100}));  // no GPUs
}

TEST(ShareNodeTest, DefaultChoiceTakesTightestShareAndLowestWholeGpus) {
  ShareNode n = node_with({1000, 600, 400, 600, 1000, 1000});
  EXPECT_EQ(default_gpu_choice(n, {0, 0, 1, 500}), std::vector<int>{1});  // 600, lowest index
  EXPECT_EQ(default_gpu_choice(n, {0, 0, 1, 400}), std::vector<int>{2});
  EXPECT_EQ(default_gpu_choice(n, {0, 0, 2, 1000}), (std::vector<int>{0, 4}));
  EXPECT_TRUE(default_gpu_choice(n, {0, 0, 4, 1000}).empty());
}

TEST(ShareNodeTest, PlacePodUpdatesUseAndKinds) {
  ShareNode n = node_with({1000, 1000});
  place_pod(n, {4000, 1024, 1, 300}, {1});
  place_pod(n, {2000, 0, 1, 1000}, {0});
  EXPECT_EQ(n.cpu_used, 6000);
  EXPECT_EQ(n.memory_used, 1024);
  EXPECT_EQ(n.gpu_free[0], 0);
  EXPECT_EQ(n.gpu_free[1], 700);
  EXPECT_EQ(n.share_pods, 1);
  EXPECT_EQ(n.whole_pods, 1);
  NodeShape s = NodeShape::of(n);
  EXPECT_EQ(s.cpu_free, 10000);
  EXPECT_EQ(s.gpu_free[0], 0);
  EXPECT_EQ(s.gpu_free[1], 700);
  EXPECT_EQ(s.kinds, NodeShape::kRunsShare | NodeShape::kRunsWhole);
}

TEST(ShareNodeTest, ShapesOfNodesInTheSameStateAreEqual) {
  ShareNode a = node_with({1000, 300, 1000});
  ShareNode b = node_with({300, 1000, 1000});
  EXPECT_EQ(NodeShape::of(a), NodeShape::of(b));
  EXPECT_EQ(NodeShapeHash{}(NodeShape::of(a)), NodeShapeHash{}(NodeShape::of(b)));
  EXPECT_FALSE(NodeShape::of(a) == NodeShape::of(node_with({300, 1000, 1000}, 8000)));
}

}  // namespace
}  // namespace gpucloud::sched
