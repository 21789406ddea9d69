// `gpucloud sim replay`: replays a trace on a cluster through the production scheduler.
#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/interrupt_guard.h"
#include "cli/replay_progress.h"
#include "common/units.h"
#include "sim/replay.h"
#include "sim/replay_report.h"

namespace gpucloud::cli {

int cmd_sim_replay(const SimReplayOptions& o) {
  int64_t until_ms = INT64_MAX;
  if (!o.until.empty()) {
    auto until = parse_duration_ms(o.until);
    if (!until.ok()) {
      fail(fmt::format("--until: {}", until.error().message));
      return kExitUsage;
    }
    until_ms = *until;
  }
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
  sim::ReplayOptions options;
  options.policy = o.policy;
  options.seed = o.seed;
  options.queue_policy = o.queue_policy;
  bool terminal = isatty(STDERR_FILENO) == 1;
  if (o.progress || (terminal && !o.json))
    options.progress = make_replay_progress_printer(terminal, o.progress);
  options.until_ms = until_ms;
  Result<sim::ReplayResult> result = invalid("not run");
  {
    InterruptGuard interrupt;  // Ctrl-C: stop and report so far
    options.stop_requested = interrupt.stop_requested();
    result = sim::run_replay(*cluster, *trace, options);
  }
  if (!result.ok()) {
    fail(fmt::format(
        "{}: {}",
        result.error().message.starts_with("unknown queue policy") ? "--queue-policy" : "--policy",
        result.error().message));
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
