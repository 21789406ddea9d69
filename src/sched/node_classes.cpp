#include "sched/node_classes.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpucloud::sched {

namespace {

// Appends v as a zigzag varint: small numbers take a byte or two.
void put_varint(std::string& out, int64_t v) {
  uint64_t u = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (u >= 0x80) {
    out.push_back(static_cast<char>((u & 0x7f) | 0x80));
    u >>= 7;
  }
  out.push_back(static_cast<char>(u));
}

}  // namespace

std::string NodeClassIndex::static_key(const NodeState& s) {
  std::string k = fmt::format("{}|{}|{}|", s.schedulable ? 1 : 0, s.cpu_milli, s.memory_mib);
  for (const auto& g : s.gpus)
    fmt::format_to(std::back_inserter(k), "{}:{}:{}:{:x};", g.model, g.memory_mib, g.numa_node,
                   g.nvlink_mask);
  for (const auto& [name, value] : s.labels) k += name + "=" + value + ",";
  // The price decides which jobs with a max_price may use the node: nodes of different prices
  // are different classes.
  fmt::format_to(std::back_inserter(k), "${}", s.price_per_gpu_hour);
  return k;
}

bool NodeClassIndex::same_static(const NodeState& a, const NodeState& b) {
  if (a.schedulable != b.schedulable || a.cpu_milli != b.cpu_milli ||
      a.memory_mib != b.memory_mib || a.gpus.size() != b.gpus.size() || a.labels != b.labels ||
      a.price_per_gpu_hour != b.price_per_gpu_hour)
    return false;
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuState& x = a.gpus[i];
    const GpuState& y = b.gpus[i];
    if (x.model != y.model || x.memory_mib != y.memory_mib || x.numa_node != y.numa_node ||
        x.nvlink_mask != y.nvlink_mask)
      return false;
  }
  return true;
}

int NodeClassIndex::static_group_of(int slot, const NodeState& state, bool& fresh) {
  // A node's resources and labels rarely change: compare with its last group's first.
  int last = slot < static_cast<int>(slot_group_.size()) ? slot_group_[slot] : -1;
  if (last >= 0 && same_static(state, group_examples_[last].state)) return last;
  auto [group, made] =
      static_groups_.try_emplace(static_key(state), static_cast<int>(static_groups_.size()));
  fresh = made;
  if (made) {
    group_examples_.emplace_back();  // filled by assign() with the group's first class
    group_members_.push_back(0);
    group_by_free_gpus_.emplace_back();
    group_by_free_milli_.emplace_back();
    group_by_free_cpu_.emplace_back();
    group_free_memory_.emplace_back();
  }
  return group->second;
}

void NodeClassIndex::use_key(int group, const NodeState& s, int share_jobs, int whole_jobs) {
  // The static group stands for the resources and labels (and so the number of GPUs).
  key_.clear();
  put_varint(key_, group);
  put_varint(key_, s.cpu_used_milli);
  put_varint(key_, s.memory_used_mib);
  key_.push_back(static_cast<char>((share_jobs > 0 ? 1 : 0) | (whole_jobs > 0 ? 2 : 0)));
  for (const auto& g : s.gpus) {
    put_varint(key_, g.used_milli);
    put_varint(key_, g.used_memory_mib);
  }
}

NodeClass& NodeClassIndex::hold(int id, int group, const NodeState& state, int share_jobs,
                                int whole_jobs) {
  if (free_pool_.empty()) {
    free_pool_.push_back(static_cast<int32_t>(pool_.size()));
    pool_.push_back(std::make_unique<NodeClass>());
  }
  storage_[id] = free_pool_.back();
  free_pool_.pop_back();
  NodeClass& c = *pool_[storage_[id]];
  c.id = id;
  c.storage = storage_[id];
  c.state = state;  // reuses the held strings' and vectors' memory of the class last here
  c.share_jobs = share_jobs;
  c.whole_jobs = whole_jobs;
  c.members.clear();
  c.static_group = group;
  c.zone.clear();
  if (auto z = state.labels.find("zone"); z != state.labels.end())
    c.zone = z->second;
  else if (auto r = state.labels.find("rack"); r != state.labels.end())
    c.zone = r->second;
  c.gpu_model = state.gpus.empty() ? std::string() : state.gpus[0].model;
  c.free_gpus = 0;
  c.max_free_milli = 0;
  for (const auto& g : state.gpus) {
    c.free_gpus += g.whole_free() ? 1 : 0;
    c.max_free_milli = std::max(c.max_free_milli, static_cast<int>(g.free_milli()));
  }
  return c;
}

