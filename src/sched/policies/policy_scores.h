// The node scores of the FGD experiment's placement policies (shared/fgd-experiment.md,
// "The baseline policies"): integers in 0..100, higher wins, computed on a node's shape.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "sched/policies/fragmentation.h"
#include "sched/policies/share_node.h"

namespace gpucloud::sched {

/// The placement policies of the FGD experiment.
/// The six published policies of the FGD experiment, and gpucloud's own `default`
/// (default_policy.h).
enum class Policy { kRandom, kDotProduct, kClustering, kPacking, kBestFit, kFgd, kDefault };

/// The policy's command-line name: random, dot-product, clustering, packing, best-fit, fgd,
/// default.
std::string_view policy_name(Policy policy);

/// The policy with that name, or nothing.
std::optional<Policy> parse_policy(std::string_view name);

/// The six policies of the FGD paper's table, in its order.
const std::vector<Policy>& fgd_experiment_policies();

/// The normalisers of the scores: MaxCpu and MaxGpu (in milli) of the paper's simulator.
struct ScoreNormalizers {
  int64_t max_cpu_milli = 128000;
  int64_t max_gpu_milli = 8000;
};

/// DotProd: 100·(1 − (cpuL/MaxCpu · c/MaxCpu + Lt/MaxGpu · G/MaxGpu)/2), truncated.
int dot_product_score(const NodeShape& node, const PodRequest& pod, const ScoreNormalizers& n);

/// Clustering: 25·(MaxGpu − Lt)/MaxGpu (integer division) plus 75 if the node runs only GPU
/// pods of this pod's kind, 50 if among others, 25 if it runs no GPU pods; 0 for CPU-only pods.
int clustering_score(const NodeShape& node, const PodRequest& pod, const ScoreNormalizers& n);

/// Packing: an all-free node max(33 − #free GPUs, #free GPUs); else over the GPUs the pod would
/// take (ascending free milli, each with L ≥ m): k > 0 fully free ones give max(50 − k, 33),
/// none max(100 − (Σ⌊L·100/1000⌋)/10, 50). 0 for CPU-only pods.
int packing_score(const NodeShape& node, const PodRequest& pod);

/// BestFit before normalisation: 100·(1 − [0.5(cpuL − c)/MaxCpu + 0.5(Lt − G)/MaxGpu]),
/// truncated.
int best_fit_raw_score(const NodeShape& node, const PodRequest& pod, const ScoreNormalizers& n);

/// Min–max normalisation of a score over the feasible nodes' scores: (s − min)·100/(max − min),
/// and 100 when all are equal.
int normalize_min_max(int score, int min, int max);

/// FGD: 100·sigmoid((F_before − F_after)/1000),
/// truncated, where F_after is the node's fragmentation once the pod runs there. A share is
/// tried on every fitting GPU and the best score is returned. `f_before` is F(node).
int fgd_score(const NodeShape& node, const PodRequest& pod, const WorkloadProfile& profile,
              double f_before);

/// FGD's score for a share placed on GPU position `gpu` of the shape (pass a shape made with
/// sort = false to use the node's own GPU order), or -1 if that GPU does not fit.
int fgd_share_gpu_score(const NodeShape& node, int gpu, const PodRequest& pod,
                        const WorkloadProfile& profile, double f_before);

/// The node's shape after the pod takes whole GPUs (or only CPU) there.
NodeShape shape_after_whole(const NodeShape& node, const PodRequest& pod);

}  // namespace gpucloud::sched
