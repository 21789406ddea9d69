#include "sched/wait_index.h"

#include <algorithm>

namespace gpucloud::sched {

void WaitIndex::Summary::add(const WaitNeed& need) {
  if (need.share_milli > 0)
    min_share = std::min(min_share, need.share_milli);
  else
    min_whole = std::min(min_whole, need.whole_gpus);
  min_cpu = std::min(min_cpu, need.cpu_milli);
  min_memory = std::min(min_memory, need.memory_mib);
  min_quota = std::min(min_quota, need.quota_each);
  if (need.runtime_ms > 0) min_runtime = std::min(min_runtime, need.runtime_ms);
  max_quota = std::max(max_quota, need.quota_milli);
}

void WaitIndex::Summary::add(const Summary& o) {
  min_whole = std::min(min_whole, o.min_whole);
  min_share = std::min(min_share, o.min_share);
  min_cpu = std::min(min_cpu, o.min_cpu);
  min_memory = std::min(min_memory, o.min_memory);
  min_quota = std::min(min_quota, o.min_quota);
  min_runtime = std::min(min_runtime, o.min_runtime);
  max_quota = std::max(max_quota, o.max_quota);
}

bool WaitIndex::Summary::may_admit(const WaitCapacity& cap) const {
  if (min_whole > cap.whole_gpus && min_share > cap.max_free_milli) return false;
  if (min_cpu > cap.cpu_milli || min_memory > cap.memory_mib) return false;
  if (min_quota > cap.quota_milli) return false;
  if (cap.quota_blocked_above >= 0 && max_quota <= cap.quota_blocked_above) return false;
  return cap.runtime_limit == WaitCapacity::kAny || min_runtime <= cap.runtime_limit;
}

void WaitIndex::Block::summarise() {
  summary = {};
  classes.reset();
  unclassed = 0;
  for (const Entry& e : entries) {
    summary.add(e.need);
    if (e.bit == kNoBit)
      ++unclassed;
    else
      classes.set(e.bit);
  }
}

void WaitIndex::Partition::summarise() {
  summary = {};
  for (const Block& b : blocks) summary.add(b.summary);
}

size_t WaitIndex::block_for(const Partition& p, const QueueKey& key) {
  auto it =
      std::lower_bound(p.blocks.begin(), p.blocks.end(), key,
                       [](const Block& b, const QueueKey& k) { return b.entries.back().key < k; });
  return static_cast<size_t>(it - p.blocks.begin());
}

void WaitIndex::add(int tenant, int signature, const QueueKey& key, const WaitNeed& need,
                    void* owner, int wait_class) {
  auto [it, fresh] =
      partition_ids_.try_emplace({tenant, signature}, static_cast<int>(partitions_.size()));
  if (fresh) partitions_.emplace_back();
  if (by_tenant_.size() <= static_cast<size_t>(tenant)) by_tenant_.resize(tenant + 1);
  by_tenant_[tenant][signature] = it->second;
  Partition& p = partitions_[it->second];
  uint16_t bit = kNoBit;
  if (wait_class >= 0) {
    auto [known, added] =
        p.class_bits.try_emplace(wait_class, static_cast<uint16_t>(p.class_bits.size()));
    if (known->second < kClassBits) {
      bit = known->second;
      if (added) {
        WaitNeed class_need = need;
        class_need.runtime_ms = 0;
        p.class_needs.push_back({class_need, key.priority});
      }
    } else if (added) {
      p.class_bits.erase(known);  // no bit left: asked about, like a job of no class
    }
  }
  // After every key: the last block (a new one when there is none).
  size_t b = std::min(block_for(p, key), p.blocks.size() - (p.blocks.empty() ? 0 : 1));
  if (p.blocks.empty()) p.blocks.emplace_back();
  Block& block = p.blocks[b];
  auto pos = std::upper_bound(block.entries.begin(), block.entries.end(), key,
                              [](const QueueKey& k, const Entry& e) { return k < e.key; });
  block.entries.insert(pos, Entry{key, need, owner, bit});
  ++size_;
  ++additions_;
  ++mutations_;
  if (block.entries.size() >= 2 * kBlock) {
    Block upper;
    upper.entries.assign(block.entries.begin() + kBlock, block.entries.end());
    block.entries.resize(kBlock);
    block.summarise();
    upper.summarise();
    p.blocks.insert(p.blocks.begin() + static_cast<long>(b) + 1, std::move(upper));
    p.summary.add(need);
    return;
  }
  // Adding can only lower the least needs.
  block.summary.add(need);
  if (bit == kNoBit)
    ++block.unclassed;
  else
    block.classes.set(bit);
  p.summary.add(need);
}

void WaitIndex::learn_classes(const PartitionQuery& q, const Partition& p,
                              const ClassBits& classes) const {
  for (size_t bit = classes._Find_first(); bit < kClassBits; bit = classes._Find_next(bit)) {
    WaitNeed need = p.class_needs[bit].first;
    need.runtime_ms = 1;  // within every runtime limit but 0: the class's jobs may be
    const int priority = p.class_needs[bit].second;
    if (std::any_of(q.caps.begin(), q.caps.end(),
                    [&](const WaitCapacity* cap) { return cap->admits(need, priority); }))
      q.admitted.set(bit);
  }
  q.known |= classes;
}

void WaitIndex::mark_waiting(int tenant, int signature, int wait_class, bool ends_before) {
  auto id = partition_ids_.find({tenant, signature});
  if (id == partition_ids_.end()) return;
  Partition& p = partitions_[id->second];
  auto bit = p.class_bits.find(wait_class);
  if (bit == p.class_bits.end()) return;
  if (p.waiting_epoch != waiting_epoch_) {
    p.waiting[0].reset();
    p.waiting[1].reset();
    p.waiting_epoch = waiting_epoch_;
  }
  p.waiting[ends_before].set(bit->second);
}

void WaitIndex::remove(int tenant, int signature, const QueueKey& key) {
  auto id = partition_ids_.find({tenant, signature});
  if (id == partition_ids_.end()) return;
  Partition& p = partitions_[id->second];
  size_t b = block_for(p, key);
  if (b == p.blocks.size()) return;
  Block& block = p.blocks[b];
  auto pos = std::lower_bound(block.entries.begin(), block.entries.end(), key,
                              [](const Entry& e, const QueueKey& k) { return e.key < k; });
  if (pos == block.entries.end() || key < pos->key) return;
  block.entries.erase(pos);
  --size_;
  ++mutations_;
  if (block.entries.empty()) {
    p.blocks.erase(p.blocks.begin() + static_cast<long>(b));
    if (p.blocks.empty()) {
      by_tenant_[tenant].erase(signature);
      p.class_bits.clear();  // (no job holds a bit)
      p.class_needs.clear();
      p.waiting[0].reset();
      p.waiting[1].reset();
    }
    p.summarise();
    return;
  }
  // A small block takes in its successor while both fit one block (removals do not leave a
  // partition of many nearly empty blocks).
  if (block.entries.size() < kBlock / 4 && b + 1 < p.blocks.size() &&
      block.entries.size() + p.blocks[b + 1].entries.size() <= kBlock) {
    Block& next = p.blocks[b + 1];
    block.entries.insert(block.entries.end(), next.entries.begin(), next.entries.end());
    p.blocks.erase(p.blocks.begin() + static_cast<long>(b) + 1);
  }
  p.blocks[b].summarise();
  p.summarise();
}

void WaitIndex::clear() {
  partitions_.clear();
  partition_ids_.clear();
  by_tenant_.clear();
  size_ = 0;
  ++additions_;
  ++mutations_;
}

const WaitIndex::Partitions& WaitIndex::partitions_of(int tenant) const {
  static const Partitions kNone;
  return tenant >= 0 && static_cast<size_t>(tenant) < by_tenant_.size() ? by_tenant_[tenant]
                                                                        : kNone;
}

void* WaitIndex::first_after(int partition, const QueueKey* after, QueueKey* key) const {
  const Partition& p = partitions_[partition];
  for (size_t b = after ? block_for(p, *after) : 0; b < p.blocks.size(); ++b)
    for (const Entry& e : p.blocks[b].entries)
      if (!after || *after < e.key) {
        if (key) *key = e.key;
        return e.owner;
      }
  return nullptr;
}

bool WaitIndex::consistent() const {
  for (const Partition& p : partitions_) {
    Partition copy = p;
    copy.summarise();
    if (!(copy.summary == p.summary)) return false;
    for (size_t b = 0; b < p.blocks.size(); ++b) {
      const Block& block = p.blocks[b];
      if (block.entries.empty()) return false;
      Block copy = block;
      copy.summarise();
      if (!(copy.summary == block.summary) || copy.classes != block.classes ||
          copy.unclassed != block.unclassed)
        return false;
      for (const Entry& e : block.entries)
        if (e.bit != kNoBit && (e.bit >= p.class_bits.size() || e.bit >= kClassBits)) return false;
      for (size_t i = 1; i < block.entries.size(); ++i)
        if (!(block.entries[i - 1].key < block.entries[i].key)) return false;
      if (b > 0 && !(p.blocks[b - 1].entries.back().key < block.entries.front().key)) return false;
    }
  }
  return true;
}

}  // namespace gpucloud::sched
