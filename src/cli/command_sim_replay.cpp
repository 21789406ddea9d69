// `gpucloud sim replay`: replays a trace on a cluster through the production scheduler.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "sim/replay.h"
#include "sim/replay_report.h"

namespace gpucloud::cli {

int cmd_sim_replay(const SimReplayOptions& o) {
  auto cluster = sim::load_cluster(o.cluster);
  if (!cluster.ok()) return fail(cluster.error().message);
  auto trace = sim::load_trace(o.trace);
  if (!trace.ok()) return fail(trace.error().message);
  if (!trace->durations_known)
    return fail(fmt::format(
        "{}:1:1: missing column 'deletion_time': a replay needs each pod's duration (deletion_time "
        "- scheduled_time); sim fgd and sim gen --trace-like take pod lists without times",
        o.trace));
  std::unique_ptr<sim::PriceCatalog> prices;
  if (!o.prices.empty()) {
    auto catalog = sim::PriceCatalog::load(o.prices);
    if (!catalog.ok()) return fail(catalog.error().message);
    if (Status s = catalog->check_covers(cluster->models()); !s.ok())
      return fail(s.error().message);
    prices = std::make_unique<sim::PriceCatalog>(std::move(*catalog));
  }
  sim::ReplayOptions options{o.policy, o.seed};
  auto result = sim::run_replay(*cluster, *trace, options);
  if (!result.ok()) {
    fail(fmt::format("--policy: {}", result.error().message));
    return kExitUsage;
  }
  if (!o.plot.empty()) {
    std::ofstream out(o.plot, std::ios::trunc);
    out << sim::replay_plot_svg(*result, fmt::format("replay of {} jobs on {} GPUs, policy {}",
                                                     result->jobs.size(), result->gpus, o.policy));
    if (!out.good()) return fail(fmt::format("--plot: cannot write '{}'", o.plot));
  }
  if (o.json)
    std::cout << sim::replay_json(*result, prices.get()).dump(2) << "\n";
  else
    std::cout << sim::format_replay_report(*result, prices.get());
  return 0;
}

}  // namespace gpucloud::cli
