// The FGD allocation experiment (shared/fgd-experiment.md): pods arrive one at a time, nothing
// leaves, a pod that fits nowhere is dropped; allocation and fragmentation are recorded against
// the arrival load. Runs the sched library's SharePlacer on the trace; reads no clock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sched/policies/fragmentation.h"
#include "sched/policies/policy_scores.h"
#include "sim/alibaba_trace.h"

namespace gpucloud::sim {

/// The inputs shared by every run: the cluster, the pods and the workload profile.
struct FgdSetup {
  TraceCluster cluster;
  std::vector<TracePod> pods;
  sched::WorkloadProfile profile;    // typical pod types of `pods` (95 % coverage)
  sched::WorkloadProfile all_types;  // every pod type of `pods` (the default policy's guard)
  std::vector<int> never_fit;        // pods that fit no node even on the empty cluster

  /// Builds the profile and finds the pods that can never fit.
  static FgdSetup make(TraceCluster cluster, std::vector<TracePod> pods);
  /// Total GPU milli of the cluster.
  int64_t capacity_milli() const { return cluster.gpus * sched::kMilliPerGpu; }
};

/// The outcome of one (policy, seed) run, per arrival load k in whole percent (index k). A load
/// no arrival rounded to takes the previous load's value (only on clusters so small that one
/// pod is over 1 % of them); loads past the last arrival are NaN.
struct SeedRun {
  uint64_t seed = 0;
  std::vector<double> alloc_pct;       // mean of round(used %, 2) over the arrivals at load k
  std::vector<double> frag_ratio_pct;  // mean of 100·ΣF / free GPU milli (k = 0 includes empty)
  std::vector<double> frag_milli_pct;  // mean of 100·ΣF / capacity milli
  int arrived = 0;
  int placed = 0;
  std::vector<int> dropped;  // pod indices of the arrivals that fit nowhere, in order
  size_t shapes_seen = 0;    // distinct node shapes the placer scored
};

/// Runs one policy on one seed's arrival sequence.
SeedRun run_fgd_seed(const FgdSetup& setup, sched::Policy policy, uint64_t seed, double inflation);

/// One policy's results: medians over the seeds at the reported loads.
struct PolicySummary {
  sched::Policy policy = sched::Policy::kFgd;
  std::map<int, double> unallocated_pct;  // loads 95, 100, 130
  std::map<int, double> frag_ratio_pct;   // loads 0, 95, 100, 130
  std::map<int, double> frag_milli_pct;   // loads 0, 95, 100, 130
  std::vector<double> alloc_curve;        // median allocation % per load k (NaN: none)
  double median_dropped = 0;              // pods dropped per run, median over seeds
  std::vector<int> dropped_examples;      // pod indices dropped in the first seed's run (≤ 5)
  double seconds = 0;                     // filled in by the caller (the sim reads no clock)
};

/// The loads at which unallocated GPUs and fragmentation are reported.
const std::vector<int>& allocation_loads();
const std::vector<int>& fragmentation_loads();

/// Median of the values that are not NaN (NaN if none); the mean of the middle two if even.
double median(std::vector<double> values);

/// Summarises the runs of one policy.
PolicySummary summarize(sched::Policy policy, const std::vector<SeedRun>& runs);

}  // namespace gpucloud::sim
