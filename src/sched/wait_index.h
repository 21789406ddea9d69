// WaitIndex: the pending jobs of each tenant, split by the set of node kinds they can run on
// (their fit signature), and within that by request: jobs of one group ask for the same thing
// (shape, replicas, priority) and differ only in their declared runtime. An event that frees
// capacity asks, per tenant, for the first job in queue order that may fit what was freed. A
// group whose need does not fit, or whose jobs all wait already in this pass (the caller says
// so), is skipped whole, so the answer costs the distinct requests of the tenant, not its jobs.
// The answer is a candidate (needs are compared one dimension at a time, GPU topology and node
// labels beyond the signature are not looked at); the scheduler decides it for real.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpucloud::sched {

/// Where a job stands in its tenant's queue: higher priority first, then the queue policy's rank
/// (0 for all under fifo; the declared runtime under sjf), then older, then by id.
struct QueueKey {
  int priority = 0;
  int64_t rank = 0;
  int64_t created_at = 0;
  const std::string* job_id = nullptr;  // owned by the job, which outlives its index entry

  bool operator<(const QueueKey& o) const {
    if (priority != o.priority) return priority > o.priority;
    if (rank != o.rank) return rank < o.rank;
    if (created_at != o.created_at) return created_at < o.created_at;
    return *job_id < *o.job_id;
  }
};

/// What one replica of a waiting job needs, and what the whole job asks of its tenant's quota.
struct WaitNeed {
  int32_t whole_gpus = 0;   // whole GPUs (0: none, or a share)
  int32_t share_milli = 0;  // 1..999 for a share, else 0
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t quota_milli = 0;  // GPU milli of all replicas together
  int64_t runtime_ms = 0;   // declared max_runtime; 0: none
  bool spot = false;        // the job accepts being preempted (it preempts no spot job of its
                            // own priority)
};

/// What a node (or a group of nodes) offers a tenant's jobs. Large values mean "no limit".
struct WaitCapacity {
  static constexpr int64_t kAny = std::numeric_limits<int64_t>::max() / 4;
  int32_t whole_gpus = 0;  // whole GPUs free
  int32_t max_free_milli = 0;
  int64_t cpu_milli = kAny;
  int64_t memory_mib = kAny;
  int64_t quota_milli = kAny;        // what the tenant's quota still allows on this GPU model
  int64_t quota_blocked_above = -1;  // >= 0: only jobs asking for more than this (reclaiming)
  int64_t runtime_limit = kAny;      // below kAny: only jobs with 0 < runtime <= limit (reserved)
  int min_priority = std::numeric_limits<int>::min();  // only jobs of a higher priority
  // Spot jobs of this priority are not admitted (what is offered includes spot jobs of their
  // own priority, which they may not preempt).
  int spot_excluded_priority = std::numeric_limits<int>::min();

  /// Whether a job with this need may fit (one dimension at a time).
  bool admits(const WaitNeed& n, int priority) const {
    return admits_any_runtime(n, priority) && admits_runtime(n.runtime_ms);
  }
  /// admits(), the declared runtime aside.
  bool admits_any_runtime(const WaitNeed& n, int priority) const {
    if (priority <= min_priority || (n.spot && priority == spot_excluded_priority)) return false;
    if (n.share_milli > 0 ? n.share_milli > max_free_milli : n.whole_gpus > whole_gpus)
      return false;
    if (n.cpu_milli > cpu_milli || n.memory_mib > memory_mib || n.quota_milli > quota_milli)
      return false;
    return quota_blocked_above < 0 || n.quota_milli > quota_blocked_above;
  }
  /// Whether every job this capacity admits, `other` admits too.
  bool within(const WaitCapacity& other) const {
    constexpr int kNone = std::numeric_limits<int>::min();
    return whole_gpus <= other.whole_gpus && max_free_milli <= other.max_free_milli &&
           cpu_milli <= other.cpu_milli && memory_mib <= other.memory_mib &&
           quota_milli <= other.quota_milli && quota_blocked_above >= other.quota_blocked_above &&
           runtime_limit <= other.runtime_limit && min_priority >= other.min_priority &&
           (other.spot_excluded_priority == kNone ||
            other.spot_excluded_priority == spot_excluded_priority);
  }
  /// Whether a job declaring this runtime (0: none) may use what is offered.
  bool admits_runtime(int64_t runtime_ms) const {
    return runtime_limit == kAny || (runtime_ms > 0 && runtime_ms <= runtime_limit);
  }
};

/// The declared runtimes of a group's jobs, for the caller's view of the group.
struct WaitRuntimes {
  int64_t shortest = WaitCapacity::kAny;  // least declared runtime (kAny: none declares one)
  int64_t longest = 0;                    // most; kAny when some job declares none
};

/// The index. Each entry carries the caller's pointer to its job (`owner`), returned by queries.
class WaitIndex {
 public:
  /// Adds a job to the partition (tenant, signature), in the caller's group `group`: the jobs of
  /// a group must have the same priority and need but for runtime_ms. The key's job_id must stay
  /// valid while the job is in the index.
  void add(int tenant, int signature, int group, const QueueKey& key, const WaitNeed& need,
           void* owner);
  /// Removes a job added before (with the same tenant, signature, group and key).
  void remove(int tenant, int signature, int group, const QueueKey& key);
  /// Pins a job added before, or unpins it: a pinned job is still looked at (by `accept`) when
  /// its group is closed (see first_admitted). For the few jobs whose group does not decide
  /// whether they wait (a job that chose victims).
  void pin(int tenant, int signature, int group, const QueueKey& key, bool pinned);
  /// Removes every job.
  void clear();

