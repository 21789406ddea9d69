// `gpucloud sim gen`: a synthetic canonical trace from the request shapes of a given trace.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "sim/trace_gen.h"

namespace gpucloud::cli {

int cmd_sim_gen(const SimGenOptions& o) {
  sim::GenOptions g;
  g.jobs = o.jobs;
  g.rate_per_s = o.rate;
  g.seed = o.seed;
  g.tenants = o.tenants;
  g.duration_median_s = o.duration_median_s;
  g.duration_sigma = o.duration_sigma;
  if (Status s = sim::validate_gen_options(g); !s.ok()) {
    fail(s.error().message);
    return kExitUsage;
  }
  auto source = sim::load_trace(o.trace_like);
  if (!source.ok()) return fail(source.error().message);
  if (source->jobs.empty())
    return fail(fmt::format("{}: no jobs to take request shapes from", o.trace_like));
  std::ios::sync_with_stdio(false);
  sim::write_canonical_trace(std::cout, sim::generate_trace(source->jobs, g));
  std::cout.flush();
  if (!std::cout.good()) return fail("cannot write the trace to stdout");
  return 0;
}

}  // namespace gpucloud::cli
