#include "sched/policies/fragmentation.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpucloud::sched {

WorkloadProfile WorkloadProfile::from_pods(const std::vector<PodRequest>& pods, double coverage) {
  using Key = std::tuple<int64_t, int, int, uint64_t>;  // cpu, num_gpu, gpu_milli, mask
  std::map<Key, int> counts;
  for (const PodRequest& p : pods) {
    bool cpu_only = pod_kind(p) == PodKind::kCpuOnly;
    ++counts[{p.cpu_milli, cpu_only ? 0 : p.num_gpu, cpu_only ? 0 : p.gpu_milli, p.model_mask}];
  }
  std::vector<std::pair<Key, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  WorkloadProfile profile;
  int64_t covered = 0;
  for (const auto& [key, count] : sorted) {
    if (static_cast<double>(covered) >= coverage * static_cast<double>(pods.size())) break;
    covered += count;
    auto [cpu, num_gpu, milli, mask] = key;
    profile.types.push_back({cpu, num_gpu, milli, mask, 0.0, count});
  }
  for (TypicalPod& t : profile.types)
    t.freq = static_cast<double>(t.count) / static_cast<double>(covered);
  return profile;
}

int64_t type_fragmentation(const NodeShape& node, const TypicalPod& type) {
  int64_t free = node.free_gpu_milli();
  if (type.num_gpu <= 0 || type.gpu_milli <= 0) return free;
  if (node.cpu_free < type.cpu_milli || node.num_gpus == 0 || node.model < 0) return free;
  if (type.model_mask != 0 && (type.model_mask & (uint64_t{1} << node.model)) == 0) return free;
  bool share = type.num_gpu == 1 && type.gpu_milli < kMilliPerGpu;
  int need = share ? type.gpu_milli : kMilliPerGpu;
  int enough = 0;
  int64_t below = 0;
  for (int i = 0; i < node.num_gpus; ++i) {
    if (node.gpu_free[i] >= need)
      ++enough;
    else
      below += node.gpu_free[i];
  }
  return enough < (share ? 1 : type.num_gpu) ? free : below;
}

bool type_fits(const NodeShape& node, const TypicalPod& type) {
  if (node.cpu_free < type.cpu_milli) return false;
  if (type.num_gpu <= 0 || type.gpu_milli <= 0) return true;
  if (node.num_gpus == 0 || node.model < 0) return false;
  if (type.model_mask != 0 && (type.model_mask & (uint64_t{1} << node.model)) == 0) return false;
  bool share = type.num_gpu == 1 && type.gpu_milli < kMilliPerGpu;
  int need = share ? type.gpu_milli : kMilliPerGpu;
  int enough = 0;
  for (int i = 0; i < node.num_gpus; ++i) enough += node.gpu_free[i] >= need ? 1 : 0;
  return enough >= (share ? 1 : type.num_gpu);
}

double node_fragmentation(const NodeShape& node, const WorkloadProfile& profile) {
  double f = 0;
  for (const TypicalPod& t : profile.types)
    f += t.freq * static_cast<double>(type_fragmentation(node, t));
  return f;
}

double FragmentationCache::of(const NodeShape& node, const WorkloadProfile& profile) {
  if (slots_.empty()) slots_.resize(kSlots);
  Slot& slot = slots_[NodeShapeHash{}(node) % kSlots];
  if (!slot.used || !(slot.shape == node)) {
    slot.used = true;
    slot.shape = node;
    slot.fragmentation = node_fragmentation(node, profile);
  }
  return slot.fragmentation;
}

}  // namespace gpucloud::sched
