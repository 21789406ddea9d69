// Tracks FGD's fragmentation measure (shared/fgd-experiment.md, "Metrics") over a replayed
// cluster as replicas start and stop: ΣF(node) over the nodes, updated per touched node.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "sched/policies/fragmentation.h"
#include "sched/types.h"
#include "sim/cluster.h"
#include "sim/trace.h"

namespace gpucloud::sim {

/// The cluster's GPU use and fragmentation, measured against the typical request shapes of a
/// trace (its per-replica shapes covering 95 % of the jobs).
class FragTracker {
 public:
  FragTracker(const SimCluster& cluster, const std::vector<TraceJob>& jobs);

  /// A replica started (sign +1) or stopped (sign −1) with this placement.
  void apply(const sched::ReplicaPlacement& replica, int sign);

  /// ΣF(node) in GPU milli: free GPU milli the typical shapes cannot use.
  double total_frag_milli() const { return total_; }
  /// GPU milli in use.
  int64_t used_gpu_milli() const { return used_; }
  /// The GPU model of GPU `gpu` of node `node_id` ("" if unknown).
  const std::string& gpu_model(const std::string& node_id, int gpu) const;

 private:
  std::vector<std::string> models_;
  std::vector<sched::ShareNode> nodes_;
  std::vector<std::string> node_models_;
  std::vector<double> frag_;
  std::unordered_map<std::string, size_t> index_;
  sched::WorkloadProfile profile_;
  double total_ = 0;
  int64_t used_ = 0;
};

}  // namespace gpucloud::sim
