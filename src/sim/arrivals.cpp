#include "sim/arrivals.h"

#include <algorithm>
#include <numeric>

#include "sched/policies/seeded_rng.h"

namespace gpucloud::sim {

std::vector<int> arrival_sequence(const std::vector<TracePod>& pods, uint64_t seed,
                                  double inflation, int64_t capacity_milli) {
  std::vector<int> sorted(pods.size());
  std::iota(sorted.begin(), sorted.end(), 0);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](int a, int b) { return pods[a].name < pods[b].name; });
  std::vector<int> order = sorted;
  sched::SeededRng rng(seed);
  rng.shuffle(order);
  int64_t total = 0;
  for (const TracePod& p : pods) total += p.request.total_gpu_milli();
  bool any_gpu = std::any_of(pods.begin(), pods.end(),
                             [](const TracePod& p) { return p.request.total_gpu_milli() > 0; });
  if (!any_gpu || pods.empty()) return order;
  double limit = inflation * static_cast<double>(capacity_milli);
  while (true) {
    int pick = sorted[rng.below(sorted.size())];
    int64_t milli = pods[pick].request.total_gpu_milli();
    if (static_cast<double>(total + milli) > limit) break;
    total += milli;
    order.push_back(pick);
  }
  return order;
}

}  // namespace gpucloud::sim
