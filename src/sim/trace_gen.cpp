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
  return {};
}

std::vector<TraceJob> generate_trace(const std::vector<TraceJob>& shapes, const GenOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::vector<TraceJob> jobs;
  jobs.reserve(static_cast<size_t>(o.jobs));
  double t_s = 0;
  double mu = std::log(o.duration_median_s);
  for (int64_t i = 1; i <= o.jobs; ++i) {
    t_s += -std::log(uniform01(rng)) / o.rate_per_s;
    const TraceJob& shape = shapes[below(rng, shapes.size())];
    TraceJob job = shape;
    job.id = fmt::format("gen-{:06}", i);
    if (o.tenants > 0)
      job.tenant = fmt::format("tenant-{}", below(rng, static_cast<uint64_t>(o.tenants)) + 1);
    job.submit_ms = std::llround(t_s * 1000);
    double d_s = std::exp(mu + o.duration_sigma * standard_normal(rng));
    job.duration_ms = std::max<int64_t>(1000, std::llround(std::min(d_s, 1e9) * 1000));
    job.line = 0;
    job.cell_column = {};
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace gpucloud::sim
