// The FGD paper's published results (Weng et al., ATC'23; shared/fgd-experiment.md): unallocated
// GPU % at loads 95/100/130, median of seeds 42–51 on openb_pod_list_default.csv and
// openb_node_list_gpu_node.csv. They hold for that input only, recognised by its content.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "sched/policies/policy_scores.h"
#include "sim/alibaba_trace.h"

namespace gpucloud::sim {

/// The published unallocated GPU % per load for a policy of the paper's table, or nothing.
std::optional<std::map<int, double>> published_unallocated(sched::Policy policy);

/// How far from the published medians a faithful reproduction should be, in percentage points:
/// 0.3 for best-fit and fgd, 0.6 for dot-product, clustering and packing, 1.5 for random (whose
/// choices in their simulator also depend on the order of a parallel filter).
double reproduction_tolerance(sched::Policy policy);

/// A digest of what the experiment reads from a pod list: FNV-1a 64 over each pod's name,
/// cpu_milli, memory_mib, num_gpu, gpu_milli and gpu_spec, in name order. The same pods give
/// the same digest whatever the file's name, row order or extra columns.
uint64_t pod_list_digest(const std::vector<TracePod>& pods);

/// The same for a node list: each node's sn, cpu_milli, memory_mib, GPU count and model.
uint64_t node_list_digest(const TraceCluster& cluster);

/// Whether the paper's figures were published for this input: the pods of
/// openb_pod_list_default.csv (8,152) on the nodes of openb_node_list_gpu_node.csv (1,213).
bool is_published_input(const TraceCluster& cluster, const std::vector<TracePod>& pods);

/// What is_published_input recognises, for messages.
constexpr const char* kPublishedInput =
    "openb_pod_list_default.csv (8,152 pods) on openb_node_list_gpu_node.csv (1,213 nodes)";

}  // namespace gpucloud::sim