  /// The partitions (signatures) of a tenant that hold jobs, as (signature, partition id).
  const std::map<int, int>& partitions_of(int tenant) const;

  /// Drops the capacities that admit no job another one does not (a query over what is left
  /// answers the same, faster). Keeps the order of the rest.
  static void drop_within(std::vector<WaitCapacity>& caps);

  /// The first job of the partition after `after` (nullptr: from the start) and ahead of
  /// `before` (nullptr: anywhere) that one of `caps` admits and `accept(owner)` accepts, as its
  /// owner; nullptr when there is none. `closed(owner, runtimes)`, asked with a job of a group
  /// whose need some capacity admits, says whether `accept` refuses every job of that group but
  /// the pinned ones (only those are then looked at). A group found closed is taken to stay so
  /// while the caller passes the same `stamp` (0: not kept) and no job joins it. Costs the
  /// partition's groups, and in each group not closed whose first job after `after` comes ahead
  /// of the best so far, a binary search and the jobs visited.
  template <typename Closed, typename Accept>
  void* first_admitted(int partition, const QueueKey* after, const std::vector<WaitCapacity>& caps,
                       Closed&& closed, Accept&& accept, const QueueKey* before = nullptr,
                       uint64_t stamp = 0) const;
  /// The first job of the partition after `after`, with its key (nullptr: none).
  void* first_after(int partition, const QueueKey* after, QueueKey* key = nullptr) const;

  /// Jobs in the index.
  size_t size() const { return size_; }
  /// Groups in the index (distinct requests per tenant and signature).
  size_t groups() const;

  /// Checks the groups' order and summaries against their entries (for tests); false on a
  /// mismatch.
  bool consistent() const;

 private:
  struct Entry {
    QueueKey key;
    int64_t runtime_ms = 0;
    void* owner = nullptr;
  };
  struct Group {
    int id = 0;                  // the caller's
    WaitNeed need;               // runtime_ms aside
    int priority = 0;            // of every entry
    std::vector<Entry> entries;  // in queue order, never empty
    std::vector<Entry> pinned;   // some of them, in queue order
    WaitRuntimes runtimes;
    int64_t undeclared = 0;             // entries without a declared runtime
    mutable uint64_t closed_stamp = 0;  // the caller's stamp when the group was found closed
    void summarise();
  };
  struct Partition {
    std::vector<Group> groups;                 // in no particular order
    std::unordered_map<int, size_t> group_at;  // the caller's group id -> index in groups
  };
  static std::vector<Entry>::const_iterator first_beyond(const std::vector<Entry>& entries,
                                                         const QueueKey* after);

  std::vector<Partition> partitions_;
  std::map<std::pair<int, int>, int> partition_ids_;  // (tenant, signature) -> partition
  std::map<int, std::map<int, int>> by_tenant_;       // tenant -> signature -> partition
  size_t size_ = 0;
};

template <typename Closed, typename Accept>
void* WaitIndex::first_admitted(int partition, const QueueKey* after,
                                const std::vector<WaitCapacity>& caps, Closed&& closed,
                                Accept&& accept, const QueueKey* before, uint64_t stamp) const {
  const Partition& p = partitions_[partition];
  void* best = nullptr;
  const QueueKey* bound = before;
  // The most of each dimension over the capacities: a need above it is admitted by none.
  WaitCapacity most;
  most.cpu_milli = most.memory_mib = most.quota_milli = 0;
  most.min_priority = std::numeric_limits<int>::max();
  for (const WaitCapacity& cap : caps) {
    most.whole_gpus = std::max(most.whole_gpus, cap.whole_gpus);
    most.max_free_milli = std::max(most.max_free_milli, cap.max_free_milli);
    most.cpu_milli = std::max(most.cpu_milli, cap.cpu_milli);
    most.memory_mib = std::max(most.memory_mib, cap.memory_mib);
    most.quota_milli = std::max(most.quota_milli, cap.quota_milli);
    most.min_priority = std::min(most.min_priority, cap.min_priority);
  }
  for (const Group& g : p.groups) {
    bool known_closed = stamp != 0 && g.closed_stamp == stamp;
    if (known_closed && g.pinned.empty()) continue;
    if (!most.admits_any_runtime(g.need, g.priority)) continue;
    // The capacities that admit the group's need: any runtime, or up to the longest limit.
    bool any_runtime = false, admitted = false;
    int64_t limit = 0;
    for (const WaitCapacity& cap : caps) {
      if (!cap.admits_any_runtime(g.need, g.priority)) continue;
      admitted = true;
      if (cap.runtime_limit == WaitCapacity::kAny) {
        any_runtime = true;
        break;
      }
      limit = std::max(limit, cap.runtime_limit);
    }
    if (!admitted || (!any_runtime && g.runtimes.shortest > limit)) continue;
    if (!known_closed && closed(g.entries.front().owner, g.runtimes)) {
      known_closed = true;
      g.closed_stamp = stamp;
    }
    if (known_closed && g.pinned.empty()) continue;
    const std::vector<Entry>& visit = known_closed ? g.pinned : g.entries;
    auto it = first_beyond(visit, after);
    for (; it != visit.end(); ++it) {
      if (bound && !(it->key < *bound)) break;
      if (!any_runtime && !(it->runtime_ms > 0 && it->runtime_ms <= limit)) continue;
      if (accept(it->owner)) {
        best = it->owner;
        bound = &it->key;
        break;
      }
    }
  }
  return best;
}

}  // namespace gpucloud::sched
