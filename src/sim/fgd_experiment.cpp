#include "sim/fgd_experiment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "sched/policies/share_placer.h"
#include "sim/arrivals.h"

namespace gpucloud::sim {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Running means per load k.
struct Means {
  std::vector<double> sum;
  std::vector<int> count;
  explicit Means(size_t n) : sum(n, 0), count(n, 0) {}
  void add(size_t k, double v) {
    if (k >= sum.size()) return;
    sum[k] += v;
    ++count[k];
  }
  /// The mean per load; a load that no arrival rounded to (a pod larger than 1 % of a small
  /// cluster steps over it) takes the value of the load before it; NaN past the last load.
  std::vector<double> values() const {
    std::vector<double> out(sum.size(), kNaN);
    size_t last = 0;
    for (size_t k = 0; k < sum.size(); ++k)
      if (count[k] > 0) last = k;
    for (size_t k = 0; k <= last; ++k) {
      if (count[k] > 0)
        out[k] = sum[k] / count[k];
      else if (k > 0)
        out[k] = out[k - 1];
    }
    return out;
  }
};

}  // namespace

FgdSetup FgdSetup::make(TraceCluster cluster, std::vector<TracePod> pods) {
  FgdSetup s;
  std::vector<sched::PodRequest> requests;
  requests.reserve(pods.size());
  for (const TracePod& p : pods) requests.push_back(p.request);
  s.profile = sched::WorkloadProfile::from_pods(requests);
  s.all_types = sched::WorkloadProfile::from_pods(requests, /*coverage=*/1.0);
  // Distinct empty node configurations are enough to decide "fits no node ever".
  std::set<std::tuple<int, int, int64_t, int64_t>> seen;
  std::vector<sched::ShareNode> kinds;
  for (const sched::ShareNode& n : cluster.nodes)
    if (seen.insert({n.model, n.num_gpus, n.cpu_milli, n.memory_mib}).second)
      kinds.push_back(sched::ShareNode::make("", n.model, n.num_gpus, n.cpu_milli, n.memory_mib));
  for (size_t i = 0; i < pods.size(); ++i) {
    bool any = std::any_of(kinds.begin(), kinds.end(), [&](const sched::ShareNode& n) {
      return sched::fits(n, pods[i].request);
    });
    if (!any) s.never_fit.push_back(static_cast<int>(i));
  }
  s.cluster = std::move(cluster);
  s.pods = std::move(pods);
  return s;
}

SeedRun run_fgd_seed(const FgdSetup& setup, sched::Policy policy, uint64_t seed, double inflation) {
  SeedRun run;
  run.seed = seed;
  int64_t capacity = setup.capacity_milli();
  std::vector<int> order = arrival_sequence(setup.pods, seed, inflation, capacity);
  // The placer's tie-break order and random draws get their own stream of the seed.
  sched::SharePlacer placer(setup.cluster.nodes, setup.profile, policy,
                            seed ^ 0x9E3779B97F4A7C15ull);
  placer.guard_scarce_types(setup.all_types);
  size_t loads = static_cast<size_t>(std::ceil(inflation * 100)) + 2;
  Means alloc(loads), ratio(loads), milli(loads);
  double gpus10 = static_cast<double>(setup.cluster.gpus) * 10.0;
  auto record_frag = [&](size_t k) {
    double free = static_cast<double>(placer.free_gpu_milli());
    ratio.add(k, free > 0 ? 100.0 * placer.fragmentation() / free : 0.0);
    milli.add(k,
              capacity > 0 ? 100.0 * placer.fragmentation() / static_cast<double>(capacity) : 0.0);
  };
  record_frag(0);  // the empty cluster
  int64_t arrived = 0, used = 0;
  for (int index : order) {
    const sched::PodRequest& pod = setup.pods[index].request;
    ++run.arrived;
    arrived += pod.total_gpu_milli();
    if (placer.place(pod)) {
      ++run.placed;
      used += pod.total_gpu_milli();
    } else {
      run.dropped.push_back(index);
    }
    size_t k = static_cast<size_t>(std::llround(static_cast<double>(arrived) / gpus10));
    alloc.add(k, std::round(static_cast<double>(used) / gpus10 * 100.0) / 100.0);
    record_frag(k);
  }
  run.alloc_pct = alloc.values();
  run.frag_ratio_pct = ratio.values();
  run.frag_milli_pct = milli.values();
  run.shapes_seen = placer.shapes_seen();
  return run;
}

const std::vector<int>& allocation_loads() {
  static const std::vector<int> loads{95, 100, 130};
  return loads;
}

const std::vector<int>& fragmentation_loads() {
  static const std::vector<int> loads{0, 95, 100, 130};
  return loads;
}

double median(std::vector<double> values) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

PolicySummary summarize(sched::Policy policy, const std::vector<SeedRun>& runs) {
  PolicySummary s;
  s.policy = policy;
  auto at = [&](auto member, size_t k) {
    std::vector<double> v;
    for (const SeedRun& r : runs) v.push_back(k < (r.*member).size() ? (r.*member)[k] : kNaN);
    return median(v);
  };
  size_t loads = 0;
  for (const SeedRun& r : runs) loads = std::max(loads, r.alloc_pct.size());
  for (size_t k = 0; k < loads; ++k) s.alloc_curve.push_back(at(&SeedRun::alloc_pct, k));
  for (int k : allocation_loads()) s.unallocated_pct[k] = 100.0 - at(&SeedRun::alloc_pct, k);
  for (int k : fragmentation_loads()) {
    s.frag_ratio_pct[k] = at(&SeedRun::frag_ratio_pct, k);
    s.frag_milli_pct[k] = at(&SeedRun::frag_milli_pct, k);
  }
  std::vector<double> dropped;
  for (const SeedRun& r : runs) dropped.push_back(static_cast<double>(r.dropped.size()));
  s.median_dropped = median(dropped);
  if (!runs.empty())
    for (size_t i = 0; i < runs[0].dropped.size() && i < 5; ++i)
      s.dropped_examples.push_back(runs[0].dropped[i]);
  return s;
}

}  // namespace gpucloud::sim
