// Clusters for `gpucloud sim replay`: the canonical cluster CSV and YAML (docs/sim.md) and the
// Alibaba v2023 node list, as the scheduler's NodeState. Every error names file:line:column.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "sched/types.h"
#include "sim/csv_table.h"

namespace gpucloud::sim {

/// The most GPUs a simulated node may have (the fragmentation measure's limit).
constexpr int kMaxSimNodeGpus = 16;
/// The most nodes a simulated cluster may have.
constexpr size_t kMaxSimNodes = 200'000;

/// A cluster: its nodes, all free and schedulable.
struct SimCluster {
  std::string file;
  std::vector<sched::NodeState> nodes;

  /// GPUs over all nodes.
  int64_t gpus() const;
  /// Distinct GPU models, in order of first appearance.
  std::vector<std::string> models() const;
};

/// A node with `gpus` GPUs of one model, ids "<name>" and GPU uuids "<name>-gpu<i>".
sched::NodeState make_node(const std::string& name, int gpus, const std::string& gpu_model,
                           int64_t gpu_memory_mib, int64_t cpu_milli, int64_t memory_mib);

/// Reads a canonical cluster CSV: name,gpus,gpu_model,gpu_memory_mib,cpu_milli,memory_mib,
/// labels (labels like `zone=a;pool=x`; gpu_memory_mib, memory_mib and labels may be empty).
Result<SimCluster> load_canonical_cluster(const CsvTable& table);

/// Reads the Alibaba v2023 node list (sn,cpu_milli,memory_mib,gpu,model). Every node is
/// labelled capacity-class=spot: the trace's best-effort pods (capacity class spot) ran on all
/// of them, and jobs of capacity class any fit spot nodes too; on-demand jobs fit none.
Result<SimCluster> load_alibaba_node_cluster(const CsvTable& table);

/// Reads a cluster YAML document: `nodes:` a list of maps with the canonical CSV's fields
/// (labels as a map) and an optional `count` (that many nodes named <name>-0, <name>-1, ...).
Result<SimCluster> load_cluster_yaml(const std::string& text, const std::string& file);

/// Reads a cluster file: .yaml/.yml as YAML; a CSV with `sn` in its header as an Alibaba node
/// list; any other CSV as canonical.
Result<SimCluster> load_cluster(const std::string& path);

}  // namespace gpucloud::sim
