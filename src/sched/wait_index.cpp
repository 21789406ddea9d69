#include "sched/wait_index.h"

namespace gpucloud::sched {

void WaitIndex::Group::summarise() {
  runtimes = WaitRuntimes{};
  undeclared = 0;
  for (const Entry& e : entries) {
    if (e.runtime_ms > 0) {
      runtimes.shortest = std::min(runtimes.shortest, e.runtime_ms);
      runtimes.longest = std::max(runtimes.longest, e.runtime_ms);
    } else {
      ++undeclared;
    }
  }
  if (undeclared > 0) runtimes.longest = WaitCapacity::kAny;
}

std::vector<WaitIndex::Entry>::const_iterator WaitIndex::first_beyond(
    const std::vector<Entry>& entries, const QueueKey* after) {
  if (!after) return entries.begin();
  return std::upper_bound(entries.begin(), entries.end(), *after,
                          [](const QueueKey& k, const Entry& e) { return k < e.key; });
}

void WaitIndex::add(int tenant, int signature, int group, const QueueKey& key, const WaitNeed& need,
                    void* owner) {
  auto [it, fresh] =
      partition_ids_.try_emplace({tenant, signature}, static_cast<int>(partitions_.size()));
  if (fresh) partitions_.emplace_back();
  by_tenant_[tenant][signature] = it->second;
  Partition& p = partitions_[it->second];
  auto [at, new_group] = p.group_at.try_emplace(group, p.groups.size());
  if (new_group) {
    Group g;
    g.id = group;
    g.need = need;
    g.need.runtime_ms = 0;
    g.priority = key.priority;
    p.groups.push_back(std::move(g));
  }
  Group& g = p.groups[at->second];
  g.closed_stamp = 0;  // the new job may not wait
  // New jobs usually come last in their group's order.
  Entry e{key, need.runtime_ms, owner};
  if (g.entries.empty() || g.entries.back().key < key)
    g.entries.push_back(e);
  else
    g.entries.insert(first_beyond(g.entries, &key), e);
  ++size_;
  if (need.runtime_ms > 0) {
    g.runtimes.shortest = std::min(g.runtimes.shortest, need.runtime_ms);
    g.runtimes.longest = std::max(g.runtimes.longest, need.runtime_ms);
  } else {
    ++g.undeclared;
    g.runtimes.longest = WaitCapacity::kAny;
  }
}

void WaitIndex::remove(int tenant, int signature, int group, const QueueKey& key) {
  auto id = partition_ids_.find({tenant, signature});
  if (id == partition_ids_.end()) return;
  Partition& p = partitions_[id->second];
  auto at = p.group_at.find(group);
  if (at == p.group_at.end()) return;
  Group& g = p.groups[at->second];
  auto pos = std::lower_bound(g.entries.begin(), g.entries.end(), key,
                              [](const Entry& e, const QueueKey& k) { return e.key < k; });
  if (pos == g.entries.end() || key < pos->key) return;
  int64_t runtime = pos->runtime_ms;
  g.entries.erase(pos);
  if (!g.pinned.empty()) {
    auto pin = std::lower_bound(g.pinned.begin(), g.pinned.end(), key,
                                [](const Entry& e, const QueueKey& k) { return e.key < k; });
    if (pin != g.pinned.end() && !(key < pin->key)) g.pinned.erase(pin);
  }
  --size_;
  if (!g.entries.empty()) {
    // Only removing an extreme can change the summary.
    if (runtime <= 0 ? --g.undeclared == 0
                     : runtime == g.runtimes.shortest || runtime == g.runtimes.longest)
      g.summarise();
    return;
  }
  // The emptied group's place goes to the last group.
  size_t index = at->second;
  p.group_at.erase(at);
  if (index + 1 != p.groups.size()) {
    p.groups[index] = std::move(p.groups.back());
    p.group_at[p.groups[index].id] = index;
  }
  p.groups.pop_back();
  if (p.groups.empty()) by_tenant_[tenant].erase(signature);
}

void WaitIndex::pin(int tenant, int signature, int group, const QueueKey& key, bool pinned) {
  auto id = partition_ids_.find({tenant, signature});
  if (id == partition_ids_.end()) return;
  Partition& p = partitions_[id->second];
  auto at = p.group_at.find(group);
  if (at == p.group_at.end()) return;
  Group& g = p.groups[at->second];
  auto by_key = [](const Entry& e, const QueueKey& k) { return e.key < k; };
  auto entry = std::lower_bound(g.entries.begin(), g.entries.end(), key, by_key);
  if (entry == g.entries.end() || key < entry->key) return;
  auto pin = std::lower_bound(g.pinned.begin(), g.pinned.end(), key, by_key);
  bool there = pin != g.pinned.end() && !(key < pin->key);
  if (pinned && !there) g.pinned.insert(pin, *entry);
  if (!pinned && there) g.pinned.erase(pin);
}

void WaitIndex::drop_within(std::vector<WaitCapacity>& caps) {
  constexpr size_t kMost = 256;  // beyond, comparing every pair costs more than it saves
  if (caps.size() < 2 || caps.size() > kMost) return;
  std::vector<char> dropped(caps.size(), 0);
  for (size_t j = 0; j < caps.size(); ++j)
    for (size_t i = 0; i < caps.size() && !dropped[j]; ++i) {
      if (i == j || dropped[i] || !caps[j].within(caps[i])) continue;
      // Of two equal capacities the first stays.
      dropped[j] = !caps[i].within(caps[j]) || i < j;
    }
  size_t kept = 0;
  for (size_t j = 0; j < caps.size(); ++j)
    if (!dropped[j]) caps[kept++] = caps[j];
  caps.resize(kept);
}

void WaitIndex::clear() {
  partitions_.clear();
  partition_ids_.clear();
  by_tenant_.clear();
  size_ = 0;
}

const std::map<int, int>& WaitIndex::partitions_of(int tenant) const {
  static const std::map<int, int> kNone;
  auto it = by_tenant_.find(tenant);
  return it == by_tenant_.end() ? kNone : it->second;
}

void* WaitIndex::first_after(int partition, const QueueKey* after, QueueKey* key) const {
  const Entry* first = nullptr;
  for (const Group& g : partitions_[partition].groups) {
    auto it = first_beyond(g.entries, after);
    if (it != g.entries.end() && (!first || it->key < first->key)) first = &*it;
  }
  if (!first) return nullptr;
  if (key) *key = first->key;
  return first->owner;
}

size_t WaitIndex::groups() const {
  size_t n = 0;
  for (const Partition& p : partitions_) n += p.groups.size();
  return n;
}

bool WaitIndex::consistent() const {
  for (const Partition& p : partitions_) {
    if (p.group_at.size() != p.groups.size()) return false;
    for (size_t i = 0; i < p.groups.size(); ++i) {
      const Group& g = p.groups[i];
      auto at = p.group_at.find(g.id);
      if (g.entries.empty() || at == p.group_at.end() || at->second != i) return false;
      Group copy = g;
      copy.summarise();
      if (copy.undeclared != g.undeclared || copy.runtimes.shortest != g.runtimes.shortest ||
          copy.runtimes.longest != g.runtimes.longest)
        return false;
      for (size_t k = 0; k < g.pinned.size(); ++k) {
        auto e = first_beyond(g.entries, nullptr);
        while (e != g.entries.end() && e->key < g.pinned[k].key) ++e;
        if (e == g.entries.end() || g.pinned[k].key < e->key || e->owner != g.pinned[k].owner)
          return false;
        if (k > 0 && !(g.pinned[k - 1].key < g.pinned[k].key)) return false;
      }
      for (size_t k = 0; k < g.entries.size(); ++k) {
        if (g.entries[k].key.priority != g.priority) return false;
        if (k > 0 && !(g.entries[k - 1].key < g.entries[k].key)) return false;
      }
    }
  }
  return true;
}

}  // namespace gpucloud::sched
