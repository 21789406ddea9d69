// NodeSlots: which slot holds a node, by its id. A sorted array of (hash of the id, slot):
// adding a node moves the entries after it (contiguous, microseconds at 10,000 nodes) instead
// of rehashing every node at once, as a hash map does when it grows (1.5 ms for one node's
// join at 10,000 nodes, every node a cache miss). Lookups are a binary search of the array.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

namespace gpucloud::sched {

class NodeSlots {
 public:
  /// The slot of the node `id`, or -1. `id_of(slot)` gives the id of a slot added before (ids
  /// are compared only where their hashes are equal).
  template <typename IdOf>
  int find(std::string_view id, IdOf&& id_of) const {
    const uint64_t h = hash(id);
    for (auto it = std::lower_bound(entries_.begin(), entries_.end(), Entry{h, kLeast});
         it != entries_.end() && it->first == h; ++it)
      if (id_of(it->second) == id) return it->second;
    return -1;
  }
  /// Adds a node not added before, at `slot`.
  void add(std::string_view id, int slot) {
    const Entry e{hash(id), slot};
    entries_.insert(std::upper_bound(entries_.begin(), entries_.end(), e), e);
  }
  /// The number of nodes added.
  size_t size() const { return entries_.size(); }

 private:
  using Entry = std::pair<uint64_t, int>;
  static constexpr int kLeast = std::numeric_limits<int>::min();
  static uint64_t hash(std::string_view id) { return std::hash<std::string_view>{}(id); }
  std::vector<Entry> entries_;
};

}  // namespace gpucloud::sched
