// `gpucloud sim replay`: replays a trace on a cluster through the production scheduler.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/interrupt_guard.h"
#include "cli/replay_progress.h"
#include "common/units.h"
#include "server/config.h"
#include "sim/replay.h"
#include "sim/replay_report.h"

namespace gpucloud::cli {

namespace {

/// A duration flag: its value in ms (`fallback` when not given), or an error naming the flag.
Result<int64_t> duration_flag(const char* flag, const std::string& text, int64_t fallback) {
  if (text.empty()) return fallback;
  auto ms = parse_duration_ms(text);
  if (!ms.ok()) return invalid(fmt::format("{}: {}", flag, ms.error().message));
  return *ms;
}

/// --start: "2026-03-02" or "2026-03-02T07:00[:00]Z" (UTC) in ms since the epoch.
Result<int64_t> start_flag(const std::string& text) {
  if (text.empty()) return int64_t{0};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, n = 0;
  bool ok = false;
  if (text.size() == 10)
    ok = std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && n == 10;
  else if (text.size() == 17 || text.size() == 20)
    ok = (text.size() == 17
              ? std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &n) == 5
              : std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &sec,
                            &n) == 6) &&
         n == static_cast<int>(text.size());
  std::chrono::year_month_day day{std::chrono::year{y},
                                  std::chrono::month{static_cast<unsigned>(mo)},
                                  std::chrono::day{static_cast<unsigned>(d)}};
  if (!ok || !day.ok() || y < 1970 || y > 9999 || h > 23 || mi > 59 || sec > 59)
    return invalid(fmt::format(
        "--start: '{}' is not a UTC time like 2026-03-02T07:00Z or a date like 2026-03-02", text));
  int64_t days = std::chrono::sys_days{day}.time_since_epoch().count();
  return ((days * 24 + h) * 60 + mi) * 60'000 + sec * 1000;
}

}  // namespace

int cmd_sim_replay(const SimReplayOptions& o) {
  sim::ReplayOptions options;
  auto until = duration_flag("--until", o.until, INT64_MAX);
  auto interval = duration_flag("--checkpoint-interval", o.checkpoint_interval, 0);
  auto restart = duration_flag("--restart-cost", o.restart_cost, 0);
  auto downtime = duration_flag("--spot-downtime", o.spot_downtime, options.spot_downtime_ms);
  for (const auto* r : {&until, &interval, &restart, &downtime})
    if (!r->ok()) {
      fail(r->error().message);
      return kExitUsage;
    }
  int64_t until_ms = *until;
  options.checkpoint_interval_ms = *interval;
  options.restart_cost_ms = *restart;
  options.spot_downtime_ms = *downtime;
  if (!(o.spot_interrupt_rate >= 0 && o.spot_interrupt_rate <= 100)) {
    fail(fmt::format("--spot-interrupt-rate: {} per node-hour must be 0..100",
                     o.spot_interrupt_rate));
    return kExitUsage;
  }
  options.spot_interrupt_rate_per_hour = o.spot_interrupt_rate;
  auto queue = queue_settings_from(o.queue);
  if (!queue) {
    fail(queue.error().message);
    return kExitUsage;
  }
  options.queue_policy = queue->queue_policy;
  options.las_thresholds_gpu_s = queue->las_thresholds_gpu_s;
  options.las_starvation_ms = queue->las_starvation_ms;
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
  auto start = start_flag(o.start);
  if (!start) {
    fail(start.error().message);
    return kExitUsage;
  }
  options.epoch_ms = *start;
  if (!o.tenants_config.empty()) {
    auto config = server::load_server_config(o.tenants_config);
    if (!config) return fail(config.error().message);
    for (const auto& t : config->tenants) {
      sim::ReplayTenant tenant;
      tenant.spec.name = t.name;
      tenant.spec.weight = t.weight;
      tenant.spec.cohort = t.cohort;
      tenant.spec.has_quota = !t.quota.empty() || !t.borrowing_limit.empty();
      tenant.spec.quota = t.quota;
      tenant.spec.borrowing_limit = t.borrowing_limit;
      tenant.windows = t.quota_windows;
      options.tenants.push_back(std::move(tenant));
    }
  }
  options.policy = o.policy;
  options.seed = o.seed;
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
