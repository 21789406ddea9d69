// `gpucloud sim gen`: a synthetic canonical trace from the request shapes of a given trace.
#include <fmt/format.h>

#include <cmath>
#include <iostream>

#include "cli/commands.h"
#include "common/units.h"
#include "sim/cluster.h"
#include "sim/trace_gen.h"

namespace gpucloud::cli {

namespace {

/// The flags that choose the arrivals, checked against each other: one of --rate (Poisson),
/// --load (Poisson at a computed rate) and --burst-interval sets the pace.
Status check_arrival_flags(const SimGenOptions& o) {
  if (o.rate_given && o.load_given)
    return invalid("--rate and --load both set the arrival rate; give one of them");
  if (o.load_given && o.cluster.empty())
    return invalid("--load needs --cluster: the cluster whose GPUs the load is a fraction of");
  if (!o.load_given && !o.cluster.empty())
    return invalid("--cluster is only used with --load; add --load FRACTION or drop --cluster");
  if (o.load_given && !(o.load > 0 && o.load <= 100))
    return invalid(fmt::format(
        "--load: {} must be above 0 and at most 100 (a fraction of the cluster's GPUs, e.g. 0.9)",
        o.load));
  bool interval = !o.burst_interval.empty();
  if (o.burst_size_given && (o.burst_size < 1 || o.burst_size > 100'000'000))
    return invalid(fmt::format("--burst-size: {} must be 1..100000000", o.burst_size));
  if (o.burst_size_given && o.rate_given)
    return invalid(
        "--rate is for Poisson arrivals; with --burst-size the pace is --burst-interval (or "
        "--load)");
  if (interval && !o.burst_size_given)
    return invalid("--burst-interval needs --burst-size: how many jobs arrive in each burst");
  if (o.burst_size_given && interval == o.load_given)
    return invalid(
        interval ? "--burst-interval and --load both set the pace of the bursts; give one of them"
                 : "--burst-size needs --burst-interval (e.g. 60s) or --load to set how often "
                   "bursts come");
  return {};
}

/// The generator's options from the flags, before --load sets the rate.
Result<sim::GenOptions> gen_options(const SimGenOptions& o) {
  sim::GenOptions g;
  g.jobs = o.jobs;
  g.rate_per_s = o.rate;
  g.seed = o.seed;
  g.tenants = o.tenants;
  g.duration_median_s = o.duration_median_s;
  g.duration_sigma = o.duration_sigma;
  g.estimate_sigma = o.estimate_sigma;
  g.max_runtime_factor = o.max_runtime_factor;
  if (o.burst_size_given) g.burst_size = o.burst_size;
  if (!o.burst_interval.empty()) {
    auto interval = parse_duration_ms(o.burst_interval);
    if (!interval.ok()) return invalid("--burst-interval: " + interval.error().message);
    g.burst_interval_ms = *interval;
  } else if (g.burst_size > 0) {
    g.burst_interval_ms = 1000;  // a placeholder until --load sets it
  }
  if (Status s = sim::validate_gen_options(g); !s.ok()) return s.error();
  return g;
}

/// Sets g's rate (and burst interval) so that the offered GPU load on o.cluster is o.load.
Status apply_load(const SimGenOptions& o, const std::vector<sim::TraceJob>& shapes,
                  sim::GenOptions& g) {
  auto cluster = sim::load_cluster(o.cluster);
  if (!cluster.ok()) return cluster.error();
  auto rate = sim::rate_for_load(o.load, cluster->gpus(), shapes, g);
  if (!rate.ok()) return rate.error();
  if (!(*rate <= 1e6))
    return invalid(
        fmt::format("--load: {} needs {:.0f} jobs/s on this cluster, above the limit of 1000000",
                    o.load, *rate));
  g.rate_per_s = *rate;
  if (g.burst_size > 0)
    g.burst_interval_ms =
        std::max<int64_t>(1, std::llround(static_cast<double>(g.burst_size) / *rate * 1000));
  return sim::validate_gen_options(g);
}

}  // namespace

int cmd_sim_gen(const SimGenOptions& o) {
  Status flags = check_arrival_flags(o);
  Result<sim::GenOptions> g = flags.ok() ? gen_options(o) : Result<sim::GenOptions>(flags.error());
  if (!g.ok()) {
    fail(g.error().message);
    return kExitUsage;
  }
  auto source = sim::load_trace(o.trace_like);
  if (!source.ok()) return fail(source.error().message);
  if (source->jobs.empty())
    return fail(fmt::format("{}: no jobs to take request shapes from", o.trace_like));
  if (o.load_given) {
    if (Status s = apply_load(o, source->jobs, *g); !s.ok()) return fail(s.error().message);
    std::cerr << fmt::format(
        "sim gen: --load {} on {}: {:.4f} jobs/s ({:.3f} GPUs per job, {:.0f} s mean duration)\n",
        o.load, o.cluster, g->rate_per_s, sim::mean_gpus_per_job(source->jobs),
        sim::mean_duration_s(*g));
  }
  std::ios::sync_with_stdio(false);
  sim::write_canonical_header(std::cout);
  sim::generate_jobs(source->jobs, *g,
                     [](const sim::TraceJob& j) { sim::write_canonical_row(std::cout, j); });
  std::cout.flush();
  if (!std::cout.good()) return fail("cannot write the trace to stdout");
  return 0;
}

}  // namespace gpucloud::cli
