#include "sched/policies/share_placer.h"

#include <algorithm>
#include <climits>
#include <numeric>

#include "sched/policies/default_policy.h"

namespace gpucloud::sched {

namespace {

bool same_scoring(const PodRequest& a, const PodRequest& b) {
  return a.cpu_milli == b.cpu_milli && a.num_gpu == b.num_gpu && a.gpu_milli == b.gpu_milli &&
         a.model_mask == b.model_mask;
}

}  // namespace

SharePlacer::SharePlacer(std::vector<ShareNode> nodes, const WorkloadProfile& profile,
                         Policy policy, uint64_t seed, ScoreNormalizers normalizers)
    : nodes_(std::move(nodes)),
      profile_(profile),
      policy_(policy),
      normalizers_(normalizers),
      rng_(seed) {
  if (policy_ == Policy::kDefault) gpu_per_cpu_ = gpu_milli_per_cpu_milli(profile_);
  std::vector<int> order(nodes_.size());
  std::iota(order.begin(), order.end(), 0);
  rng_.shuffle(order);
  rank_.resize(nodes_.size());
  for (size_t pos = 0; pos < order.size(); ++pos) rank_[order[pos]] = static_cast<int>(pos);
  node_group_.reserve(nodes_.size());
  for (const ShareNode& node : nodes_) {
    int g = intern_group(NodeShape::of(node));
    node_group_.push_back(g);
    frag_sum_ += groups_[g].frag;
    free_milli_ += node.free_gpu_milli();
  }
}

int SharePlacer::intern_group(const NodeShape& shape) {
  auto [it, added] = group_index_.try_emplace(shape, static_cast<int>(groups_.size()));
  if (added)
    groups_.push_back({shape, node_fragmentation(shape, profile_), {}, guarded_fits(shape), {}});
  return it->second;
}

int SharePlacer::intern_request(const PodRequest& pod) {
  uint64_t key =
      static_cast<uint64_t>(pod.cpu_milli) * 1000003u ^ static_cast<uint64_t>(pod.num_gpu) << 40 ^
      static_cast<uint64_t>(pod.gpu_milli) << 20 ^ pod.model_mask * 0x9E3779B97F4A7C15ull;
  auto& bucket = request_index_[key];
  for (const auto& [known, id] : bucket)
    if (same_scoring(known, pod)) return id;
  bucket.emplace_back(pod, requests_);
  return requests_++;
}

std::vector<uint8_t> SharePlacer::guarded_fits(const NodeShape& shape) const {
  std::vector<uint8_t> fits(guarded_.size());
  for (size_t t = 0; t < guarded_.size(); ++t) fits[t] = type_fits(shape, guarded_[t]) ? 1 : 0;
  return fits;
}

void SharePlacer::guard_scarce_types(const WorkloadProfile& all_types) {
  if (policy_ != Policy::kDefault) return;
  guarded_.clear();
  for (const TypicalPod& t : all_types.types) {
    if (t.num_gpu <= 0 || t.gpu_milli <= 0) continue;
    int hosts = 0;
    for (int g : node_group_) hosts += type_fits(groups_[g].shape, t) ? 1 : 0;
    if (t.model_mask != 0 || hosts * 10 < static_cast<int>(nodes_.size())) guarded_.push_back(t);
  }
  for (Group& g : groups_) {
    g.hosts = guarded_fits(g.shape);
    g.lost.clear();
    std::fill(g.scores.begin(), g.scores.end(), kUnknown);
  }
  hosts_now_.assign(guarded_.size(), 0);
  for (int g : node_group_)
    for (size_t t = 0; t < guarded_.size(); ++t) hosts_now_[t] += groups_[g].hosts[t];
  host_cost_.resize(guarded_.size());
  for (size_t t = 0; t < guarded_.size(); ++t) update_host_cost(static_cast<int>(t));
}

void SharePlacer::update_host_cost(int type) {
  host_cost_[type] =
      scarce_host_cost(guarded_[type], hosts_now_[type], static_cast<double>(nodes_.size()));
}

void SharePlacer::note_lost_hosts(int group, int request, const PodRequest& pod) {
  std::vector<std::vector<int>>& lost = groups_[group].lost;
  if (static_cast<int>(lost.size()) <= request) lost.resize(request + 1);
  NodeShape after = shape_after_whole(groups_[group].shape, pod);
  if (pod_kind(pod) == PodKind::kShare)  // the fitting GPU with the least free milli
    for (int i = 0; i < after.num_gpus; ++i)
      if (after.gpu_free[i] >= pod.gpu_milli) {
        after.gpu_free[i] = static_cast<int16_t>(after.gpu_free[i] - pod.gpu_milli);
        break;
      }
  for (size_t t = 0; t < guarded_.size(); ++t)
    if (groups_[group].hosts[t] && !type_fits(after, guarded_[t]))
      lost[request].push_back(static_cast<int>(t));
}

double SharePlacer::scarcity_cost(int group, int request) const {
  const std::vector<std::vector<int>>& lost = groups_[group].lost;
  if (static_cast<int>(lost.size()) <= request) return 0;
  double cost = 0;
  for (int t : lost[request]) cost += host_cost_[t];
  return cost;
}

double SharePlacer::compute_score(const NodeShape& shape, const PodRequest& pod,
                                  double frag) const {
  switch (policy_) {
    case Policy::kRandom:
      return 0;
    case Policy::kDotProduct:
      return dot_product_score(shape, pod, normalizers_);
    case Policy::kClustering:
      return clustering_score(shape, pod, normalizers_);
    case Policy::kPacking:
      return packing_score(shape, pod);
    case Policy::kBestFit:
      return best_fit_raw_score(shape, pod, normalizers_);
    case Policy::kFgd:
      return fgd_score(shape, pod, profile_, frag);
    case Policy::kDefault:
      return default_score(shape, pod, profile_, frag, gpu_per_cpu_);
  }
  return 0;
}

double SharePlacer::cached_score(int group, int request, const PodRequest& pod) {
  std::vector<double>& scores = groups_[group].scores;
  if (static_cast<int>(scores.size()) <= request) scores.resize(request + 1, kUnknown);
  double& s = scores[request];
  if (s == kUnknown) {
    const NodeShape& shape = groups_[group].shape;
    ShareNode probe;  // the shape as a node, for the CPU and GPU part of the fit check
    probe.model = shape.model;
    probe.num_gpus = shape.num_gpus;
    probe.cpu_milli = shape.cpu_free;
    probe.gpu_free = shape.gpu_free;
    probe.memory_mib = pod.memory_mib;
    PodRequest no_memory = pod;
    no_memory.memory_mib = 0;
    s = fits(probe, no_memory) ? compute_score(shape, pod, groups_[group].frag) : kNoFit;
    if (s != kNoFit && !guarded_.empty()) note_lost_hosts(group, request, pod);
  }
  return s;
}

int SharePlacer::best_after_scarcity_cost(int request) {
  // Costs are never negative, so a node whose score before its cost is below the best total so
  // far cannot win: start from the best score before cost and price only nodes that can beat it.
  auto ahead = [&](double s, int node, double best, int best_node) {
    return s > best || (s == best && rank_[node] < rank_[best_node]);
  };
  auto [chosen, top] = feasible_.front();
  for (auto [node, raw] : feasible_)
    if (ahead(raw, node, top, chosen)) chosen = node, top = raw;
  ++pick_calls_;
  if (cost_memo_.size() < groups_.size()) cost_memo_.resize(groups_.size(), {0, 0});
  auto cost = [&](int node) {  // nodes in one state share it
    auto& [stamp, value] = cost_memo_[node_group_[node]];
    if (stamp != pick_calls_)
      stamp = pick_calls_, value = scarcity_cost(node_group_[node], request);
    return value;
  };
  double best = top - cost(chosen);
  for (auto [node, raw] : feasible_) {
    if (node == chosen || raw < best) continue;
    double s = raw - cost(node);
    if (ahead(s, node, best, chosen)) chosen = node, best = s;
  }
  return chosen;
}

std::vector<int> SharePlacer::choose_gpus(const ShareNode& node, int group, const PodRequest& pod) {
  if (pod_kind(pod) != PodKind::kShare) return default_gpu_choice(node, pod);
  if (policy_ == Policy::kRandom) {
    std::vector<int> fitting;
    for (int i = 0; i < node.num_gpus; ++i)
      if (node.gpu_free[i] >= pod.gpu_milli) fitting.push_back(i);
    return {fitting[rng_.below(fitting.size())]};
  }
  if (policy_ == Policy::kDefault)
    return {default_share_gpu(node, pod, profile_, groups_[group].frag, gpu_per_cpu_)};
  if (policy_ != Policy::kFgd) return default_gpu_choice(node, pod);
  NodeShape unsorted = NodeShape::of(node, /*sort=*/false);
  int best = -1, best_score = -1;
  for (int i = 0; i < node.num_gpus; ++i) {
    int s = fgd_share_gpu_score(unsorted, i, pod, profile_, groups_[group].frag);
    if (s > best_score) best = i, best_score = s;  // first GPU with the best score
  }
  return {best};
}

void SharePlacer::apply(int node, const PodRequest& pod, const std::vector<int>& gpus) {
  ShareNode& n = nodes_[node];
  int old_group = node_group_[node];
  free_milli_ -= n.free_gpu_milli();
  place_pod(n, pod, gpus);
  free_milli_ += n.free_gpu_milli();
  int new_group = intern_group(NodeShape::of(n));
  node_group_[node] = new_group;
  for (size_t t = 0; t < guarded_.size(); ++t) {
    int change = groups_[new_group].hosts[t] - groups_[old_group].hosts[t];
    if (change == 0) continue;
    hosts_now_[t] += change;
    update_host_cost(static_cast<int>(t));
  }
  frag_sum_ += groups_[new_group].frag - groups_[old_group].frag;
}

std::optional<SharePlacement> SharePlacer::place(const PodRequest& pod) {
  int request = intern_request(pod);
  feasible_.clear();
  int lo = INT_MAX, hi = INT_MIN;  // for BestFit's normalisation (integer scores)
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const ShareNode& n = nodes_[i];
    if (n.memory_used + pod.memory_mib > n.memory_mib) continue;
    double s = cached_score(node_group_[i], request, pod);
    if (s == kNoFit) continue;
    feasible_.emplace_back(static_cast<int>(i), s);
    lo = std::min(lo, static_cast<int>(s));
    hi = std::max(hi, static_cast<int>(s));
  }
  if (feasible_.empty()) return std::nullopt;
  int chosen = -1;
  if (policy_ == Policy::kRandom) {
    chosen = feasible_[rng_.below(feasible_.size())].first;
  } else if (!guarded_.empty()) {
    chosen = best_after_scarcity_cost(request);
  } else {
    double best = kUnknown;
    int best_rank = INT_MAX;
    for (auto [node, raw] : feasible_) {
      double s =
          policy_ == Policy::kBestFit ? normalize_min_max(static_cast<int>(raw), lo, hi) : raw;
      if (s > best || (s == best && rank_[node] < best_rank)) {
        best = s;
        best_rank = rank_[node];
        chosen = node;
      }
    }
  }
  SharePlacement placement{chosen, choose_gpus(nodes_[chosen], node_group_[chosen], pod)};
  apply(chosen, pod, placement.gpus);
  return placement;
}

}  // namespace gpucloud::sched
