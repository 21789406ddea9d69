// Nodes grouped by state: nodes with identical resources, labels and use form one class, so a
// policy scores a class once instead of every node. A placement or release moves one node to
// another class; classes are never changed in place (a class is an exact state).
//
// A class keeps its id for the index's life: a state seen again gets the id it had, so orders
// that break ties by id do not depend on when classes emptied. What a class holds (its state and
// members) is freed when its last node leaves and made again from the next node to enter it;
// only its key and summary stay (some tens of bytes), so a long run's memory follows the
// classes alive, not every state ever seen.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "sched/types.h"

namespace gpucloud::sched {

/// One exact node state and the nodes in it.
struct NodeClass {
  int id = 0;
  // Where the index holds it: a place another class takes once this one empties, so numbered
  // from 0 up to the most classes alive at once (consumers key per-class caches by it, checking
  // `id`, to keep them as small as the classes alive rather than every class seen).
  int storage = 0;
  NodeState state;           // the first member's state (names and GPU uuids are that node's)
  std::string zone;          // the "zone" label, else "rack", else ""
  std::string gpu_model;     // the model of GPU 0; "" for a node without GPUs
  int share_jobs = 0;        // replicas holding a share of a GPU here
  int whole_jobs = 0;        // replicas holding whole GPUs here
  std::vector<int> members;  // node slots, ascending
  int static_group = 0;      // classes with equal resources and labels, whatever their use
  int free_gpus = 0;         // whole GPUs free
  int max_free_milli = 0;    // the most milli free on one GPU
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

  const NodeClass& of_slot(int slot) const { return get(slot_class_.at(slot)); }
  int class_of(int slot) const {
    return slot < static_cast<int>(slot_class_.size()) ? slot_class_[slot] : -1;
  }
  /// The static group of the slot's class (without reading the class or its summary); -1: no
  /// class.
  int group_of_slot(int slot) const { return class_of(slot) < 0 ? -1 : slot_group_[slot]; }
  /// The class. A class without members reads as an empty class (no members, no state): its
  /// state was freed; consumers holding ids of classes that may have emptied check `members`.
  const NodeClass& get(int id) const {
    int at = storage_[id];
    return at < 0 ? vacant_ : *pool_[at];
  }
  /// The number of class ids given (states seen).
  size_t size() const { return storage_.size(); }
  /// The number of classes whose state is held now (those with members).
  size_t held() const { return pool_.size() - free_pool_.size(); }
  /// The number of static groups (see NodeClass::static_group).
  size_t static_groups() const { return static_groups_.size(); }
  /// The static group's first class as it was made (its state stands for the group's resources
  /// and labels; its members are not kept).
  const NodeClass& group_example(int group) const { return group_examples_[group]; }
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
  /// The same as (-CPU milli free, class id): most CPUs free first.
  const std::set<std::pair<int64_t, int>>& group_by_free_cpu(int group) const {
    return group_by_free_cpu_[group];
  }
  /// The least memory free on a class of the static group that has members (INT64_MAX: none).
  int64_t least_free_memory(int group) const {
    const auto& m = group_free_memory_[group];
    return m.empty() ? std::numeric_limits<int64_t>::max() : *m.begin();
  }

