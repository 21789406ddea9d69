#include "sched/fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "model/gpu_model.h"

namespace gpucloud::sched {

bool gpu_matches(const JobRequest& req, const GpuState& gpu) {
  if (!gpu_model_matches(req.gpu_model, gpu.model, gpu.memory_mib)) return false;
  if (req.gpu_milli == 0 && req.gpu_memory_mib > gpu.memory_mib) return false;
  if (req.gpu_milli > 0 && req.gpu_memory_mib > gpu.memory_mib) return false;
  return true;
}

bool node_could_fit(const JobRequest& req, const NodeState& node, std::string* why) {
  auto fail = [&](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  if (!node.schedulable) return fail("not schedulable");
  for (const auto& [key, value] : req.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value)
      return fail(fmt::format("label {}={} not set", key, value));
  }
  if (req.capacity_class != CapacityClass::kAny) {
    auto it = node.labels.find("capacity-class");
    std::string cls = it == node.labels.end() ? "on-demand" : it->second;
    if (cls != to_string(req.capacity_class))
      return fail(fmt::format("capacity class: the node is {}, the job asks for {} nodes", cls,
                              to_string(req.capacity_class)));
  }
  if (req.max_price > 0 && node.price_per_gpu_hour > req.max_price)
    return fail(req.price_cap_from_cost
                    ? fmt::format("node price ${:.2f}/GPU-hour could take the job past its "
                                  "max_cost within its max_runtime (at most ${:.2f}/GPU-hour)",
                                  node.price_per_gpu_hour, req.max_price)
                    : fmt::format("node price ${:.2f}/GPU-hour exceeds the job's max_price ${:.2f}",
                                  node.price_per_gpu_hour, req.max_price));
  if (req.cpu_milli > node.cpu_milli) return fail("too few CPUs");
  if (req.memory_mib > node.memory_mib) return fail("too little memory");
  if (req.gpus > 0) {
    int matching = 0;
    for (const auto& g : node.gpus) matching += gpu_matches(req, g) ? 1 : 0;
    if (matching == 0) return fail("no matching GPU");
    if (matching < req.gpus) return fail(fmt::format("only {} matching GPUs", matching));
  }
  return true;
}

bool cpu_memory_fit(const JobRequest& req, const NodeState& node) {
  return node.cpu_used_milli + req.cpu_milli <= node.cpu_milli &&
         node.memory_used_mib + req.memory_mib <= node.memory_mib;
}

namespace {

// Whether GPU p of the node matches: from the mask for the first 64, asked beyond them.
bool matches_at(const JobRequest& req, const NodeState& node, uint64_t mask, size_t p) {
  return p < 64 ? (mask >> p & 1) != 0 : gpu_matches(req, node.gpus[p]);
}

}  // namespace

int free_matching_gpus(const NodeState& node, uint64_t match_mask, const JobRequest& req) {
  int n = 0;
  for (size_t p = 0; p < node.gpus.size(); ++p)
    if (node.gpus[p].whole_free() && matches_at(req, node, match_mask, p)) ++n;
  return n;
}

namespace {

int topology_score(const NodeState& node, const std::vector<int>& set) {
  int linked_pairs = 0;
  bool one_numa = true;
  for (size_t a = 0; a < set.size(); ++a) {
    const auto& ga = node.gpus[set[a]];
    if (ga.numa_node != node.gpus[set[0]].numa_node) one_numa = false;
    for (size_t b = a + 1; b < set.size(); ++b)
      if (ga.nvlink_mask & (uint64_t{1} << set[b])) ++linked_pairs;
  }
  int all_pairs = static_cast<int>(set.size() * (set.size() - 1) / 2);
  // Full NVLink clique first, then more links, then one NUMA node.
  return (linked_pairs == all_pairs ? 10000 : 0) + linked_pairs * 10 + (one_numa ? 1 : 0);
}

// Best-connected set of n GPUs among candidates: exhaustive for small counts, greedy beyond.
std::vector<int> best_set(const NodeState& node, const std::vector<int>& candidates, int n) {
  const size_t k = candidates.size();
  if (static_cast<int>(k) == n) return candidates;
  // Exhaustive search over combinations when cheap (8 choose 4 = 70).
  double combos = 1;
  for (int i = 0; i < n; ++i) combos = combos * static_cast<double>(k - i) / (i + 1);
  std::vector<int> best;
  int best_score = -1;
  if (combos <= 5000) {
    std::vector<bool> pick(k, false);
    std::fill(pick.begin(), pick.begin() + n, true);
    std::vector<int> set;  // one buffer for every combination (this runs per node ranked)
    set.reserve(n);
    do {
      set.clear();
      for (size_t i = 0; i < k; ++i)
        if (pick[i]) set.push_back(candidates[i]);
      int score = topology_score(node, set);
      if (score > best_score) {  // prev_permutation visits lexicographically smallest first
        best_score = score;
        best = set;
      }
    } while (std::prev_permutation(pick.begin(), pick.end()));
    return best;
  }
  // Greedy: grow from each start, adding the candidate with most links into the set.
  for (int start : candidates) {
    std::vector<int> set{start};
    while (static_cast<int>(set.size()) < n) {
      int pick = -1, pick_links = -1;
      for (int c : candidates) {
        if (std::find(set.begin(), set.end(), c) != set.end()) continue;
        int links = 0;
        for (int s : set) links += (node.gpus[s].nvlink_mask >> c) & 1;
        if (links > pick_links) pick = c, pick_links = links;
      }
      set.push_back(pick);
    }
    std::sort(set.begin(), set.end());
    int score = topology_score(node, set);
    if (score > best_score) best_score = score, best = set;
  }
  return best;
}

}  // namespace

bool gpus_fit(const JobRequest& req, const NodeState& node, uint64_t matching) {
  if (req.gpus == 0) return true;
  int found = 0;
  for (size_t p = 0; p < node.gpus.size(); ++p) {
    const auto& g = node.gpus[p];
    if (!matches_at(req, node, matching, p)) continue;
    if (req.gpu_milli > 0) {
      if (g.free_milli() >= req.gpu_milli && req.gpu_memory_mib <= g.memory_mib - g.used_memory_mib)
        return true;
    } else if (g.whole_free() && ++found >= req.gpus) {
      return true;
    }
  }
  return false;
}

uint64_t gpu_match_mask(const JobRequest& req, const NodeState& node) {
  uint64_t matching = 0;
  for (size_t p = 0; p < node.gpus.size() && p < 64; ++p)
    if (gpu_matches(req, node.gpus[p])) matching |= uint64_t{1} << p;
  return matching;
}

bool gpus_fit(const JobRequest& req, const NodeState& node) {
  return gpus_fit(req, node, gpu_match_mask(req, node));
}

std::optional<GpuChoice> choose_gpus(const JobRequest& req, const NodeState& node) {
  return choose_gpus(req, node, gpu_match_mask(req, node));
}

std::optional<GpuChoice> choose_gpus(const JobRequest& req, const NodeState& node,
                                     uint64_t matching) {
  GpuChoice choice;
  if (req.gpus == 0) return choice;
  if (req.gpu_milli > 0) {
    int best = -1;
    for (size_t i = 0; i < node.gpus.size(); ++i) {
      const auto& g = node.gpus[i];
      if (!matches_at(req, node, matching, i) || g.free_milli() < req.gpu_milli) continue;
      if (req.gpu_memory_mib > g.memory_mib - g.used_memory_mib) continue;
      if (best < 0 || g.free_milli() < node.gpus[best].free_milli()) best = static_cast<int>(i);
    }
    if (best < 0) return std::nullopt;
    choice.positions = {best};
    choice.milli = req.gpu_milli;
    return choice;
  }
  std::vector<int> candidates;
  for (size_t i = 0; i < node.gpus.size(); ++i)
    if (node.gpus[i].whole_free() && matches_at(req, node, matching, i))
      candidates.push_back(static_cast<int>(i));
  if (static_cast<int>(candidates.size()) < req.gpus) return std::nullopt;
  if (req.gpus == 1) {
    // Take the GPU whose NUMA node has the fewest free GPUs, to keep larger blocks whole.
    int best = -1, best_free = 1 << 30;
    for (int c : candidates) {
      int same = 0;
      for (int o : candidates) same += node.gpus[o].numa_node == node.gpus[c].numa_node ? 1 : 0;
      if (same < best_free) best = c, best_free = same;
    }
    choice.positions = {best};
  } else {
    choice.positions = best_set(node, candidates, req.gpus);
  }
  choice.topology_score = topology_score(node, choice.positions);
  return choice;
}

void apply_choice(const JobRequest& req, const GpuChoice& choice, NodeState& node) {
  for (int p : choice.positions) {
    node.gpus[p].used_milli += choice.milli;
    node.gpus[p].used_memory_mib +=
        req.gpu_milli > 0 ? req.gpu_memory_mib : node.gpus[p].memory_mib;
  }
  node.cpu_used_milli += req.cpu_milli;
  node.memory_used_mib += req.memory_mib;
}

void apply_replica_use(NodeState& node, const JobRequest& req, const ReplicaPlacement& rp,
                       int sign) {
  for (const auto& share : rp.gpus)
    for (auto& g : node.gpus)
      if (g.index == share.index) {
        g.used_milli += sign * share.milli;
        g.used_memory_mib += sign * (share.milli >= 1000 ? g.memory_mib : req.gpu_memory_mib);
      }
  node.cpu_used_milli += sign * rp.cpu_milli;
  node.memory_used_mib += sign * rp.memory_mib;
}

std::string describe_gpus(const JobRequest& req) {
  std::string model = req.gpu_model.empty() ? "GPU" : req.gpu_model;
  if (req.gpu_milli > 0) return fmt::format("{:.3g}×{}", req.gpu_milli / 1000.0, model);
  return fmt::format("{}×{}", req.gpus, model);
}

}  // namespace gpucloud::sched
