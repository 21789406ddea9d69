#include "sched/policies/share_node.h"

#include <algorithm>

namespace gpucloud::sched {

PodKind pod_kind(const PodRequest& pod) {
  if (pod.num_gpu <= 0 || pod.gpu_milli <= 0) return PodKind::kCpuOnly;
  if (pod.num_gpu == 1 && pod.gpu_milli < kMilliPerGpu) return PodKind::kShare;
  return PodKind::kWholeGpus;
}

ShareNode ShareNode::make(std::string name, int model, int num_gpus, int64_t cpu_milli,
                          int64_t memory_mib) {
  ShareNode node;
  node.name = std::move(name);
  node.model = model;
  node.num_gpus = num_gpus;
  node.cpu_milli = cpu_milli;
  node.memory_mib = memory_mib;
  for (int i = 0; i < num_gpus; ++i) node.gpu_free[i] = kMilliPerGpu;
  return node;
}

int64_t ShareNode::free_gpu_milli() const {
  int64_t sum = 0;
  for (int i = 0; i < num_gpus; ++i) sum += gpu_free[i];
  return sum;
}

NodeShape NodeShape::of(const ShareNode& node, bool sort) {
  NodeShape s;
  s.model = static_cast<int16_t>(node.model);
  s.num_gpus = static_cast<int16_t>(node.num_gpus);
  s.kinds = static_cast<uint8_t>((node.share_pods > 0 ? kRunsShare : 0) |
                                 (node.whole_pods > 0 ? kRunsWhole : 0));
  s.cpu_free = node.cpu_milli - node.cpu_used;
  std::copy_n(node.gpu_free.begin(), node.num_gpus, s.gpu_free.begin());
  if (sort) std::sort(s.gpu_free.begin(), s.gpu_free.begin() + node.num_gpus);
  return s;
}

int64_t NodeShape::free_gpu_milli() const {
  int64_t sum = 0;
  for (int i = 0; i < num_gpus; ++i) sum += gpu_free[i];
  return sum;
}

size_t NodeShapeHash::operator()(const NodeShape& s) const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(static_cast<uint64_t>(s.model) << 32 | static_cast<uint64_t>(s.num_gpus) << 8 | s.kinds);
  mix(static_cast<uint64_t>(s.cpu_free));
  for (int i = 0; i < s.num_gpus; ++i) mix(static_cast<uint64_t>(s.gpu_free[i]));
  return static_cast<size_t>(h ^ (h >> 29));
}

bool gpus_fit(const ShareNode& node, const PodRequest& pod) {
  PodKind kind = pod_kind(pod);
  if (kind == PodKind::kCpuOnly) return true;
  if (node.num_gpus == 0 || node.model < 0) return false;
  if (pod.model_mask != 0 && (pod.model_mask & (uint64_t{1} << node.model)) == 0) return false;
  int need = kind == PodKind::kShare ? pod.gpu_milli : kMilliPerGpu;
  int count = 0;
  for (int i = 0; i < node.num_gpus; ++i) count += node.gpu_free[i] >= need ? 1 : 0;
  return count >= (kind == PodKind::kShare ? 1 : pod.num_gpu);
}

bool fits(const ShareNode& node, const PodRequest& pod) {
  return node.cpu_used + pod.cpu_milli <= node.cpu_milli &&
         node.memory_used + pod.memory_mib <= node.memory_mib && gpus_fit(node, pod);
}

std::vector<int> default_gpu_choice(const ShareNode& node, const PodRequest& pod) {
  std::vector<int> out;
  PodKind kind = pod_kind(pod);
  if (kind == PodKind::kCpuOnly || !gpus_fit(node, pod)) return out;
  if (kind == PodKind::kShare) {
    int best = -1;
    for (int i = 0; i < node.num_gpus; ++i) {
      if (node.gpu_free[i] < pod.gpu_milli) continue;
      if (best < 0 || node.gpu_free[i] < node.gpu_free[best]) best = i;
    }
    out.push_back(best);
    return out;
  }
  for (int i = 0; i < node.num_gpus && static_cast<int>(out.size()) < pod.num_gpu; ++i)
    if (node.gpu_free[i] == kMilliPerGpu) out.push_back(i);
  return out;
}

void place_pod(ShareNode& node, const PodRequest& pod, const std::vector<int>& gpus) {
  node.cpu_used += pod.cpu_milli;
  node.memory_used += pod.memory_mib;
  PodKind kind = pod_kind(pod);
  int milli = kind == PodKind::kShare ? pod.gpu_milli : kMilliPerGpu;
  for (int g : gpus) node.gpu_free[g] = static_cast<int16_t>(node.gpu_free[g] - milli);
  if (kind == PodKind::kShare) ++node.share_pods;
  if (kind == PodKind::kWholeGpus) ++node.whole_pods;
}

}  // namespace gpucloud::sched
