// WaitIndex: the pending jobs of each tenant, split by the set of node kinds they can run on
// (their fit signature), in queue order, in blocks that record what their jobs need at least.
// An event that frees capacity on a node asks, per tenant, for the first job in queue order
// that may fit what the node now offers: blocks whose least needs do not fit are skipped whole,
// so the answer costs the blocks of the tenant's partitions, not its jobs. The answer is a
// candidate (needs are compared one dimension at a time, GPU topology and node labels beyond the
// signature are not looked at); the scheduler decides it for real.
//
// Jobs also carry their wait class (the caller's id for jobs that wait for the same reason
// whenever one of them does). Once the caller marks a class as waiting, queries skip its jobs,
// and blocks that hold only waiting classes, without asking about each job.
#pragma once

#include <algorithm>
#include <bitset>
#include <boost/container/flat_map.hpp>
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace gpucloud::sched {

/// Where a job stands in its tenant's queue: higher priority first, then the queue policy's rank
/// (0 for all under fifo; the declared runtime under sjf), then older, then by id.
struct QueueKey {
  int priority = 0;
  int64_t rank = 0;
  int64_t created_at = 0;
  const std::string* job_id = nullptr;  // owned by the job, which outlives its index entry
  // The id's first 16 bytes, big-endian (zero-padded): numbers that order as the id does, so
  // that jobs created in the same millisecond rarely compare their ids as strings.
  uint64_t id_high = 0, id_low = 0;

  bool operator<(const QueueKey& o) const {
    if (priority != o.priority) return priority > o.priority;
    if (rank != o.rank) return rank < o.rank;
    if (created_at != o.created_at) return created_at < o.created_at;
    if (id_high != o.id_high) return id_high < o.id_high;
    if (id_low != o.id_low) return id_low < o.id_low;
    return *job_id < *o.job_id;
  }

  /// Sets id_high and id_low from id's first 16 bytes.
  void set_id_prefix(const std::string& id) {
    id_high = id_low = 0;
    for (size_t i = 0; i < 16; ++i) {
      uint64_t byte = i < id.size() ? static_cast<unsigned char>(id[i]) : 0;
      (i < 8 ? id_high : id_low) |= byte << (8 * (7 - i % 8));
    }
  }
};

/// What one replica of a waiting job needs, and what the whole job asks of its tenant's quota.
struct WaitNeed {
  int32_t whole_gpus = 0;   // whole GPUs (0: none, or a share)
  int32_t share_milli = 0;  // 1..999 for a share, else 0
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t quota_milli = 0;  // GPU milli of all replicas together
  // GPU milli of one replica: the least one GPU model's quota must allow (a gang's replicas may
  // run on several models, each charged to its own).
  int64_t quota_each = 0;
  int64_t runtime_ms = 0;  // declared max_runtime; 0: none
  bool spot = false;       // the job accepts being preempted (it preempts no spot job of its
                           // own priority)
};

/// What a node (or a group of nodes) offers a tenant's jobs. Large values mean "no limit".
struct WaitCapacity {
  static constexpr int64_t kAny = std::numeric_limits<int64_t>::max() / 4;
  int32_t whole_gpus = 0;  // whole GPUs free
  int32_t max_free_milli = 0;
  int64_t cpu_milli = kAny;
  int64_t memory_mib = kAny;
  int64_t quota_milli = kAny;  // what the tenant's quota still allows on this GPU model (a
                               // job is admitted when one replica's GPU milli fits in it)
  // >= 0: only jobs asking the quota for more than this (a lender reclaiming; or what a quota
  // that grew allows now and did not before)
  int64_t quota_blocked_above = -1;
  int64_t runtime_limit = kAny;  // below kAny: only jobs with 0 < runtime <= limit (reserved)
  bool by_preempting = false;    // offered by preempting running jobs (not free now)
  int min_priority = std::numeric_limits<int>::min();  // only jobs of a higher priority
  // Spot jobs of this priority are not admitted (what is offered includes spot jobs of their
  // own priority, which they may not preempt).
  int spot_excluded_priority = std::numeric_limits<int>::min();

  bool operator==(const WaitCapacity&) const = default;

  /// Whether a job with this need may fit (one dimension at a time).
  bool admits(const WaitNeed& n, int priority) const {
    if (priority <= min_priority || (n.spot && priority == spot_excluded_priority)) return false;
    if (n.share_milli > 0 ? n.share_milli > max_free_milli : n.whole_gpus > whole_gpus)
      return false;
    if (n.cpu_milli > cpu_milli || n.memory_mib > memory_mib) return false;
    if (n.quota_each > quota_milli) return false;
    if (quota_blocked_above >= 0 && n.quota_milli <= quota_blocked_above) return false;
    return runtime_limit == kAny || (n.runtime_ms > 0 && n.runtime_ms <= runtime_limit);
  }
};

/// The index. Each entry carries the caller's pointer to its job (`owner`), returned by queries.
class WaitIndex {
 public:
  /// Adds a job to the partition (tenant, signature); tenants are small ids from 0 (the
  /// scheduler's interned ones). The key's job_id must stay valid while the job is in the
  /// index. `wait_class` >= 0: the job waits whenever another of its class in the partition
  /// does (mark_waiting), and the class's jobs have the same need but for the runtime, and the
  /// same priority; -1: it is always asked about.
  void add(int tenant, int signature, const QueueKey& key, const WaitNeed& need, void* owner,
           int wait_class = -1);
  /// Removes a job added before (with the same tenant, signature and key).
  void remove(int tenant, int signature, const QueueKey& key);
  /// Removes every job.
  void clear();

  /// Marks the wait class's jobs in the partition (tenant, signature) that end before the
  /// reservation, or those that do not (see clear_waiting), as waiting until the next
  /// clear_waiting: queries skip them as if `accept` refused them.
  void mark_waiting(int tenant, int signature, int wait_class, bool ends_before);
  /// Forgets every mark. Until the next call, a job ends before the reservation when it declares
  /// a runtime of at most `ends_before_limit` (-1: none does).
  void clear_waiting(int64_t ends_before_limit) {
    ++waiting_epoch_;
    ends_before_limit_ = ends_before_limit;
  }

  /// Signature -> partition id, in signature order (flat: queries walk them often).
  using Partitions = boost::container::flat_map<int, int>;
  /// The partitions (signatures) of a tenant that hold jobs, as (signature, partition id).
  const Partitions& partitions_of(int tenant) const;

  /// Whether the partition may hold a job the capacity admits (by the least needs of its jobs).
  bool may_admit(int partition, const WaitCapacity& cap) const {
    return partitions_[partition].summary.may_admit(cap);
  }
  /// Wait classes get a bit per partition, the first kClassBits of them; jobs of later ones
  /// (and of no class) are always looked at one by one.
  static constexpr size_t kClassBits = 256;
  using ClassBits = std::bitset<kClassBits>;
  /// The capacities to ask of one partition. A query also learns, as it meets them, which of
  /// the partition's wait classes some capacity may admit (a class's jobs differ only in their
  /// declared runtime): blocks without such a class are skipped whole. Reset them (or make a new
  /// query) when the capacities change or a job was added to the index.
  struct PartitionQuery {
    int partition = 0;
    std::vector<const WaitCapacity*> caps;
    mutable ClassBits known, admitted;  // classes asked about; those some capacity admits
  };
  class Resume;
  /// The first job in queue order, over the queries' partitions, after `after` (nullptr: from
  /// the start), that one of its partition's capacities admits and `accept(owner)` accepts, as
  /// its owner; nullptr when there is none. Only the partitions' blocks that may hold one are
  /// read; `accept` is asked about admitted jobs in queue order, up to the answer, at most once
  /// each (so it may decide the jobs it refuses).
  /// With `resume`, the query starts where the last one given it stopped when it can (see
  /// Resume), instead of finding each partition's place again, and leaves its own place there.
  template <typename Accept>
  void* first_admitted(std::span<const PartitionQuery> queries, const QueueKey* after,
                       Accept&& accept, Resume* resume = nullptr) const;
  /// The same for one partition.
  template <typename Accept>
  void* first_admitted(int partition, const QueueKey* after,
                       const std::vector<const WaitCapacity*>& caps, Accept&& accept) const {
    PartitionQuery q{partition, caps};
    return first_admitted(std::span<const PartitionQuery>(&q, 1), after, accept);
  }
  /// The first job of the partition after `after`, with its key (nullptr: none).
  void* first_after(int partition, const QueueKey* after, QueueKey* key = nullptr) const;

  /// Jobs in the index.
  size_t size() const { return size_; }
  /// Counts additions (and clears): while it is unchanged, no partition was made and no
  /// summary grew, so queries built before may still be asked.
  uint64_t additions() const { return additions_; }

  /// Checks the blocks' summaries against their entries (for tests); false on a mismatch.
  bool consistent() const;

 private:
  static constexpr size_t kBlock = 64;
  static constexpr uint16_t kNoBit = 0xffff;
  struct Entry {
    QueueKey key;
    WaitNeed need;
    void* owner = nullptr;
    uint16_t bit = kNoBit;  // its wait class's bit in the partition
  };

  // The least needs over blocks (or a partition's blocks), and the most any job asks of the
  // quota, for skipping them whole.
  struct Summary {
    int32_t min_whole = std::numeric_limits<int32_t>::max();
    int32_t min_share = std::numeric_limits<int32_t>::max();
    int64_t min_cpu = WaitCapacity::kAny, min_memory = WaitCapacity::kAny;
    int64_t min_quota = WaitCapacity::kAny, min_runtime = WaitCapacity::kAny;
    int64_t max_quota = -1;
    void add(const WaitNeed& need);
    void add(const Summary& other);
    bool may_admit(const WaitCapacity& cap) const;
    bool operator==(const Summary&) const = default;
  };
  struct Block {
    std::vector<Entry> entries;  // in queue order
    // The least need of the block's jobs in each dimension (kAny-like when no job has it).
    Summary summary;
    ClassBits classes;       // of its jobs
    uint32_t unclassed = 0;  // jobs without a bit
    void summarise();
  };
  // Where a query reads a partition next: (query, block, entry), with the entry's key while
  // it is in the query's heap.
  struct Cursor {
    size_t query, block, entry;
    const QueueKey* key;
  };
  struct Partition {
    std::vector<Block> blocks;           // in queue order, none empty
    Summary summary;                     // of all its blocks
    std::map<int, uint16_t> class_bits;  // wait class -> bit (forgotten when it empties)
    // Per bit, its class's need (a job's, runtime aside) and priority.
    std::vector<std::pair<WaitNeed, int>> class_needs;
    // Marked, for jobs that end after the reservation [0] and before it [1], while
    // waiting_epoch is the index's.
    ClassBits waiting[2];
    uint64_t waiting_epoch = 0;
    void summarise();
  };
  static bool ends_before(const WaitNeed& need, int64_t limit) {
    return need.runtime_ms > 0 && need.runtime_ms <= limit;
  }
  // Whether no job of the block may be an answer: each is of a class no capacity of the query
  // admits, or of one marked waiting (for the jobs like it).
  bool none_wanted(const PartitionQuery& q, const Partition& p, const Block& b) const {
    ClassBits unknown = b.classes & ~q.known;
    if (unknown.any()) learn_classes(q, p, unknown);  // (the walk of its jobs reads them too)
    if (b.unclassed > 0) return false;
    ClassBits wanted = b.classes & q.admitted;
    if (p.waiting_epoch != waiting_epoch_) return wanted.none();
    if ((wanted & ~p.waiting[0]).any()) return false;
    return b.summary.min_runtime > ends_before_limit_ || (wanted & ~p.waiting[1]).none();
  }
  // Asks the query's capacities about the classes' needs (any runtime passes).
  void learn_classes(const PartitionQuery& q, const Partition& p, const ClassBits& classes) const;
  bool waits(const Partition& p, const Entry& e) const {
    return e.bit != kNoBit && p.waiting_epoch == waiting_epoch_ &&
           p.waiting[ends_before(e.need, ends_before_limit_)].test(e.bit);
  }
  // The block that holds (or would hold) the key.
  static size_t block_for(const Partition& p, const QueueKey& key);

  std::vector<Partition> partitions_;
  std::map<std::pair<int, int>, int> partition_ids_;  // (tenant, signature) -> partition
  std::vector<Partitions> by_tenant_;                 // tenant -> its partitions
  size_t size_ = 0;
  uint64_t additions_ = 0;
  uint64_t mutations_ = 0;  // counts additions, removals and clears (for Resume)
  uint64_t waiting_epoch_ = 1;
  int64_t ends_before_limit_ = -1;
};

/// Where a query over some partitions stopped. The next query given it resumes there when the
/// jobs it passed over would be passed over again: the same queries are asked (the caller calls
/// reset() when their capacities change or another set of partitions is asked), the index is
/// unchanged (no job added or removed, no clear_waiting; marks only add to what is passed over,
/// and `accept` must refuse again what it refused) and `after` is not before the last query's.
/// Otherwise the query starts afresh.
class WaitIndex::Resume {
 public:
  void reset() { valid_ = false; }
  /// Whether the last query given it resumed where the one before stopped.
  bool resumed() const { return resumed_; }

 private:
  friend class WaitIndex;
  bool resumable(const WaitIndex& index, const QueueKey* after, size_t queries) const {
    if (!valid_ || queries_ != queries || mutations_ != index.mutations_ ||
        waiting_epoch_ != index.waiting_epoch_)
      return false;
    return !has_after_ || (after && !(*after < after_));
  }
  void remember(const WaitIndex& index, const QueueKey* after, size_t queries) {
    valid_ = true;
    queries_ = queries;
    mutations_ = index.mutations_;
    waiting_epoch_ = index.waiting_epoch_;
    has_after_ = after != nullptr;
    if (!after) return;
    after_id_ = *after->job_id;  // (the caller's key may point at a string that changes)
    after_ = *after;
    after_.job_id = &after_id_;
  }
  std::vector<Cursor> heap_;
  bool valid_ = false, resumed_ = false;
  size_t queries_ = 0;
  uint64_t mutations_ = 0, waiting_epoch_ = 0;
  bool has_after_ = false;
  QueueKey after_;
  std::string after_id_;
};

template <typename Accept>
void* WaitIndex::first_admitted(std::span<const PartitionQuery> queries, const QueueKey* after,
                                Accept&& accept, Resume* resume) const {
  // Fills `active` with the query's capacities that may admit a job of the block (asking the
  // block's summary); false when none admits the block's first priority, nor so any later one.
  boost::container::small_vector<const WaitCapacity*, 32> active;
  auto ask = [&](const PartitionQuery& q, const Block& block) {
    active.clear();
    bool higher_priority = false;
    for (const WaitCapacity* cap : q.caps) {
      if (block.entries.front().key.priority <= cap->min_priority) continue;
      higher_priority = true;
      if (block.summary.may_admit(*cap)) active.push_back(cap);
    }
    return higher_priority;
  };
  // The next block at or after `b` of the query's partition that may hold an admitted job (the
  // partition's block count when none).
  auto next_block = [&](const PartitionQuery& q, size_t b) {
    const Partition& p = partitions_[q.partition];
    for (; b < p.blocks.size(); ++b) {
      if (!ask(q, p.blocks[b])) return p.blocks.size();
      if (!active.empty() && !none_wanted(q, p, p.blocks[b])) return b;
    }
    return b;
  };
  // Where each query's partition is read next, the first in queue order on top. A partition is
  // read until another's next job comes first: `accept` is asked in queue order, and the first
  // job it accepts is the answer.
  auto key_of = [&](const Cursor& c) -> const QueueKey& {
    return partitions_[queries[c.query].partition].blocks[c.block].entries[c.entry].key;
  };
  auto later = [](const Cursor& a, const Cursor& b) { return *b.key < *a.key; };
  std::vector<Cursor> local;
  std::vector<Cursor>& heap = resume ? resume->heap_ : local;
  if (resume) resume->resumed_ = resume->resumable(*this, after, queries.size());
  if (resume && resume->resumed_) {
    // The cursors are where the last query stopped (its answer on top): those at or before
    // `after` move past it.
    while (!heap.empty() && after && !(*after < *heap.front().key)) {
      std::pop_heap(heap.begin(), heap.end(), later);
      Cursor c = heap.back();
      heap.pop_back();
      const Partition& p = partitions_[queries[c.query].partition];
      if (++c.entry == p.blocks[c.block].entries.size()) {
        c.block = next_block(queries[c.query], c.block + 1);
        c.entry = 0;
        if (c.block == p.blocks.size()) continue;
      }
      c.key = &key_of(c);
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  } else {
    heap.clear();
    for (size_t i = 0; i < queries.size(); ++i) {
      const Partition& p = partitions_[queries[i].partition];
      size_t b = next_block(queries[i], after ? block_for(p, *after) : 0);
      size_t e = 0;
      if (b < p.blocks.size() && after) {
        const auto& entries = p.blocks[b].entries;
        e = static_cast<size_t>(
            std::upper_bound(entries.begin(), entries.end(), *after,
                             [](const QueueKey& k, const Entry& x) { return k < x.key; }) -
            entries.begin());
        if (e == entries.size()) b = next_block(queries[i], b + 1), e = 0;
      }
      if (b < p.blocks.size()) {
        heap.push_back({i, b, e, nullptr});
        heap.back().key = &key_of(heap.back());
      }
    }
    std::make_heap(heap.begin(), heap.end(), later);
  }
  // (Remembered as each query ends: one that `accept` left by throwing is not resumed.)
  if (resume) resume->valid_ = false;
  auto answer = [&](void* owner) {
    if (resume) resume->remember(*this, after, queries.size());
    return owner;
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Cursor c = heap.back();
    heap.pop_back();
    const PartitionQuery& q = queries[c.query];
    const Partition& partition = partitions_[q.partition];
    const Block& block = partition.blocks[c.block];
    const QueueKey* next_other = heap.empty() ? nullptr : heap.front().key;
    ask(q, block);
    bool paused = false;
    // Jobs no capacity admits, or that wait, are passed over without a look at the other
    // partitions: `accept` is never asked about them, and marks only ever grow in a query, so
    // one passed over now would be passed over at its turn too. The read pauses at the first
    // that `accept` would be asked about when another partition's next job comes first.
    for (; c.entry < block.entries.size(); ++c.entry) {
      const Entry& e = block.entries[c.entry];
      if (e.bit != kNoBit && !q.admitted.test(e.bit)) continue;  // (learnt: next_block)
      if (waits(partition, e)) continue;
      bool admitted = std::any_of(active.begin(), active.end(), [&](const WaitCapacity* cap) {
        return cap->admits(e.need, e.key.priority);
      });
      if (!admitted) continue;
      if (next_other && *next_other < e.key) {
        paused = true;
        break;
      }
      if (accept(e.owner)) {
        if (resume) {  // (its place: the next query moves past it once it is decided)
          c.key = &e.key;
          heap.push_back(c);
          std::push_heap(heap.begin(), heap.end(), later);
        }
        return answer(e.owner);
      }
    }
    if (!paused) {
      c.block = next_block(q, c.block + 1);
      c.entry = 0;
      if (c.block == partition.blocks.size()) continue;
    }
    c.key = &key_of(c);
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), later);
  }
  return answer(nullptr);
}

}  // namespace gpucloud::sched
