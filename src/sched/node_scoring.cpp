#include "sched/node_scoring.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sched/fit.h"

namespace gpucloud::sched {

std::optional<PlacementPolicy> parse_placement_policy(std::string_view name) {
  static const std::pair<std::string_view, PlacementPolicy> kNames[] = {
      {"first-fit", PlacementPolicy::kFirstFit},
      {"random", PlacementPolicy::kRandom},
      {"dot-product", PlacementPolicy::kDotProduct},
      {"clustering", PlacementPolicy::kClustering},
      {"packing", PlacementPolicy::kPacking},
      {"best-fit", PlacementPolicy::kBestFit},
      {"fgd", PlacementPolicy::kFgd},
      {"default", PlacementPolicy::kDefault},
  };
  for (const auto& [n, p] : kNames)
    if (n == name) return p;
  return std::nullopt;
}

void NodeScorer::set_profile(WorkloadProfile profile) {
  profile_ = std::move(profile);
  fragmentation_.clear();
  after_placement_.clear();
  gpu_per_cpu_ = gpu_milli_per_cpu_milli(profile_);
}

PodRequest NodeScorer::pod_of(const JobRequest& req) {
  PodRequest pod;
  pod.cpu_milli = req.cpu_milli;
  pod.memory_mib = req.memory_mib;
  pod.num_gpu = req.gpus;
  pod.gpu_milli = req.gpus == 0 ? 0 : req.gpu_milli > 0 ? req.gpu_milli : kMilliPerGpu;
  return pod;
}

NodeShape NodeScorer::shape_of(const NodeClass& node) {
  NodeShape s;
  auto [it, inserted] = models_.emplace(node.gpu_model, static_cast<int>(models_.size()));
  s.model = static_cast<int16_t>(node.state.gpus.empty() ? -1 : it->second);
  s.num_gpus = static_cast<int16_t>(std::min<size_t>(node.state.gpus.size(), kMaxNodeGpus));
  s.kinds = static_cast<uint8_t>((node.share_jobs > 0 ? NodeShape::kRunsShare : 0) |
                                 (node.whole_jobs > 0 ? NodeShape::kRunsWhole : 0));
  s.cpu_free = node.state.cpu_milli - node.state.cpu_used_milli;
  for (int i = 0; i < s.num_gpus; ++i)
    s.gpu_free[i] = static_cast<int16_t>(node.state.gpus[i].free_milli());
  std::sort(s.gpu_free.begin(), s.gpu_free.begin() + s.num_gpus);
  return s;
}

double NodeScorer::fragmentation_of(const NodeClass& node, const NodeShape& shape) {
  if (node.storage >= static_cast<int>(fragmentation_.size()))
    fragmentation_.resize(node.storage + 1);
  ByClass<double>& f = fragmentation_[node.storage];
  if (f.class_id != node.id) f = {node.id, node_fragmentation(shape, profile_)};
  return f.value;
}

int64_t NodeScorer::topology_of(const NodeClass& node, const JobRequest& req) {
  auto& scores = topology_[{req.gpus, req.gpu_model, req.gpu_memory_mib}];
  if (node.storage >= static_cast<int>(scores.size())) scores.resize(node.storage + 1);
  ByClass<int64_t>& score = scores[node.storage];
  if (score.class_id != node.id) {
    auto choice = choose_gpus(req, node.state);
    score = {node.id, choice ? choice->topology_score : -1};
  }
  return score.value;
}

NodeScore NodeScorer::score(const NodeClass& node, const JobRequest& req, const PodRequest& pod,
                            uint64_t match_mask) {
  NodeScore out;
  if (policy_ == PlacementPolicy::kFirstFit || policy_ == PlacementPolicy::kRandom) return out;
  bool whole = req.gpus > 0 && req.gpu_milli == 0;
  if (whole && req.gpus > 1) out.primary = std::max<int64_t>(0, topology_of(node, req));
  NodeShape shape = shape_of(node);
  switch (policy_) {
    case PlacementPolicy::kDotProduct:
      out.secondary = dot_product_score(shape, pod, normalizers_);
      break;
    case PlacementPolicy::kClustering:
      out.secondary = clustering_score(shape, pod, normalizers_);
      break;
    case PlacementPolicy::kPacking:
      out.secondary = packing_score(shape, pod);
      break;
    case PlacementPolicy::kBestFit:
      out.secondary = best_fit_raw_score(shape, pod, normalizers_);
      break;
    case PlacementPolicy::kFgd:
      out.secondary = fgd_score(shape, pod, profile_, fragmentation_of(node, shape));
      break;
    case PlacementPolicy::kDefault: {
      if (whole) {
        // Keep large idle blocks whole: fewest matching whole GPUs left over comes first.
        int left = free_matching_gpus(node.state, match_mask, req) - req.gpus;
        out.primary = out.primary * 1000 - left;
      }
      out.secondary = default_score(shape, pod, profile_, fragmentation_of(node, shape),
                                    gpu_per_cpu_, &after_placement_);
      break;
    }
    default:
      break;
  }
  return out;
}

}  // namespace gpucloud::sched
