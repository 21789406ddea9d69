#include "sim/replay_result.h"

#include <algorithm>
#include <cmath>

namespace gpucloud::sim {

Distribution distribution_ms(std::vector<int64_t> values_ms) {
  Distribution d;
  d.count = values_ms.size();
  if (values_ms.empty()) return d;
  std::sort(values_ms.begin(), values_ms.end());
  double sum = 0;
  for (int64_t v : values_ms) sum += static_cast<double>(v);
  auto rank = [&](double p) {
    size_t k = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(values_ms.size())));
    return static_cast<double>(values_ms[std::max<size_t>(k, 1) - 1]) / 1000;
  };
  d.mean_s = sum / static_cast<double>(values_ms.size()) / 1000;
  d.p50_s = rank(50);
  d.p95_s = rank(95);
  d.p99_s = rank(99);
  d.max_s = static_cast<double>(values_ms.back()) / 1000;
  return d;
}

TimelineMeans timeline_means(const std::vector<TimePoint>& timeline, int64_t gpus, int64_t from_ms,
                             int64_t to_ms) {
  TimelineMeans m;
  double capacity = static_cast<double>(gpus) * 1000;
  if (timeline.empty() || capacity <= 0) return m;
  double span = 0, alloc = 0, ratio = 0, frag = 0, queued = 0;
  for (size_t i = 0; i < timeline.size(); ++i) {
    const TimePoint& p = timeline[i];
    double used = static_cast<double>(p.used_gpu_milli);
    m.peak_gpu_alloc_pct = std::max(m.peak_gpu_alloc_pct, 100 * used / capacity);
    m.peak_queued = std::max(m.peak_queued, p.queued);
    if (i + 1 == timeline.size()) break;
    int64_t lo = std::max(p.t_ms, from_ms), hi = std::min(timeline[i + 1].t_ms, to_ms);
    if (hi <= lo) continue;
    double dt = static_cast<double>(hi - lo);
    double free = capacity - used;
    span += dt;
    alloc += dt * used / capacity;
    ratio += free > 0 ? dt * p.frag_milli / free : 0;
    frag += dt * p.frag_milli / capacity;
    queued += dt * static_cast<double>(p.queued);
  }
  if (span <= 0) {
    const TimePoint& p = timeline.back();
    double free = capacity - static_cast<double>(p.used_gpu_milli);
    m.gpu_alloc_pct = 100 * static_cast<double>(p.used_gpu_milli) / capacity;
    m.frag_ratio_pct = free > 0 ? 100 * p.frag_milli / free : 0;
    m.frag_milli_pct = 100 * p.frag_milli / capacity;
    m.queued = static_cast<double>(p.queued);
    return m;
  }
  m.gpu_alloc_pct = 100 * alloc / span;
  m.frag_ratio_pct = 100 * ratio / span;
  m.frag_milli_pct = 100 * frag / span;
  m.queued = queued / span;
  return m;
}

}  // namespace gpucloud::sim