void NodeClassIndex::assign(int slot, const NodeState& state, int share_jobs, int whole_jobs) {
  bool fresh_group = false;
  const int group = static_group_of(slot, state, fresh_group);
  use_key(group, state, share_jobs, whole_jobs);
  int id;
  if (auto it = by_key_.find(key_); it != by_key_.end()) {
    id = it->second;
  } else {
    id = static_cast<int>(storage_.size());
    storage_.push_back(-1);
    const NodeClass& c = hold(id, group, state, share_jobs, whole_jobs);
    if (fresh_group) group_examples_[group] = c;  // its members are not kept (none yet)
    summaries_.push_back({id, group, c.free_gpus, c.max_free_milli,
                          c.state.cpu_milli - c.state.cpu_used_milli,
                          c.state.memory_mib - c.state.memory_used_mib});
    member_counts_.push_back(0);
    last_activation_.push_back(0);
    by_key_.emplace(key_, id);
  }
  if (slot >= static_cast<int>(slot_class_.size())) {
    slot_class_.resize(slot + 1, -1);
    slot_group_.resize(slot + 1, -1);
  }
  if (slot_class_[slot] == id) return;
  remove(slot);
  if (storage_[id] < 0) hold(id, group, state, share_jobs, whole_jobs);  // emptied before
  slot_class_[slot] = id;
  slot_group_[slot] = group;
  NodeClass& c = *pool_[storage_[id]];
  c.members.insert(std::lower_bound(c.members.begin(), c.members.end(), slot), slot);
  ++member_counts_[id];
  ++group_members_[group];
  if (c.members.size() == 1) {
    const int level = capacity_level(summaries_[id]);
    last_activation_[id] = activation_end(level);
    activations_[level].push_back(summaries_[id]);
    ++activation_count_;
    active_.insert(id);
    group_by_free_gpus_[group].insert({-c.free_gpus, id});
    group_by_free_milli_[group].insert({-c.max_free_milli, id});
    group_by_free_cpu_[group].insert({-summaries_[id].cpu_free_milli, id});
    group_free_memory_[group].insert(summaries_[id].memory_free_mib);
  }
}

void NodeClassIndex::trim_activations(int level, uint64_t at) {
  auto& log = activations_[level];
  const uint64_t base = activation_bases_[level];
  if (at <= base) return;
  const size_t drop = static_cast<size_t>(std::min<uint64_t>(at - base, log.size()));
  log.erase(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(drop));
  log.shrink_to_fit();  // (the memory is the point)
  activation_bases_[level] = base + drop;
  activation_count_ -= drop;
}

void NodeClassIndex::remove(int slot) {
  if (slot >= static_cast<int>(slot_class_.size()) || slot_class_[slot] < 0) return;
  const int id = slot_class_[slot];
  NodeClass& c = *pool_[storage_[id]];
  c.members.erase(std::lower_bound(c.members.begin(), c.members.end(), slot));
  --member_counts_[id];
  --group_members_[c.static_group];
  if (c.members.empty()) {
    // Its activation, while still logged, reads as emptied: readers of the log skip it without
    // asking the class (it is logged again when it gains a member).
    const int level = capacity_level(summaries_[id]);
    if (last_activation_[id] >= activation_bases_[level] &&
        last_activation_[id] < activation_end(level))
      activations_[level][last_activation_[id] - activation_bases_[level]].free_gpus = kEmptied;
    active_.erase(id);
    group_by_free_gpus_[c.static_group].erase({-c.free_gpus, id});
    group_by_free_milli_[c.static_group].erase({-c.max_free_milli, id});
    group_by_free_cpu_[c.static_group].erase({-summaries_[id].cpu_free_milli, id});
    auto& memory = group_free_memory_[c.static_group];
    memory.erase(memory.find(summaries_[id].memory_free_mib));
    free_pool_.push_back(storage_[id]);  // its memory serves the next class made
    storage_[id] = -1;
  }
  slot_class_[slot] = -1;
}

}  // namespace gpucloud::sched
