// Idle reclaim (docs/interruptions.md, "Idle GPUs handed back"): a running job whose GPUs all
// stay below the idle threshold for its idle window is warned at 80 % of the window and then
// interrupted with cause idle; it ends idle-reclaimed and its GPUs are free.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/units.h"
#include "server/server.h"

namespace gpucloud::server {

namespace {

// The warning comes at this fraction of the idle window.
constexpr double kWarnAt = 0.8;

}  // namespace

void Server::observe_idleness(const std::string& node_id, store::WriteBatch& batch) {
  auto rt = runtime_.find(node_id);
  if (rt == runtime_.end() || rt->second.readings.empty()) return;
  std::map<int, int> utilization;  // GPU index -> %
  for (const auto& g : rt->second.readings) utilization[g.index] = g.utilization_pct;
  TimeMs now = clock_.now_ms();
  for (Job* job : jobs_on(node_id)) {
    if (job->state != JobState::kRunning || stop_requested(*job)) continue;
    int threshold = file_config_.idle_policy_for(job->spec.tenant).threshold_pct;
    IdleClock& clock = idle_clocks_[job->id];
    for (const auto& r : job->replicas) {
      if (r.node_id != node_id || r.gpus.empty()) continue;
      bool idle = std::all_of(r.gpus.begin(), r.gpus.end(), [&](const GpuShare& g) {
        auto u = utilization.find(g.index);
        return u != utilization.end() && u->second < threshold;
      });
      TimeMs& since = clock.since_by_rank[r.rank];
      since = idle ? (since ? since : now) : 0;
    }
    // Idle once every replica that holds GPUs is: since the last of them became idle.
    TimeMs since = 0;
    for (const auto& r : job->replicas) {
      if (r.gpus.empty()) continue;
      auto s = clock.since_by_rank.find(r.rank);
      if (s == clock.since_by_rank.end() || s->second == 0) {
        since = 0;
        break;
      }
      since = std::max(since, s->second);
    }
    job->idle_since = since;
    if (since == 0 && clock.warned) {
      clock.warned = false;
      spdlog::info("job {}: its GPUs are busy again; the idle warning is withdrawn", job->id);
      record_job_event(*job, now, "idle-warning-withdrawn", "its GPUs are busy again");
      job->message = "its GPUs are busy again; the idle warning is withdrawn";
      batch.jobs.push_back(*job);
      withdraw_idle_warning(*job);
    }
  }
}

void Server::withdraw_idle_warning(const Job& job, bool tell_nodes) {
  for (const auto& r : job.replicas) {
    auto rt = runtime_.find(r.node_id);
    if (rt != runtime_.end() &&
        rt->second.warnings.erase(replica_key(job.id, job.attempt, r.rank)) && tell_nodes)
      bump_node(r.node_id);
  }
}

void Server::reclaim_idle_jobs() {
  TimeMs now = clock_.now_ms();
  store::WriteBatch batch;
  for (auto it = idle_clocks_.begin(); it != idle_clocks_.end();) {
    auto job_it = jobs_.find(it->first);
    if (job_it == jobs_.end() || job_it->second.state != JobState::kRunning ||
        stop_requested(job_it->second)) {
      it = idle_clocks_.erase(it);
      continue;
    }
    Job& job = job_it->second;
    IdleClock& clock = it->second;
    ++it;
    if (job.idle_since == 0) continue;
    IdlePolicy policy = file_config_.idle_policy_for(job.spec.tenant);
    auto window = idle_window_for(policy, job.spec.idle_timeout_ms);
    // A job admitted before the maximum was lowered gets the maximum.
    int64_t window_ms = window ? *window : policy.max_timeout_ms;
    if (window_ms <= 0) continue;
    TimeMs idle_for = now - job.idle_since;
    std::string idle_text =
        fmt::format("its GPUs have been idle (below {}% utilisation) for {}", policy.threshold_pct,
                    format_duration_ms(idle_for / 1000 * 1000));
    if (idle_for >= window_ms) {
      job.reclaim_reason =
          fmt::format("its GPUs were idle (below {}% utilisation) for its idle window of {}",
                      policy.threshold_pct, format_duration_ms(window_ms));
      job.message = "stopping: " + job.reclaim_reason + "; they are handed back";
      spdlog::info("job {}: {}", job.id, job.message);
      // The notices first: an answer without them would stop the replicas plainly.
      stop_replicas(job, interrupt_cause::kIdle, job.message);
      withdraw_idle_warning(job, false);
      batch.jobs.push_back(job);
      batch.audit.push_back({now, "server", "job.idle_reclaim", job.id, job.reclaim_reason});
    } else if (idle_for >= static_cast<TimeMs>(kWarnAt * static_cast<double>(window_ms)) &&
               !clock.warned) {
      clock.warned = true;
      TimeMs stop_at = job.idle_since + window_ms;
      InterruptNotice notice{
          interrupt_cause::kIdle, stop_at + job.spec.grace_period_ms,
          fmt::format("warning: {}; unless they become busy, the job is stopped at {} (idle "
                      "window {}) and its GPUs are handed back",
                      idle_text, format_time_iso(stop_at), format_duration_ms(window_ms))};
      job.message = notice.message;
      record_job_event(job, now, "idle-warning", notice.message);
      spdlog::info("job {}: {}", job.id, notice.message);
      for (const auto& r : job.replicas) {
        if (r.state == ReplicaState::kExited) continue;
        runtime_[r.node_id].warnings[replica_key(job.id, job.attempt, r.rank)] = notice;
        bump_node(r.node_id);
      }
      batch.jobs.push_back(job);
      batch.audit.push_back({now, "server", "job.idle_warning", job.id, notice.message});
    }
  }
  if (!batch.jobs.empty()) (void)commit(batch);
}

}  // namespace gpucloud::server
