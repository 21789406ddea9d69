#include "sim/frag_tracker.h"

#include <algorithm>

namespace gpucloud::sim {

namespace {

/// Bit i set when model i of `models` is one of the alternatives of `spec` ("A|B").
uint64_t model_mask(const std::string& spec, const std::vector<std::string>& models) {
  uint64_t mask = 0;
  size_t start = 0;
  while (start <= spec.size() && !spec.empty()) {
    size_t bar = std::min(spec.find('|', start), spec.size());
    std::string one = spec.substr(start, bar - start);
    for (size_t i = 0; i < models.size() && i < 64; ++i)
      if (models[i] == one) mask |= uint64_t{1} << i;
    start = bar + 1;
  }
  return mask;
}

}  // namespace

FragTracker::FragTracker(const SimCluster& cluster, const std::vector<TraceJob>& jobs)
    : models_(cluster.models()) {
  for (const sched::NodeState& n : cluster.nodes) {
    int model = -1;
    std::string name;
    if (!n.gpus.empty()) {
      name = n.gpus[0].model;
      model = static_cast<int>(std::find(models_.begin(), models_.end(), name) - models_.begin());
    }
    index_[n.id] = nodes_.size();
    nodes_.push_back(sched::ShareNode::make(n.id, model, static_cast<int>(n.gpus.size()),
                                            n.cpu_milli, n.memory_mib));
    node_models_.push_back(name);
  }
  std::vector<sched::PodRequest> pods;
  pods.reserve(jobs.size());
  for (const TraceJob& j : jobs)
    pods.push_back({j.cpu_milli, j.memory_mib, j.gpus,
                    j.gpus > 0 ? (j.gpu_milli > 0 ? j.gpu_milli : 1000) : 0,
                    model_mask(j.gpu_model, models_)});
  profile_ = sched::WorkloadProfile::from_pods(pods);
  for (const sched::ShareNode& n : nodes_) {
    frag_.push_back(sched::node_fragmentation(sched::NodeShape::of(n), profile_));
    total_ += frag_.back();
  }
}

void FragTracker::apply(const sched::ReplicaPlacement& replica, int sign) {
  auto it = index_.find(replica.node_id);
  if (it == index_.end()) return;
  sched::ShareNode& node = nodes_[it->second];
  node.cpu_used += sign * replica.cpu_milli;
  node.memory_used += sign * replica.memory_mib;
  for (const GpuShare& g : replica.gpus) {
    if (g.index < 0 || g.index >= node.num_gpus) continue;
    node.gpu_free[static_cast<size_t>(g.index)] =
        static_cast<int16_t>(node.gpu_free[static_cast<size_t>(g.index)] - sign * g.milli);
    used_ += sign * g.milli;
  }
  bool share = replica.gpus.size() == 1 && replica.gpus[0].milli < 1000;
  if (!replica.gpus.empty()) (share ? node.share_pods : node.whole_pods) += sign;
  double f = sched::node_fragmentation(sched::NodeShape::of(node), profile_);
  total_ += f - frag_[it->second];
  frag_[it->second] = f;
}

const std::string& FragTracker::gpu_model(const std::string& node_id, int) const {
  static const std::string kNone;
  auto it = index_.find(node_id);
  return it == index_.end() ? kNone : node_models_[it->second];
}

}  // namespace gpucloud::sim
