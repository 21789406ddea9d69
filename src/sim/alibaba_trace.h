// Loaders for the Alibaba GPU cluster trace v2023 (ATC'23, "openb"): the node list
// (sn,cpu_milli,memory_mib,gpu,model) and the pod list (name,cpu_milli,memory_mib,num_gpu,
// gpu_milli,gpu_spec,...; other columns are ignored). Errors name file, line and column.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "sched/policies/share_node.h"
#include "sim/csv_table.h"

namespace gpucloud::sim {

/// The cluster of a node list: nodes with their GPU model as an index into `models`.
struct TraceCluster {
  std::vector<std::string> models;  // distinct GPU models, in order of first appearance
  std::vector<sched::ShareNode> nodes;
  int64_t gpus = 0;

  /// The model's index, or -1.
  int model_index(std::string_view model) const;
};

/// One pod of a pod list.
struct TracePod {
  std::string name;
  sched::PodRequest request;
  std::string gpu_spec;  // as written, e.g. "V100M16|V100M32"; empty: any model
  int line = 0;
};

/// Reads a node list. Nodes without GPUs are kept (they take CPU-only pods).
Result<TraceCluster> load_alibaba_nodes(const CsvTable& table);
/// Reads a node list from a file.
Result<TraceCluster> load_alibaba_nodes(const std::string& path);

/// Reads a pod list, resolving gpu_spec against the cluster's models (a spec naming no model
/// of the cluster is an error). A GPU pod needs gpu_milli in 1..1000, and 1000 if num_gpu > 1.
/// name, cpu_milli, memory_mib, num_gpu and gpu_milli are required (an error names the missing
/// one); without a gpu_spec column every pod may use any model.
Result<std::vector<TracePod>> load_alibaba_pods(const CsvTable& table, const TraceCluster& cluster);
/// Reads a pod list from a file.
Result<std::vector<TracePod>> load_alibaba_pods(const std::string& path,
                                                const TraceCluster& cluster);

}  // namespace gpucloud::sim
