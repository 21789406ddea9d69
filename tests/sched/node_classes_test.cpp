// NodeClassIndex: classes are exact node states; an emptied class frees its state but keeps its id.
#include "sched/node_classes.h"

#include <gtest/gtest.h>

#include "cluster.h"

namespace gpucloud::sched {
namespace {

using testing::gpu_node;

NodeState with_use(NodeState node, int64_t cpu_used, int gpu0_milli) {
  node.cpu_used_milli = cpu_used;
  node.gpus[0].used_milli = gpu0_milli;
  return node;
}

TEST(NodeClassIndex, AStateSeenAgainGetsTheIdItHadAfterItsClassEmptied) {
  NodeClassIndex index;
  NodeState idle = gpu_node("a", 8);
  index.assign(0, idle, 0, 0);
  const int idle_id = index.class_of(0);
  index.assign(0, with_use(idle, 4000, 1000), 0, 1);
  EXPECT_NE(index.class_of(0), idle_id);
  EXPECT_TRUE(index.get(idle_id).members.empty());
  EXPECT_EQ(index.member_count(idle_id), 0);

  // Another node of the same kind enters the idle state: the class it had, made again.
  index.assign(1, gpu_node("b", 8), 0, 0);
  EXPECT_EQ(index.class_of(1), idle_id);
  EXPECT_EQ(index.get(idle_id).members, std::vector<int>{1});
  EXPECT_EQ(index.get(idle_id).free_gpus, 8);
  EXPECT_EQ(index.get(idle_id).state.name, "b");
  EXPECT_EQ(index.summary(idle_id).free_gpus, 8);
}

TEST(NodeClassIndex, HoldsTheStatesOfClassesWithNodesOnly) {
  NodeClassIndex index;
  NodeState node = gpu_node("a", 8);
  for (int step = 0; step < 1000; ++step)
    index.assign(0, with_use(node, 100 * step, step % 1000), 0, step > 0 ? 1 : 0);
  EXPECT_EQ(index.size(), 1000u);  // every state seen has an id
  EXPECT_EQ(index.held(), 1u);     // only the node's current state is held
  EXPECT_EQ(index.active().size(), 1u);
  EXPECT_EQ(index.activation_count(), 1000u);
}

TEST(NodeClassIndex, AnActivationIsLoggedAtTheLevelOfWhatTheClassOffers) {
  NodeClassIndex index;
  NodeState node = gpu_node("a", 2);
  index.assign(0, node, 0, 0);  // two whole GPUs free: level 11
  node.gpus[0].used_milli = 1000;
  node.gpus[1].used_milli = 550;  // 450 milli free on its best GPU: level 4
  index.assign(0, node, 1, 1);
  EXPECT_EQ(index.activations(11).size(), 1u);
  EXPECT_EQ(index.activations(4).size(), 1u);
  EXPECT_EQ(index.activation_count(), 2u);
}

TEST(NodeClassIndex, TrimmedActivationsKeepTheirPlaceInTheLog) {
  NodeClassIndex index;
  NodeState node = gpu_node("a", 2);
  node.gpus[0].used_milli = 1000;
  for (int step = 0; step < 5; ++step) {  // 5 states with 1 whole GPU free: level 10
    node.cpu_used_milli = 100 * step;
    index.assign(0, node, 0, 1);
  }
  index.trim_activations(10, 3);
  EXPECT_EQ(index.activation_base(10), 3u);
  EXPECT_EQ(index.activation_end(10), 5u);
  ASSERT_EQ(index.activations(10).size(), 2u);
  EXPECT_EQ(index.activations(10)[0].class_id, 3);  // the 4th activation, first of those kept
  EXPECT_EQ(index.activation_count(), 2u);
  index.trim_activations(10, 2);  // before the base: nothing to drop
  EXPECT_EQ(index.activation_count(), 2u);
  index.trim_activations(10, 99);  // past the end: all of them
  EXPECT_EQ(index.activation_base(10), 5u);
  EXPECT_EQ(index.activation_count(), 0u);
  node.cpu_used_milli = 700;
  index.assign(0, node, 0, 1);
  EXPECT_EQ(index.activation_end(10), 6u);
  EXPECT_EQ(index.activations(10).size(), 1u);
}

TEST(NodeClassIndex, AnActivationReadsAsEmptiedOnceItsClassEmptiesAndTheNextIsLive) {
  NodeClassIndex index;
  NodeState node = gpu_node("a", 2);
  node.gpus[0].used_milli = 1000;  // 1 whole GPU free: level 10
  index.assign(0, node, 0, 1);     // class 0
  index.assign(1, node, 0, 1);     // a second node of class 0: no new activation
  ASSERT_EQ(index.activations(10).size(), 1u);
  node.cpu_used_milli = 100;
  index.assign(0, node, 0, 1);  // class 1; class 0 keeps node 1
  EXPECT_FALSE(NodeClassIndex::emptied_since(index.activations(10)[0]));
  index.assign(1, node, 0, 1);  // class 0 empties
  ASSERT_EQ(index.activations(10).size(), 2u);
  EXPECT_TRUE(NodeClassIndex::emptied_since(index.activations(10)[0]));
  EXPECT_EQ(index.activations(10)[0].class_id, 0);
  EXPECT_FALSE(NodeClassIndex::emptied_since(index.activations(10)[1]));
  node.cpu_used_milli = 0;
  index.assign(0, node, 0, 1);  // class 0 again: logged again, live
  ASSERT_EQ(index.activations(10).size(), 3u);
  EXPECT_EQ(index.activations(10)[2].class_id, 0);
  EXPECT_FALSE(NodeClassIndex::emptied_since(index.activations(10)[2]));
  EXPECT_TRUE(NodeClassIndex::emptied_since(index.activations(10)[0]));
  // An entry trimmed from the log is not looked for when its class empties.
  index.trim_activations(10, 3);
  node.gpus[1].used_milli = 1000;
  index.assign(0, node, 0, 2);  // class 0 empties again; the new class is at level 0
  EXPECT_EQ(index.activation_count(), 1u);
  EXPECT_EQ(index.activations(0).size(), 1u);
}

TEST(NodeClassIndex, AClassThatFitsARequestIsAtItsLeastLevelOrAbove) {
  // least_capacity_level is a lower bound: every class whose summary offers what the request
  // needs is at that level or above, so readers may skip the logs below it.
  for (int free_gpus = 0; free_gpus <= 12; ++free_gpus)
    for (int max_free = 0; max_free <= 1000; max_free += 25) {
      if (free_gpus > 0 && max_free != 1000) continue;
      if (free_gpus == 0 && max_free == 1000) continue;
      ClassSummary summary;
      summary.free_gpus = free_gpus;
      summary.max_free_milli = max_free;
      const int level = NodeClassIndex::capacity_level(summary);
      ASSERT_GE(level, 0);
      ASSERT_LT(level, NodeClassIndex::kCapacityLevels);
      for (int gpus = 1; gpus <= free_gpus; ++gpus)
        EXPECT_GE(level, NodeClassIndex::least_capacity_level(gpus, 0));
      for (int milli = 1; milli <= max_free; milli += 7)
        EXPECT_GE(level, NodeClassIndex::least_capacity_level(1, milli));
      EXPECT_GE(level, NodeClassIndex::least_capacity_level(0, 0));
    }
  // And it is not trivially 0: a whole GPU is never looked for among partly used ones.
  EXPECT_EQ(NodeClassIndex::least_capacity_level(1, 0), 10);
  EXPECT_EQ(NodeClassIndex::least_capacity_level(1, 500), 5);
}

TEST(NodeClassIndex, AStaticGroupKeepsItsExampleWhenItsFirstClassEmpties) {
  NodeClassIndex index;
  index.assign(0, gpu_node("a", 8, "H100"), 0, 0);
  index.assign(0, with_use(gpu_node("a", 8, "H100"), 1000, 500), 1, 0);
  index.assign(1, gpu_node("b", 4, "A100"), 0, 0);
  ASSERT_EQ(index.static_groups(), 2u);
  EXPECT_EQ(index.group_example(0).gpu_model, "H100");
  EXPECT_EQ(index.group_example(0).state.gpus.size(), 8u);
  EXPECT_EQ(index.group_members(0), 1);
  EXPECT_EQ(index.group_example(1).gpu_model, "A100");
  // A node whose resources change leaves its static group for another.
  NodeState bigger = gpu_node("a", 8, "H100");
  bigger.cpu_milli = 128'000;
  index.assign(0, bigger, 0, 0);
  EXPECT_EQ(index.static_groups(), 3u);
  EXPECT_EQ(index.group_of_slot(0), 2);
  EXPECT_EQ(index.group_members(0), 0);
}

}  // namespace
}  // namespace gpucloud::sched
