#include "sched/policies/policy_scores.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace gpucloud::sched {

namespace {

constexpr std::array<std::pair<Policy, std::string_view>, 7> kNames{{
    {Policy::kRandom, "random"},
    {Policy::kDotProduct, "dot-product"},
    {Policy::kClustering, "clustering"},
    {Policy::kPacking, "packing"},
    {Policy::kBestFit, "best-fit"},
    {Policy::kFgd, "fgd"},
    {Policy::kDefault, "default"},
}};

double as_double(int64_t v) {
  return static_cast<double>(v);
}

int fgd_from_delta(double f_before, double f_after) {
  double x = (f_before - f_after) / 1000.0;
  return static_cast<int>(100.0 / (1.0 + std::exp(-x)));
}

}  // namespace

std::string_view policy_name(Policy policy) {
  for (const auto& [p, name] : kNames)
    if (p == policy) return name;
  return "?";
}

std::optional<Policy> parse_policy(std::string_view name) {
  for (const auto& [p, n] : kNames)
    if (n == name) return p;
  return std::nullopt;
}

const std::vector<Policy>& fgd_experiment_policies() {
  static const std::vector<Policy> all{Policy::kRandom,  Policy::kDotProduct, Policy::kClustering,
                                       Policy::kPacking, Policy::kBestFit,    Policy::kFgd};
  return all;
}

int dot_product_score(const NodeShape& node, const PodRequest& pod, const ScoreNormalizers& n) {
  double cpu = as_double(node.cpu_free) / as_double(n.max_cpu_milli) * as_double(pod.cpu_milli) /
               as_double(n.max_cpu_milli);
  double gpu = as_double(node.free_gpu_milli()) / as_double(n.max_gpu_milli) *
               as_double(pod.total_gpu_milli()) / as_double(n.max_gpu_milli);
  return static_cast<int>(100.0 * (1.0 - (cpu + gpu) / 2.0));
}

int clustering_score(const NodeShape& node, const PodRequest& pod, const ScoreNormalizers& n) {
  PodKind kind = pod_kind(pod);
  if (kind == PodKind::kCpuOnly) return 0;
  int64_t base = 25 * (n.max_gpu_milli - node.free_gpu_milli()) / n.max_gpu_milli;
  uint8_t mine = kind == PodKind::kShare ? NodeShape::kRunsShare : NodeShape::kRunsWhole;
  int bonus = 0;
  if (node.kinds == 0)
    bonus = 25;
  else if (node.kinds == mine)
    bonus = 75;
  else if ((node.kinds & mine) != 0)
    bonus = 50;
  return static_cast<int>(base) + bonus;
}

int packing_score(const NodeShape& node, const PodRequest& pod) {
  PodKind kind = pod_kind(pod);
  if (kind == PodKind::kCpuOnly) return 0;
  int free_gpus = 0;
  for (int i = 0; i < node.num_gpus; ++i) free_gpus += node.gpu_free[i] == kMilliPerGpu ? 1 : 0;
  if (free_gpus == node.num_gpus) return std::max(33 - free_gpus, free_gpus);
  int need = kind == PodKind::kShare ? pod.gpu_milli : kMilliPerGpu;
  int count = kind == PodKind::kShare ? 1 : pod.num_gpu;
  int taken = 0, fully_free = 0, tenths = 0;
  for (int i = 0; i < node.num_gpus && taken < count; ++i) {  // shape: ascending free milli
    if (node.gpu_free[i] < need) continue;
    ++taken;
    fully_free += node.gpu_free[i] == kMilliPerGpu ? 1 : 0;
    tenths += node.gpu_free[i] * 100 / kMilliPerGpu;
  }
  if (fully_free > 0) return std::max(50 - fully_free, 33);
  return std::max(100 - tenths / 10, 50);
}

int best_fit_raw_score(const NodeShape& node, const PodRequest& pod, const ScoreNormalizers& n) {
  double cpu = 0.5 * as_double(node.cpu_free - pod.cpu_milli) / as_double(n.max_cpu_milli);
  double gpu =
      0.5 * as_double(node.free_gpu_milli() - pod.total_gpu_milli()) / as_double(n.max_gpu_milli);
  return static_cast<int>(100.0 * (1.0 - (cpu + gpu)));
}

int normalize_min_max(int score, int min, int max) {
  if (max <= min) return 100;
  return (score - min) * 100 / (max - min);
}

NodeShape shape_after_whole(const NodeShape& node, const PodRequest& pod) {
  NodeShape after = node;
  after.cpu_free -= pod.cpu_milli;
  if (pod_kind(pod) != PodKind::kWholeGpus) return after;
  int left = pod.num_gpu;
  for (int i = after.num_gpus - 1; i >= 0 && left > 0; --i) {  // fully free ones sort last
    if (after.gpu_free[i] != kMilliPerGpu) continue;
    after.gpu_free[i] = 0;
    --left;
  }
  std::sort(after.gpu_free.begin(), after.gpu_free.begin() + after.num_gpus);
  after.kinds |= NodeShape::kRunsWhole;
  return after;
}

int fgd_share_gpu_score(const NodeShape& node, int gpu, const PodRequest& pod,
                        const WorkloadProfile& profile, double f_before) {
  if (node.gpu_free[gpu] < pod.gpu_milli) return -1;
  NodeShape after = node;
  after.cpu_free -= pod.cpu_milli;
  after.gpu_free[gpu] = static_cast<int16_t>(after.gpu_free[gpu] - pod.gpu_milli);
  return fgd_from_delta(f_before, node_fragmentation(after, profile));
}

int fgd_score(const NodeShape& node, const PodRequest& pod, const WorkloadProfile& profile,
              double f_before) {
  if (pod_kind(pod) != PodKind::kShare)
    return fgd_from_delta(f_before, node_fragmentation(shape_after_whole(node, pod), profile));
  int best = -1;
  for (int i = 0; i < node.num_gpus; ++i) {
    if (i > 0 && node.gpu_free[i] == node.gpu_free[i - 1]) continue;  // same free, same score
    best = std::max(best, fgd_share_gpu_score(node, i, pod, profile, f_before));
  }
  return best;
}

}  // namespace gpucloud::sched
