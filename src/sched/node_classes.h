// Nodes grouped by state: nodes with identical resources, labels and use form one class, so a
// policy scores a class once instead of every node. A placement or release moves one node to
// another class; classes are never changed in place (a class is an exact state).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "sched/types.h"

namespace gpucloud::sched {

/// One exact node state and the nodes in it.
struct NodeClass {
  int id = 0;
  NodeState state;         // the first member's state (names and GPU uuids are that node's)
  std::string zone;        // the "zone" label, else "rack", else ""
  std::string gpu_model;   // the model of GPU 0; "" for a node without GPUs
  int share_jobs = 0;      // replicas holding a share of a GPU here
  int whole_jobs = 0;      // replicas holding whole GPUs here
  std::set<int> members;   // node slots, ascending
  int static_group = 0;    // classes with equal resources and labels, whatever their use
  int free_gpus = 0;       // whole GPUs free
  int max_free_milli = 0;  // the most milli free on one GPU
};

/// What a class offers at most: enough to rule out most requests without reading the class
/// (consumers that walk many classes per request shape read these few bytes only).
struct ClassSummary {
  int32_t class_id = 0;
  int32_t static_group = 0;
  int32_t free_gpus = 0;       // NodeClass::free_gpus
  int32_t max_free_milli = 0;  // NodeClass::max_free_milli
  int64_t cpu_free_milli = 0;  // CPUs not in use
  int64_t memory_free_mib = 0;
};

/// The classes and which class each node slot is in.
class NodeClassIndex {
 public:
  /// Puts the slot into the class of `state` (created if new), leaving its old class.
  /// `share_jobs`/`whole_jobs` are part of the state (policies such as clustering read them).
  void assign(int slot, const NodeState& state, int share_jobs, int whole_jobs);
  /// Takes the slot out of its class (the node left).
  void remove(int slot);

  const NodeClass& of_slot(int slot) const { return classes_[slot_class_.at(slot)]; }
  int class_of(int slot) const {
    return slot < static_cast<int>(slot_class_.size()) ? slot_class_[slot] : -1;
  }
  /// The static group of the slot's class (without reading the class); -1: no class.
  int group_of_slot(int slot) const {
    int id = class_of(slot);
    return id < 0 ? -1 : summaries_[id].static_group;
  }
  const NodeClass& get(int id) const { return classes_[id]; }
  size_t size() const { return classes_.size(); }
  /// The number of static groups (see NodeClass::static_group).
  size_t static_groups() const { return static_groups_.size(); }
  /// The first class of a static group (its state stands for the group's resources and labels).
  const NodeClass& group_example(int group) const { return classes_[group_examples_[group]]; }
  /// The number of nodes in a static group now.
  int group_members(int group) const { return group_members_[group]; }
  /// A static group's classes that have members, as (-free GPUs, class id): most free first.
  const std::set<std::pair<int, int>>& group_by_free_gpus(int group) const {
    return group_by_free_gpus_[group];
  }
  /// The same as (-most milli free on one GPU, class id).
  const std::set<std::pair<int, int>>& group_by_free_milli(int group) const {
    return group_by_free_milli_[group];
  }

  /// Classes in the order they gained a first member (again): consumers keep a cursor.
  const std::vector<ClassSummary>& activations() const { return activations_; }
  /// The class's summary (as its activations carry it).
  const ClassSummary& summary(int id) const { return summaries_[id]; }
  /// The number of nodes in the class now (as get(id).members.size(), without reading the class).
  int member_count(int id) const { return member_counts_[id]; }
  /// The classes that have members now, by id.
  const std::set<int>& active() const { return active_; }

 private:
  static std::string key(const NodeState& state, int share_jobs, int whole_jobs);
  static std::string static_key(const NodeState& state);

  std::vector<NodeClass> classes_;
  std::unordered_map<std::string, int> by_key_;
  std::unordered_map<std::string, int> static_groups_;
  std::vector<int> group_examples_;  // static group -> its first class
  std::vector<int> group_members_;   // static group -> nodes in it
  std::vector<std::set<std::pair<int, int>>> group_by_free_gpus_, group_by_free_milli_;
  std::vector<int> slot_class_;  // -1: no class
  std::vector<ClassSummary> activations_;
  std::vector<ClassSummary> summaries_;  // by class id
  std::vector<int32_t> member_counts_;   // by class id
  std::set<int> active_;
};

}  // namespace gpucloud::sched
