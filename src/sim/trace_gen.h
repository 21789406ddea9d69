// The synthetic trace generator of `gpucloud sim gen` (docs/sim.md, "sim gen"): Poisson or
// burst arrivals, request shapes drawn from a given trace, log-normal durations. Deterministic
// per seed on every platform (mt19937_64 and hand-written distributions).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/result.h"
#include "sim/trace.h"

namespace gpucloud::sim {

/// What to generate.
struct GenOptions {
  int64_t jobs = 1000;
  double rate_per_s = 1;  // mean arrivals per second (exponential gaps)
  uint64_t seed = 42;
  int tenants = 0;  // > 0: tenant-1..tenant-K uniformly; 0: the sampled job's tenant
  // Log-normal durations: ln(duration_s) ~ Normal(ln(median_s), sigma). The defaults are fitted
  // to openb_pod_list_default.csv (mean of ln duration 6.33, i.e. a median of 561 s; sd 1.94).
  double duration_median_s = 600;
  double duration_sigma = 1.9;
  // Bursts instead of Poisson arrivals when burst_size > 0: burst_size jobs arrive together, all
  // at the same instant, at 0, burst_interval_ms, 2 × burst_interval_ms, ... (rate_per_s unused).
  int64_t burst_size = 0;
  int64_t burst_interval_ms = 0;
  // Users' runtime estimates when >= 0: each job declares expected_runtime = its duration ×
  // e^N(0, estimate_sigma) (0: exact estimates). Negative: jobs declare none.
  double estimate_sigma = -1;
  // Users' limits when > 0: each job declares max_runtime = its duration × this (at least 1,
  // so no job is stopped; EASY backfill plans with it). 0: the sampled shape's max_runtime.
  double max_runtime_factor = 0;
};

/// Checks the options' ranges; the message names the flag.
Status validate_gen_options(const GenOptions& o);

/// Generates o.jobs jobs named gen-000001...: the first arrives after one exponential gap from
/// time 0, each takes the request shape (replicas, GPUs, share, model, CPU, memory, priority,
/// capacity class, max runtime) of a job drawn uniformly from `shapes`, and a duration of at
/// least 1 s. `shapes` must not be empty.
std::vector<TraceJob> generate_trace(const std::vector<TraceJob>& shapes, const GenOptions& o);

/// The same jobs as generate_trace, handed to `emit` one at a time in arrival order (so that a
/// million jobs need no memory for the trace).
void generate_jobs(const std::vector<TraceJob>& shapes, const GenOptions& o,
                   const std::function<void(const TraceJob&)>& emit);

/// GPUs one job asks for on average when its shape is drawn uniformly from `shapes`: replicas ×
/// GPU milli per replica / 1000 (a share counts its fraction).
double mean_gpus_per_job(const std::vector<TraceJob>& shapes);

/// The mean of the log-normal duration distribution, in seconds: median × e^(sigma²/2).
double mean_duration_s(const GenOptions& o);

/// The arrival rate (jobs/s) that offers `load` × `cluster_gpus` GPUs of demand on average:
/// load × cluster_gpus / (mean_gpus_per_job × mean_duration_s). Error when the cluster has no
/// GPU or no shape asks for one.
Result<double> rate_for_load(double load, int64_t cluster_gpus, const std::vector<TraceJob>& shapes,
                             const GenOptions& o);

}  // namespace gpucloud::sim
