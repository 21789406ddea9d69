#include "sched/node_classes.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpucloud::sched {

std::string NodeClassIndex::static_key(const NodeState& s) {
  std::string k = fmt::format("{}|{}|{}|", s.schedulable ? 1 : 0, s.cpu_milli, s.memory_mib);
  for (const auto& g : s.gpus)
    fmt::format_to(std::back_inserter(k), "{}:{}:{}:{:x};", g.model, g.memory_mib, g.numa_node,
                   g.nvlink_mask);
  for (const auto& [name, value] : s.labels) k += name + "=" + value + ",";
  return k;
}

std::string NodeClassIndex::key(const NodeState& s, int share_jobs, int whole_jobs) {
  // The static part, then the use.
  std::string k = static_key(s);
  fmt::format_to(std::back_inserter(k), "#{}|{}|{}|{}|", s.cpu_used_milli, s.memory_used_mib,
                 share_jobs > 0 ? 1 : 0, whole_jobs > 0 ? 1 : 0);
  for (const auto& g : s.gpus)
    fmt::format_to(std::back_inserter(k), "{}:{};", g.used_milli, g.used_memory_mib);
  return k;
}

void NodeClassIndex::assign(int slot, const NodeState& state, int share_jobs, int whole_jobs) {
  std::string k = key(state, share_jobs, whole_jobs);
  int id;
  if (auto it = by_key_.find(k); it != by_key_.end()) {
    id = it->second;
  } else {
    id = static_cast<int>(classes_.size());
    NodeClass c;
    c.id = id;
    c.state = state;
    c.share_jobs = share_jobs;
    c.whole_jobs = whole_jobs;
    if (auto z = state.labels.find("zone"); z != state.labels.end())
      c.zone = z->second;
    else if (auto r = state.labels.find("rack"); r != state.labels.end())
      c.zone = r->second;
    if (!state.gpus.empty()) c.gpu_model = state.gpus[0].model;
    auto [group, fresh] =
        static_groups_.try_emplace(static_key(state), static_cast<int>(static_groups_.size()));
    c.static_group = group->second;
    if (fresh) {
      group_examples_.push_back(id);
      group_members_.push_back(0);
      group_by_free_gpus_.emplace_back();
      group_by_free_milli_.emplace_back();
    }
    for (const auto& g : state.gpus) {
      c.free_gpus += g.whole_free() ? 1 : 0;
      c.max_free_milli = std::max(c.max_free_milli, static_cast<int>(g.free_milli()));
    }
    summaries_.push_back({id, c.static_group, c.free_gpus, c.max_free_milli,
                          c.state.cpu_milli - c.state.cpu_used_milli,
                          c.state.memory_mib - c.state.memory_used_mib});
    member_counts_.push_back(0);
    classes_.push_back(std::move(c));
    by_key_.emplace(std::move(k), id);
  }
  if (slot >= static_cast<int>(slot_class_.size())) slot_class_.resize(slot + 1, -1);
  if (slot_class_[slot] == id) return;
  remove(slot);
  slot_class_[slot] = id;
  auto& members = classes_[id].members;
  members.insert(slot);
  ++member_counts_[id];
  ++group_members_[classes_[id].static_group];
  if (members.size() == 1) {
    const NodeClass& c = classes_[id];
    activations_.push_back(summaries_[id]);
    active_.insert(id);
    group_by_free_gpus_[c.static_group].insert({-c.free_gpus, id});
    group_by_free_milli_[c.static_group].insert({-c.max_free_milli, id});
  }
}

void NodeClassIndex::remove(int slot) {
  if (slot >= static_cast<int>(slot_class_.size()) || slot_class_[slot] < 0) return;
  const NodeClass& c = classes_[slot_class_[slot]];
  classes_[c.id].members.erase(slot);
  --member_counts_[c.id];
  --group_members_[c.static_group];
  if (c.members.empty()) {
    active_.erase(c.id);
    group_by_free_gpus_[c.static_group].erase({-c.free_gpus, c.id});
    group_by_free_milli_[c.static_group].erase({-c.max_free_milli, c.id});
  }
  slot_class_[slot] = -1;
}

}  // namespace gpucloud::sched
