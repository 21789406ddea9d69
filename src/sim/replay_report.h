// Reports of `gpucloud sim replay`: a text summary, one JSON object, and an SVG of queue length
// and GPU use over time. Cost needs a price catalog; without one the reports give GPU-hours.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "sim/price_catalog.h"
#include "sim/replay_result.h"

namespace gpucloud::sim {

/// How many never-fitting jobs the reports list by name.
constexpr size_t kNeverFitExamples = 5;

/// {"policy", "partial", "stopped":null or {"at_s","reason","running","pending","not_arrived"},
/// "cluster":{"nodes","gpus"}, "jobs":{"total","completed",
/// "stopped_at_max_runtime","unfinished","preemptions","never_fit"}, "queueing_delay_s" and
/// "completion_time_s":{"mean","p50","p95","p99","max"}, "gpu_allocation_pct":
/// {"time_weighted_mean","peak"}, "fragmentation":{"ratio_pct","milli_pct"} (time-weighted),
/// "queued":{"time_weighted_mean","peak"}, "makespan_s", "never_fit":{"count","examples":
/// [{"id","message"}]}, "tenants":[{"tenant","jobs","gpu_hours","usd"}], "total_usd"};
/// usd fields are null without a catalog.
nlohmann::json replay_json(const ReplayResult& r, const PriceCatalog* prices);

/// The line that labels a partial report: where and why the replay stopped, what was left.
std::string format_replay_stop(const ReplayStop& s);

/// The same figures as readable text (with format_replay_stop's line after the first when the
/// replay stopped early).
std::string format_replay_report(const ReplayResult& r, const PriceCatalog* prices);

/// Queue length and GPU allocation (and fragmented GPU) over virtual time, as SVG.
std::string replay_plot_svg(const ReplayResult& r, const std::string& title);

}  // namespace gpucloud::sim
