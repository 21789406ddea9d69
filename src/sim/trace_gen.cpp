#include "sim/trace_gen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

namespace gpucloud::sim {

namespace {

/// Uniform in (0, 1]: 53 random bits.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53;
}

/// Standard normal by Box–Muller (one of the pair).
double standard_normal(std::mt19937_64& rng) {
  double u1 = uniform01(rng), u2 = uniform01(rng);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

constexpr int64_t kMaxBurstIntervalMs = 365LL * 86'400'000;

uint64_t below(std::mt19937_64& rng, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t v = rng();
  while (v >= limit) v = rng();
  return v % n;
}

}  // namespace

Status validate_gen_options(const GenOptions& o) {
  if (o.jobs < 1 || o.jobs > 100'000'000)
    return invalid(fmt::format("--jobs: {} must be 1..100000000", o.jobs));
  if (!(o.rate_per_s > 0 && o.rate_per_s <= 1e6))
    return invalid(
        fmt::format("--rate: {} jobs/s must be above 0 and at most 1000000", o.rate_per_s));
  if (o.tenants < 0 || o.tenants > 100000)
    return invalid(fmt::format("--tenants: {} must be 0..100000", o.tenants));
  if (!(o.duration_median_s >= 1 && o.duration_median_s <= 1e8))
    return invalid(
        fmt::format("--duration-median: {} s must be 1..100000000", o.duration_median_s));
  if (!(o.duration_sigma >= 0 && o.duration_sigma <= 5))
    return invalid(fmt::format("--duration-sigma: {} must be 0..5", o.duration_sigma));
  if (o.estimate_sigma > 5 || (o.estimate_sigma < 0 && o.estimate_sigma != -1))
    return invalid(fmt::format("--runtime-estimates: sigma {} must be 0..5", o.estimate_sigma));
  if (o.max_runtime_factor != 0 && !(o.max_runtime_factor >= 1 && o.max_runtime_factor <= 100))
    return invalid(
        fmt::format("--max-runtime-factor: {} must be 1..100 (a limit below the "
                    "duration would stop the job)",
                    o.max_runtime_factor));
  if (o.burst_size < 0 || o.burst_size > 100'000'000)
    return invalid(fmt::format("--burst-size: {} must be 1..100000000", o.burst_size));
  if (o.burst_size > 0 && (o.burst_interval_ms < 1 || o.burst_interval_ms > kMaxBurstIntervalMs))
    return invalid(fmt::format("--burst-interval: {} ms must be at least 1 ms and at most 1 year",
                               o.burst_interval_ms));
  return {};
}

std::vector<TraceJob> generate_trace(const std::vector<TraceJob>& shapes, const GenOptions& o) {
  std::vector<TraceJob> jobs;
  jobs.reserve(static_cast<size_t>(o.jobs));
  generate_jobs(shapes, o, [&](const TraceJob& j) { jobs.push_back(j); });
  return jobs;
}

void generate_jobs(const std::vector<TraceJob>& shapes, const GenOptions& o,
                   const std::function<void(const TraceJob&)>& emit) {
  std::mt19937_64 rng(o.seed);
  double t_s = 0;
  double mu = std::log(o.duration_median_s);
  for (int64_t i = 1; i <= o.jobs; ++i) {
    int64_t submit_ms = 0;
    if (o.burst_size > 0) {
      submit_ms = (i - 1) / o.burst_size * o.burst_interval_ms;
    } else {
      t_s += -std::log(uniform01(rng)) / o.rate_per_s;
      submit_ms = std::llround(t_s * 1000);
    }
    TraceJob job = shapes[below(rng, shapes.size())];
    job.id = fmt::format("gen-{:06}", i);
    if (o.tenants > 0)
      job.tenant = fmt::format("tenant-{}", below(rng, static_cast<uint64_t>(o.tenants)) + 1);
    job.submit_ms = submit_ms;
    double d_s = std::exp(mu + o.duration_sigma * standard_normal(rng));
    job.duration_ms = std::max<int64_t>(1000, std::llround(std::min(d_s, 1e9) * 1000));
    if (o.max_runtime_factor > 0)
      job.max_runtime_ms =
          std::llround(static_cast<double>(job.duration_ms) * o.max_runtime_factor);
    if (o.estimate_sigma >= 0) {
      double e_s = static_cast<double>(job.duration_ms) / 1000 *
                   std::exp(o.estimate_sigma * standard_normal(rng));
      job.expected_runtime_ms = std::max<int64_t>(1000, std::llround(std::min(e_s, 1e9) * 1000));
    }
    job.line = 0;
    job.cell_column = {};
    emit(job);
  }
}

double mean_gpus_per_job(const std::vector<TraceJob>& shapes) {
  if (shapes.empty()) return 0;
  double milli = 0;
  for (const TraceJob& j : shapes)
    milli += static_cast<double>(j.replicas) * static_cast<double>(j.gpu_milli_per_replica());
  return milli / 1000 / static_cast<double>(shapes.size());
}

double mean_duration_s(const GenOptions& o) {
  return o.duration_median_s * std::exp(o.duration_sigma * o.duration_sigma / 2);
}

Result<double> rate_for_load(double load, int64_t cluster_gpus, const std::vector<TraceJob>& shapes,
                             const GenOptions& o) {
  if (cluster_gpus <= 0)
    return invalid("--cluster: the cluster has no GPU, so no arrival rate gives it a GPU load");
  double gpus = mean_gpus_per_job(shapes);
  if (gpus <= 0)
    return invalid("--trace-like: no job asks for a GPU, so no arrival rate gives a GPU load");
  return load * static_cast<double>(cluster_gpus) / (gpus * mean_duration_s(o));
}

}  // namespace gpucloud::sim
