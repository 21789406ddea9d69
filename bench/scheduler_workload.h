// The synthetic cluster and queue of bench_scheduler (see the top of bench_scheduler.cpp for
// their mix), shared by its runs and its event-latency headline. Deterministic: the same seed
// gives the same cluster and jobs on every platform.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sched/types.h"

namespace gpucloud::bench {

using sched::JobRequest;
using SteadyClock = std::chrono::steady_clock;

/// Seconds since `start`.
double seconds_since(SteadyClock::time_point start);

/// Deterministic everywhere: mt19937_64's sequence is fixed by the standard; the distributions
/// are written here (the standard library's differ between implementations).
class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  double uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
  int below(int n) { return static_cast<int>(g_() % static_cast<uint64_t>(n)); }
  double normal();
  /// An index into `weights`, drawn in proportion to them.
  template <typename T>
  size_t pick(const std::vector<std::pair<T, double>>& weights) {
    double total = 0;
    for (const auto& w : weights) total += w.second;
    double x = uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i].second) return i;
      x -= weights[i].second;
    }
    return weights.size() - 1;
  }
  template <typename T>
  const T& choose(const std::vector<std::pair<T, double>>& weights) {
    return weights[pick(weights)].first;
  }

 private:
  std::mt19937_64 g_;
};

constexpr int64_t kGiB = 1024;                // in MiB
constexpr TimeMs kStart = 1'767'225'600'000;  // 2026-01-01T00:00:00Z

/// N nodes × 8 GPUs of three kinds, zones and capacity classes.
struct Cluster {
  std::vector<sched::NodeState> nodes;
  std::map<std::string, int> gpus_by_model;
  int64_t gpus = 0;
};
/// The cluster of n nodes; node i is "node-%05d" of i.
Cluster make_cluster(int n);
/// One node of the cluster's mix, the i-th (ids from make_cluster's numbering).
sched::NodeState make_node(int i);
/// Eight tenants with weights, five with quotas in two cohorts.
std::vector<sched::TenantSpec> make_tenants(const Cluster& c);

enum class Kind { kOneGpu, kShare, kMultiGpu, kGang };

struct Job {
  JobRequest req;
  Kind kind = Kind::kOneGpu;
  TimeMs duration = 0;  // how long it really runs once placed
};

struct Workload {
  std::vector<Job> jobs;
  double gpu_demand = 0;  // GPUs asked for by all jobs together
  // Jobs held back from the initial submission, submitted one at a time as latency probes.
  std::vector<int> probe_single, probe_gang, probe_preempt;
};

const char* kind_name(Kind k);
/// The job's index in its workload, from its id ("j%07d").
int job_index(const std::string& id);
/// `count` jobs of the mix; probes as asked (0 for none). Ids "j%07d" from `first_id` on.
Workload make_workload(int count, uint64_t seed, int probes_single, int probes_other,
                       int first_id = 0);

struct Percentiles {
  size_t count = 0;
  double p50 = 0, p99 = 0, max = 0;
};
/// The 50th and 99th percentiles (nearest rank) and the maximum.
Percentiles percentiles(std::vector<double> v);

}  // namespace gpucloud::bench
