// How each placement policy scores a node class for one replica of a request. Scores compare
// lexicographically: `primary` first (for multi-GPU replicas the interconnect of the GPU set
// the node offers, so every policy but first-fit and random keeps NVLink sets together), then
// the policy's own score. Higher is better.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "sched/node_classes.h"
#include "sched/policies/default_policy.h"
#include "sched/policies/fragmentation.h"
#include "sched/policies/policy_scores.h"

namespace gpucloud::sched {

/// The placement policies of the cluster scheduler.
enum class PlacementPolicy {
  kFirstFit,
  kRandom,
  kDotProduct,
  kClustering,
  kPacking,
  kBestFit,
  kFgd,
  kDefault
};

/// The policy with this name (first-fit, random, dot-product, clustering, packing, best-fit,
/// fgd, default), or nothing.
std::optional<PlacementPolicy> parse_placement_policy(std::string_view name);

/// A node class's score for a replica.
struct NodeScore {
  int64_t primary = 0;
  double secondary = 0;
  bool operator==(const NodeScore&) const = default;
  bool operator<(const NodeScore& o) const {
    return primary != o.primary ? primary < o.primary : secondary < o.secondary;
  }
  bool operator>(const NodeScore& o) const { return o < *this; }
};

/// Scores node classes under one policy and workload profile.
class NodeScorer {
 public:
  NodeScorer(PlacementPolicy policy, ScoreNormalizers normalizers)
      : policy_(policy), normalizers_(normalizers) {}

  PlacementPolicy policy() const { return policy_; }
  /// The profile `fgd` and `default` optimise for; changes every later score.
  void set_profile(WorkloadProfile profile);
  void set_normalizers(ScoreNormalizers n) { normalizers_ = n; }
  const ScoreNormalizers& normalizers() const { return normalizers_; }
  const WorkloadProfile& profile() const { return profile_; }

  /// The score of placing one replica of `req` (pod: the same request in policy terms) on a
  /// node of the class. The replica must fit the class. `match_mask`: the GPUs (bit p: GPU p,
  /// the first 64) whose model and memory the request accepts, as the scheduler keeps per shape
  /// and static group (nodes of more than 64 GPUs are asked GPU by GPU).
  NodeScore score(const NodeClass& node, const JobRequest& req, const PodRequest& pod,
                  uint64_t match_mask);

  /// The request in the policies' terms (one replica).
  static PodRequest pod_of(const JobRequest& req);

 private:
  NodeShape shape_of(const NodeClass& node);
  /// F(node) under the profile, computed once per class (classes never change).
  double fragmentation_of(const NodeClass& node, const NodeShape& shape);
  /// The interconnect score of the GPUs a multi-GPU replica would take on the class (-1: none
  /// fits), computed once per class and (GPUs, model, GPU memory): shapes that differ in CPUs,
  /// memory or labels rank the same classes.
  int64_t topology_of(const NodeClass& node, const JobRequest& req);

  PlacementPolicy policy_;
  ScoreNormalizers normalizers_;
  WorkloadProfile profile_;
  double gpu_per_cpu_ = 0;
  std::map<std::string, int> models_;
  // A value found for a class: by NodeClass::storage, valid while `class_id` is the class's.
  template <typename T>
  struct ByClass {
    int class_id = -1;
    T value{};
  };
  std::vector<ByClass<double>> fragmentation_;
  FragmentationCache after_placement_;  // F of the shapes placements would leave
  // topology_of: (GPUs, model, GPU memory) -> scores by class storage.
  std::map<std::tuple<int, std::string, int64_t>, std::vector<ByClass<int64_t>>> topology_;
};

}  // namespace gpucloud::sched
