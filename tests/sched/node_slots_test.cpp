#include "sched/node_slots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace gpucloud::sched {
namespace {

TEST(NodeSlots, FindsEveryNodeAddedInAnyOrderAndNoOther) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5000; ++i) ids.push_back("node-" + std::to_string(i));
  std::vector<int> order(ids.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  // Slots are given in the order nodes join; ids_by_slot is what the scheduler's nodes hold.
  NodeSlots slots;
  std::vector<std::string> ids_by_slot;
  auto id_of = [&](int slot) -> const std::string& { return ids_by_slot[slot]; };
  for (int i : order) {
    ASSERT_EQ(slots.find(ids[i], id_of), -1);
    ids_by_slot.push_back(ids[i]);
    slots.add(ids[i], static_cast<int>(ids_by_slot.size()) - 1);
  }
  EXPECT_EQ(slots.size(), ids.size());
  for (size_t slot = 0; slot < ids_by_slot.size(); ++slot)
    EXPECT_EQ(slots.find(ids_by_slot[slot], id_of), static_cast<int>(slot));
  EXPECT_EQ(slots.find("node-5000", id_of), -1);
  EXPECT_EQ(slots.find("", id_of), -1);
}

TEST(NodeSlots, AnIdIsComparedNotOnlyItsHash) {
  NodeSlots slots;
  std::vector<std::string> ids_by_slot{"a"};
  slots.add("a", 0);
  // The slot's node now reports another id: the old one no longer finds it.
  ids_by_slot[0] = "b";
  EXPECT_EQ(slots.find("a", [&](int slot) { return ids_by_slot[slot]; }), -1);
}

}  // namespace
}  // namespace gpucloud::sched
