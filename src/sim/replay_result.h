// What a replay (sim/replay.h) records, and the statistics the reports take from it. Kept apart
// from the event loop so that reports, JSON and plots need no scheduler.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpucloud::sim {

/// One job of the trace as the replay saw it.
struct JobOutcome {
  std::string id;
  std::string tenant;
  int64_t submit_ms = 0;
  int64_t first_start_ms = -1;  // -1: never started
  int64_t end_ms = -1;          // -1: did not finish (never placed before the trace ran out)
  int64_t waited_ms = 0;        // time spent pending, over all attempts
  int attempts = 0;             // starts; more than 1 after preemptions
  bool stopped_at_max_runtime = false;
};

/// The cluster between one event and the next (a step function of virtual time).
struct TimePoint {
  int64_t t_ms = 0;
  int64_t used_gpu_milli = 0;
  int64_t queued = 0;     // jobs pending
  int64_t running = 0;    // jobs running
  double frag_milli = 0;  // FGD's fragmentation ΣF(node) over the nodes, in GPU milli
};

/// A job that can never run on the cluster, with where it was read and why.
struct NeverFitJob {
  std::string id;
  std::string message;  // "file:line:column: ..."
};

/// Where and why a replay stopped before its trace ran out, and the jobs it left unfinished.
struct ReplayStop {
  int64_t at_ms = 0;
  std::string reason;       // "--until" or "interrupted"
  int64_t running = 0;      // jobs running at that time
  int64_t pending = 0;      // jobs that had arrived and were waiting
  int64_t not_arrived = 0;  // jobs due to arrive later
};

/// Everything a replay records.
/// A change of a tenant's quota in force (a quota window started or ended).
struct QuotaChange {
  int64_t t_ms = 0;  // trace time
  std::string tenant;
  std::map<std::string, int> quota;  // GPUs per model from then on
};

struct ReplayResult {
  std::string policy;
  size_t nodes = 0;
  int64_t gpus = 0;
  std::vector<JobOutcome> jobs;  // the jobs that could fit, in trace order
  std::vector<NeverFitJob> never_fit;
  std::vector<TimePoint> timeline;                  // ascending t; a point holds until the next one
  int64_t first_submit_ms = 0, last_submit_ms = 0;  // of the replayed jobs
  int64_t preemptions = 0;
  int64_t spot_interruptions = 0;     // spot nodes taken (ReplayOptions::spot_interrupt_rate)
  int64_t jobs_spot_interrupted = 0;  // jobs running on them then
  // GPU-hours of work lost to preemptions and spot interruptions: run time since the last
  // checkpoint (or since the start), and restart time, of the attempts that were interrupted.
  double gpu_hours_lost = 0;
  int64_t schedule_calls = 0;
  // GPU-hours used per tenant and GPU model (a share counts its fraction; preempted runs count).
  std::map<std::string, std::map<std::string, double>> gpu_hours;
  // Set when the replay stopped early: the figures cover virtual time up to stopped->at_ms only.
  std::optional<ReplayStop> stopped;
  std::vector<QuotaChange> quota_changes;  // in time order (ReplayOptions::tenants' windows)
};

/// Mean and nearest-rank percentiles of a sample, in seconds (all 0 for an empty sample).
struct Distribution {
  size_t count = 0;
  double mean_s = 0, p50_s = 0, p95_s = 0, p99_s = 0, max_s = 0;
};

/// The distribution of values given in milliseconds.
Distribution distribution_ms(std::vector<int64_t> values_ms);

/// Time-weighted means over the timeline (from its first point to its last).
struct TimelineMeans {
  double gpu_alloc_pct = 0;  // used GPU milli as % of capacity
  double peak_gpu_alloc_pct = 0;
  double frag_ratio_pct = 0;  // 100·ΣF / free GPU milli (0 while nothing is free)
  double frag_milli_pct = 0;  // 100·ΣF / capacity
  double queued = 0;
  int64_t peak_queued = 0;
};

/// The timeline's time-weighted means for a cluster of `gpus` GPUs, over the window
/// [from_ms, to_ms] (clipped to the timeline; the whole timeline by default).
TimelineMeans timeline_means(const std::vector<TimePoint>& timeline, int64_t gpus,
                             int64_t from_ms = INT64_MIN, int64_t to_ms = INT64_MAX);

}  // namespace gpucloud::sim
