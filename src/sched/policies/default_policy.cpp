#include "sched/policies/default_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sched/policies/policy_scores.h"

namespace gpucloud::sched {

namespace {

constexpr double kNoFit = -std::numeric_limits<double>::infinity();

/// The score of going from `before` to `after`. Rounded to 1e-6 milli so that mathematically
/// equal scores computed from different shapes tie exactly (and go to the seed's node order).
double score_after(const NodeShape& before, const NodeShape& after, double f_before,
                   const WorkloadProfile& profile, double gpu_per_cpu, FragmentationCache* cache) {
  double delta_f =
      f_before - (cache ? cache->of(after, profile) : node_fragmentation(after, profile));
  double delta_stranded =
      stranded_gpu_milli(after, gpu_per_cpu) - stranded_gpu_milli(before, gpu_per_cpu);
  return std::round((delta_f - delta_stranded) * 1e6) / 1e6;
}

}  // namespace

double gpu_milli_per_cpu_milli(const WorkloadProfile& profile) {
  double gpu = 0, cpu = 0;
  for (const TypicalPod& t : profile.types) {
    if (t.num_gpu <= 0 || t.gpu_milli <= 0) continue;
    gpu += t.freq * t.num_gpu * t.gpu_milli;
    cpu += t.freq * static_cast<double>(t.cpu_milli);
  }
  return cpu > 0 ? gpu / cpu : 0;
}

double stranded_gpu_milli(const NodeShape& node, double gpu_per_cpu) {
  double cpu = static_cast<double>(std::max<int64_t>(node.cpu_free, 0));
  return std::max(0.0, static_cast<double>(node.free_gpu_milli()) - gpu_per_cpu * cpu);
}

double scarce_host_cost(const TypicalPod& type, int hosts_left, double nodes) {
  return type.freq * type.num_gpu * type.gpu_milli * nodes / std::max(1, hosts_left);
}

double default_share_gpu_score(const NodeShape& node, int gpu, const PodRequest& pod,
                               const WorkloadProfile& profile, double f_before, double gpu_per_cpu,
                               FragmentationCache* cache) {
  if (node.gpu_free[gpu] < pod.gpu_milli) return kNoFit;
  NodeShape after = node;
  after.cpu_free -= pod.cpu_milli;
  after.gpu_free[gpu] = static_cast<int16_t>(after.gpu_free[gpu] - pod.gpu_milli);
  return score_after(node, after, f_before, profile, gpu_per_cpu, cache);
}

double default_score(const NodeShape& node, const PodRequest& pod, const WorkloadProfile& profile,
                     double f_before, double gpu_per_cpu, FragmentationCache* cache) {
  if (pod_kind(pod) != PodKind::kShare)
    return score_after(node, shape_after_whole(node, pod), f_before, profile, gpu_per_cpu, cache);
  double best = kNoFit;
  for (int i = 0; i < node.num_gpus; ++i) {
    if (i > 0 && node.gpu_free[i] == node.gpu_free[i - 1]) continue;  // same free, same score
    best = std::max(best,
                    default_share_gpu_score(node, i, pod, profile, f_before, gpu_per_cpu, cache));
  }
  return best;
}

int default_share_gpu(const ShareNode& node, const PodRequest& pod, const WorkloadProfile& profile,
                      double f_before, double gpu_per_cpu) {
  NodeShape unsorted = NodeShape::of(node, /*sort=*/false);
  int best = -1;
  double best_score = kNoFit;
  for (int i = 0; i < node.num_gpus; ++i) {
    double s = default_share_gpu_score(unsorted, i, pod, profile, f_before, gpu_per_cpu);
    if (s == kNoFit) continue;
    if (best < 0 || s > best_score || (s == best_score && node.gpu_free[i] < node.gpu_free[best])) {
      best = i;
      best_score = s;
    }
  }
  return best;
}

}  // namespace gpucloud::sched