  /// Activation logs are split by what a class offers, so that a consumer needing at least some
  /// GPU capacity reads only the logs that may hold it: level 0-9 for a class without a whole GPU
  /// free (its most milli free on one GPU ÷ 100), 10-17 for one with 1-8+ whole GPUs free.
  static constexpr int kCapacityLevels = 18;
  /// The level of a class (see kCapacityLevels).
  static int capacity_level(const ClassSummary& s) {
    if (s.free_gpus > 0) return 9 + std::min<int>(s.free_gpus, 8);
    return std::clamp<int>(s.max_free_milli / 100, 0, 9);
  }
  /// The lowest level a class that has `gpus` whole GPUs free (or, `gpu_milli` > 0, that much of
  /// one GPU) can be at: every such class is at this level or above.
  static int least_capacity_level(int gpus, int gpu_milli) {
    if (gpus <= 0) return 0;
    if (gpu_milli > 0) return std::min(gpu_milli / 100, 9);
    return 9 + std::min(gpus, 8);
  }
  /// Classes of one capacity level in the order they gained a first member (again), from the
  /// first one kept (activation_base(level)): consumers keep a cursor per level, counted from
  /// the start of the log (entry `at` is activations(level)[at - activation_base(level)]). An
  /// entry whose class has emptied since reads `free_gpus == kEmptied` (emptied_since()); the
  /// class is logged again when it gains a member.
  const std::vector<ClassSummary>& activations(int level) const { return activations_[level]; }
  /// What an activation's free_gpus reads once its class has emptied.
  static constexpr int32_t kEmptied = -1;
  /// Whether the activation's class has emptied since it was logged.
  static bool emptied_since(const ClassSummary& activation) {
    return activation.free_gpus == kEmptied;
  }
  /// How many of the level's first activations were dropped (trim_activations).
  uint64_t activation_base(int level) const { return activation_bases_[level]; }
  /// One past the level's last activation, counted from the start of the log.
  uint64_t activation_end(int level) const {
    return activation_bases_[level] + activations_[level].size();
  }
  /// Drops the level's activations before `at` (counted from the start of the log): a long-lived
  /// index would otherwise keep every activation since it was made.
  void trim_activations(int level, uint64_t at);
  /// The number of activations kept, at all levels.
  size_t activation_count() const { return activation_count_; }
  /// The class's summary (as its activations carry it).
  const ClassSummary& summary(int id) const { return summaries_[id]; }
  /// The number of nodes in the class now (as get(id).members.size(), without reading the class).
  int member_count(int id) const { return member_counts_[id]; }
  /// The classes that have members now, by id.
  const std::set<int>& active() const { return active_; }

 private:
  static std::string static_key(const NodeState& state);
  // Whether the two states have equal resources and labels (equal static keys).
  static bool same_static(const NodeState& a, const NodeState& b);
  // The static group of the state, which the slot is about to take; `fresh`: made now.
  int static_group_of(int slot, const NodeState& state, bool& fresh);
  // The state's key within its static group, into key_.
  void use_key(int group, const NodeState& state, int share_jobs, int whole_jobs);
  // Gives class `id` a state to hold (from the pool) and fills it from `state`.
  NodeClass& hold(int id, int group, const NodeState& state, int share_jobs, int whole_jobs);

  std::vector<int32_t> storage_;                  // class id -> index into pool_, -1: not held
  std::vector<std::unique_ptr<NodeClass>> pool_;  // held classes and reusable ones
  std::vector<int32_t> free_pool_;                // indexes into pool_ not held
  NodeClass vacant_;                              // what get() gives for a class not held
  std::unordered_map<std::string, int> by_key_;   // use_key() -> class id
  std::string key_;                               // use_key()'s buffer, reused
  std::unordered_map<std::string, int> static_groups_;
  std::vector<NodeClass> group_examples_;  // static group -> its first class, without members
  std::vector<int> group_members_;         // static group -> nodes in it
  std::vector<std::set<std::pair<int, int>>> group_by_free_gpus_, group_by_free_milli_;
  std::vector<std::set<std::pair<int64_t, int>>> group_by_free_cpu_;
  std::vector<std::multiset<int64_t>> group_free_memory_;
  std::vector<int> slot_class_;  // -1: no class
  std::vector<int> slot_group_;  // the static group of the slot's last class, -1: none
  std::array<std::vector<ClassSummary>, kCapacityLevels> activations_;
  std::array<uint64_t, kCapacityLevels> activation_bases_{};  // dropped from each log's front
  size_t activation_count_ = 0;                               // kept, at all levels
  std::vector<ClassSummary> summaries_;                       // by class id
  std::vector<int32_t> member_counts_;                        // by class id
  std::vector<uint64_t> last_activation_;  // by class id: its last activation, from the log's start
  std::set<int> active_;
};

}  // namespace gpucloud::sched
