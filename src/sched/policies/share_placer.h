// SharePlacer: places pods one at a time on GPU-sharing nodes with one of the FGD experiment's
// policies. Scores depend only on a node's shape, so they are cached per distinct shape and
// pod request: nodes in identical states are scored once, and a placement only moves the node
// that changed to another shape. It also keeps Σ F(node) (FGD's fragmentation) up to date.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "sched/policies/fragmentation.h"
#include "sched/policies/policy_scores.h"
#include "sched/policies/seeded_rng.h"
#include "sched/policies/share_node.h"

namespace gpucloud::sched {

/// Where a pod went: a node index and the GPU indices it took (empty for CPU-only pods).
struct SharePlacement {
  int node = -1;
  std::vector<int> gpus;
};

/// Places pods with one policy. Ties between best-scored nodes go to a fixed random order of
/// the nodes drawn from the seed; `random` draws from the same seed.
class SharePlacer {
 public:
  /// `profile` must outlive the placer; it defines F(node) and is what `fgd` optimises.
  SharePlacer(std::vector<ShareNode> nodes, const WorkloadProfile& profile, Policy policy,
              uint64_t seed, ScoreNormalizers normalizers = {});

  /// For the default policy: the pod types whose hosts it guards (default_policy.h, "Scarce
  /// hosts"). `all_types` is the trace's every (cpu, gpu, model) type with its frequency
  /// (WorkloadProfile::from_pods with coverage 1); of them, the GPU types limited to a GPU model
  /// or that fit fewer than a tenth of the empty nodes are guarded. Other policies ignore it.
  void guard_scarce_types(const WorkloadProfile& all_types);

  /// Chooses a node and GPUs for the pod and records it there; nothing if it fits nowhere.
  std::optional<SharePlacement> place(const PodRequest& pod);

  /// The nodes with what is in use on them.
  const std::vector<ShareNode>& nodes() const { return nodes_; }
  /// Σ F(node) over the nodes, in milli.
  double fragmentation() const { return frag_sum_; }
  /// Free GPU milli over the nodes.
  int64_t free_gpu_milli() const { return free_milli_; }
  /// The node's position in the tie-break order (0 first).
  int tie_rank(int node) const { return rank_[node]; }
  /// Distinct node shapes seen so far (a measure of the cache's work).
  size_t shapes_seen() const { return groups_.size(); }

 private:
  struct Group {
    NodeShape shape;
    double frag = 0;
    std::vector<double> scores;          // per request type; kUnknown until computed
    std::vector<uint8_t> hosts;          // per guarded type: 1 if it fits this shape
    std::vector<std::vector<int>> lost;  // per request type: guarded types it stops fitting
  };
  static constexpr double kUnknown = -1e300;
  static constexpr double kNoFit = -1e299;

  int intern_group(const NodeShape& shape);
  int intern_request(const PodRequest& pod);
  double cached_score(int group, int request, const PodRequest& pod);
  double compute_score(const NodeShape& shape, const PodRequest& pod, double frag) const;
  std::vector<int> choose_gpus(const ShareNode& node, int group, const PodRequest& pod);
  std::vector<uint8_t> guarded_fits(const NodeShape& shape) const;
  void note_lost_hosts(int group, int request, const PodRequest& pod);
  double scarcity_cost(int group, int request) const;
  void update_host_cost(int type);
  /// The default policy's pick among feasible_ once scarce-host costs are subtracted.
  int best_after_scarcity_cost(int request);
  void apply(int node, const PodRequest& pod, const std::vector<int>& gpus);

  std::vector<ShareNode> nodes_;
  const WorkloadProfile& profile_;
  Policy policy_;
  ScoreNormalizers normalizers_;
  double gpu_per_cpu_ = 0;  // the default policy's CPU-to-GPU ratio of the profile
  SeededRng rng_;
  std::vector<int> rank_;
  std::vector<int> node_group_;
  std::vector<Group> groups_;
  std::unordered_map<NodeShape, int, NodeShapeHash> group_index_;
  std::unordered_map<uint64_t, std::vector<std::pair<PodRequest, int>>> request_index_;
  int requests_ = 0;
  std::vector<std::pair<int, double>> feasible_;  // (node, score), reused between calls
  std::vector<TypicalPod> guarded_;               // scarce-host types (guard_scarce_types)
  std::vector<int> hosts_now_;                    // per guarded type: nodes it fits now
  std::vector<double> host_cost_;  // per guarded type: scarce_host_cost at hosts_now_
  std::vector<std::pair<uint64_t, double>> cost_memo_;  // per group: (pick, its scarcity cost)
  uint64_t pick_calls_ = 0;
  double frag_sum_ = 0;
  int64_t free_milli_ = 0;
};

}  // namespace gpucloud::sched
