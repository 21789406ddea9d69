#include "sim/replay_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "sim/svg_plot.h"

namespace gpucloud::sim {

namespace {

struct TenantLine {
  std::string tenant;
  int64_t jobs = 0;
  double gpu_hours = 0;
  double usd = 0;
};

struct Summary {
  Distribution delay, completion;
  TimelineMeans means;
  TimelineMeans arriving;  // from the first arrival to the last
  int64_t completed = 0, stopped = 0, unfinished = 0;
  double makespan_s = 0;
  std::vector<TenantLine> tenants;
  double total_usd = 0;
};

Summary summarize(const ReplayResult& r, const PriceCatalog* prices) {
  Summary s;
  std::vector<int64_t> delays, completions;
  std::map<std::string, TenantLine> tenants;
  for (const JobOutcome& j : r.jobs) {
    tenants[j.tenant].jobs += 1;
    if (j.end_ms < 0) {
      ++s.unfinished;
      continue;
    }
    ++s.completed;
    s.stopped += j.stopped_at_max_runtime ? 1 : 0;
    delays.push_back(j.waited_ms);
    completions.push_back(j.end_ms - j.submit_ms);
  }
  s.delay = distribution_ms(std::move(delays));
  s.completion = distribution_ms(std::move(completions));
  s.means = timeline_means(r.timeline, r.gpus);
  s.arriving = timeline_means(r.timeline, r.gpus, r.first_submit_ms, r.last_submit_ms);
  if (r.timeline.size() > 1)
    s.makespan_s = static_cast<double>(r.timeline.back().t_ms - r.timeline.front().t_ms) / 1000;
  for (const auto& [tenant, models] : r.gpu_hours)
    for (const auto& [model, hours] : models) {
      tenants[tenant].gpu_hours += hours;
      if (prices != nullptr)
        tenants[tenant].usd += hours * prices->usd_per_gpu_hour(model).value_or(0);
    }
  for (auto& [name, line] : tenants) {
    line.tenant = name;
    s.total_usd += line.usd;
    s.tenants.push_back(line);
  }
  return s;
}

nlohmann::json dist_json(const Distribution& d) {
  return {
      {"mean", d.mean_s}, {"p50", d.p50_s}, {"p95", d.p95_s}, {"p99", d.p99_s}, {"max", d.max_s}};
}

nlohmann::json stop_json(const ReplayResult& r) {
  if (!r.stopped) return nullptr;
  const ReplayStop& s = *r.stopped;
  return {{"at_s", static_cast<double>(s.at_ms) / 1000},
          {"reason", s.reason},
          {"running", s.running},
          {"pending", s.pending},
          {"not_arrived", s.not_arrived}};
}

}  // namespace

std::string format_replay_stop(const ReplayStop& s) {
  return fmt::format(
      "partial: stopped at simulated time {} ({}): {} jobs running, {} pending, {} not yet "
      "arrived; the figures below cover the time up to there, and delays and completion times "
      "only the jobs that finished by then",
      format_duration_ms(s.at_ms), s.reason, s.running, s.pending, s.not_arrived);
}

nlohmann::json replay_json(const ReplayResult& r, const PriceCatalog* prices) {
  Summary s = summarize(r, prices);
  nlohmann::json examples = nlohmann::json::array();
  for (size_t i = 0; i < std::min(r.never_fit.size(), kNeverFitExamples); ++i)
    examples.push_back({{"id", r.never_fit[i].id}, {"message", r.never_fit[i].message}});
  nlohmann::json tenants = nlohmann::json::array();
  for (const TenantLine& t : s.tenants)
    tenants.push_back({{"tenant", t.tenant},
                       {"jobs", t.jobs},
                       {"gpu_hours", t.gpu_hours},
                       {"usd", prices != nullptr ? nlohmann::json(t.usd) : nlohmann::json()}});
  nlohmann::json quota_changes = nlohmann::json::array();
  for (const QuotaChange& q : r.quota_changes)
    quota_changes.push_back({{"t_s", q.t_ms / 1000.0}, {"tenant", q.tenant}, {"quota", q.quota}});
  return {{"policy", r.policy},
          {"partial", r.stopped.has_value()},
          {"quota_changes", quota_changes},
          {"stopped", stop_json(r)},
          {"cluster", {{"nodes", r.nodes}, {"gpus", r.gpus}}},
          {"jobs",
           {{"total", r.jobs.size() + r.never_fit.size()},
            {"completed", s.completed},
            {"stopped_at_max_runtime", s.stopped},
            {"unfinished", s.unfinished},
            {"preemptions", r.preemptions},
            {"spot_interrupted", r.jobs_spot_interrupted},
            {"never_fit", r.never_fit.size()}}},
          {"queueing_delay_s", dist_json(s.delay)},
          {"completion_time_s", dist_json(s.completion)},
          {"gpu_allocation_pct",
           {{"time_weighted_mean", s.means.gpu_alloc_pct},
            {"while_arriving", s.arriving.gpu_alloc_pct},
            {"peak", s.means.peak_gpu_alloc_pct}}},
          {"fragmentation",
           {{"ratio_pct", s.means.frag_ratio_pct}, {"milli_pct", s.means.frag_milli_pct}}},
          {"queued", {{"time_weighted_mean", s.means.queued}, {"peak", s.means.peak_queued}}},
          {"makespan_s", s.makespan_s},
          {"interruptions",
           {{"spot_nodes_taken", r.spot_interruptions},
            {"jobs_spot_interrupted", r.jobs_spot_interrupted},
            {"gpu_hours_lost", r.gpu_hours_lost}}},
          {"never_fit", {{"count", r.never_fit.size()}, {"examples", examples}}},
          {"tenants", tenants},
          {"total_usd", prices != nullptr ? nlohmann::json(s.total_usd) : nlohmann::json()}};
}

std::string format_replay_report(const ReplayResult& r, const PriceCatalog* prices) {
  Summary s = summarize(r, prices);
  std::string out = fmt::format(
      "replay: policy {} on {} nodes, {} GPUs; {} jobs ({} completed, {} stopped at "
      "max_runtime, {} unfinished, {} never fit), {} preemptions, makespan {:.1f} h\n\n",
      r.policy, r.nodes, r.gpus, r.jobs.size() + r.never_fit.size(), s.completed, s.stopped,
      s.unfinished, r.never_fit.size(), r.preemptions, s.makespan_s / 3600);
  if (r.spot_interruptions > 0 || r.gpu_hours_lost > 0)
    out.insert(out.size() - 1,
               fmt::format("interruptions: {} spot nodes taken, {} jobs interrupted by them; "
                           "{:.1f} GPU-hours of work lost to interruptions (since the last "
                           "checkpoint, and restarts)\n",
                           r.spot_interruptions, r.jobs_spot_interrupted, r.gpu_hours_lost));
  if (r.stopped) out.insert(out.size() - 1, format_replay_stop(*r.stopped) + "\n");
  out +=
      fmt::format("{:<22} {:>12} {:>12} {:>12} {:>12}\n", "seconds", "mean", "p50", "p95", "p99");
  for (auto [name, d] :
       {std::pair{"queueing delay", s.delay}, std::pair{"completion time", s.completion}})
    out += fmt::format("{:<22} {:>12.1f} {:>12.1f} {:>12.1f} {:>12.1f}\n", name, d.mean_s, d.p50_s,
                       d.p95_s, d.p99_s);
  out += fmt::format(
      "\nGPU allocation: {:.2f} % time-weighted mean ({:.2f} % while jobs arrive), {:.2f} % "
      "peak\n"
      "fragmentation: {:.2f} % of free GPU milli ({:.2f} % of capacity), time-weighted\n"
      "queue: {:.1f} jobs time-weighted mean, {} peak\n",
      s.means.gpu_alloc_pct, s.arriving.gpu_alloc_pct, s.means.peak_gpu_alloc_pct,
      s.means.frag_ratio_pct, s.means.frag_milli_pct, s.means.queued, s.means.peak_queued);
  out += fmt::format("\n{:<20} {:>8} {:>12} {:>12}\n", "tenant", "jobs", "GPU-hours",
                     prices != nullptr ? "USD" : "USD (no --prices)");
  for (const TenantLine& t : s.tenants)
    out += fmt::format("{:<20} {:>8} {:>12.2f} {:>12}\n", t.tenant, t.jobs, t.gpu_hours,
                       prices != nullptr ? fmt::format("{:.2f}", t.usd) : "-");
  if (prices != nullptr)
    out += fmt::format("{:<20} {:>8} {:>12} {:>12.2f}\n", "total", "", "", s.total_usd);
  if (!r.never_fit.empty()) {
    out += fmt::format("\n{} jobs can never fit this cluster and were not replayed; first {}:\n",
                       r.never_fit.size(), std::min(r.never_fit.size(), kNeverFitExamples));
    for (size_t i = 0; i < std::min(r.never_fit.size(), kNeverFitExamples); ++i)
      out += fmt::format("  {}\n", r.never_fit[i].message);
  }
  return out;
}

std::string replay_plot_svg(const ReplayResult& r, const std::string& title) {
  LineChart chart;
  chart.title = title;
  double span_s = r.timeline.size() > 1
                      ? static_cast<double>(r.timeline.back().t_ms - r.timeline.front().t_ms) / 1000
                      : 0;
  double unit = span_s > 3 * 3600 ? 3600 : span_s > 180 ? 60 : 1;
  chart.x_label = fmt::format("virtual time ({})", unit == 3600 ? "hours"
                                                   : unit == 60 ? "minutes"
                                                                : "seconds");
  chart.y_label = "% of GPU capacity";
  chart.y2_label = "jobs queued";
  chart.y_max = 100;
  ChartSeries alloc{"GPUs allocated (%)", {}, false, true};
  ChartSeries frag{"fragmented free GPU (% of capacity)", {}, false, true};
  ChartSeries queue{"jobs queued", {}, true, true};
  double capacity = std::max<double>(1, static_cast<double>(r.gpus) * 1000);
  // At most about 2,000 points per line: keep a point when its x moved by 1/2000 of the span.
  double min_dx = span_s / unit / 2000, last_x = -1e300;
  for (size_t i = 0; i < r.timeline.size(); ++i) {
    const TimePoint& p = r.timeline[i];
    double x = static_cast<double>(p.t_ms) / 1000 / unit;
    if (x - last_x < min_dx && i + 1 != r.timeline.size()) continue;
    last_x = x;
    alloc.points.emplace_back(x, 100 * static_cast<double>(p.used_gpu_milli) / capacity);
    frag.points.emplace_back(x, 100 * p.frag_milli / capacity);
    queue.points.emplace_back(x, static_cast<double>(p.queued));
  }
  chart.series = {alloc, frag, queue};
  return line_chart_svg(chart);
}

}  // namespace gpucloud::sim
