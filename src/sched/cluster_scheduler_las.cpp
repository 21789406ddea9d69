// Queue policy las (least attained service, in the spirit of Tiresias): a job's level is the
// number of thresholds its service (GPU time received, over all attempts) has crossed. Levels
// are steps within the caller's priority: the scheduler works with the priority
// base × levels + (levels − 1 − level), so a job of a lower level goes first, and may preempt
// running jobs of higher levels, exactly as a job of a higher priority class would; quotas,
// fair share between tenants, backfill and wake-ups work unchanged. A running job whose service
// crosses a threshold drops a level at the next pass (next_timed_decision() says when). A job
// pending for las_starvation_ms goes back to level 0, and its service so far stops counting
// for levels.
#include <fmt/format.h>

#include "sched/cluster_scheduler.h"

namespace gpucloud::sched {

namespace {

// GPU milli the job holds while it runs (all replicas).
int64_t running_milli(const JobRequest& r) {
  return int64_t{r.replicas} * (r.gpu_milli > 0 ? r.gpu_milli : int64_t{r.gpus} * 1000);
}

}  // namespace

int ClusterScheduler::las_level_of(int64_t service_gpu_ms) const {
  int level = 0;
  while (level < static_cast<int>(las_thresholds_.size()) &&
         service_gpu_ms >= las_thresholds_[level])
    ++level;
  return level;
}

int ClusterScheduler::las_priority(int base_priority, int level) const {
  const int levels = static_cast<int>(las_thresholds_.size()) + 1;
  return base_priority * levels + (levels - 1 - level);
}

std::string ClusterScheduler::priority_text(int base_priority, int level) const {
  if (!las_) return fmt::format("priority {}", base_priority);
  return fmt::format("priority {}, service level {} of {}", base_priority, level + 1,
                     las_thresholds_.size() + 1);
}

void ClusterScheduler::las_enqueue(PendingJob& job) {
  auto discount = las_discount_.find(job.req.job_id);
  int64_t service =
      job.req.attained_gpu_ms - (discount == las_discount_.end() ? 0 : discount->second);
  job.las_level = las_level_of(service);
  job.req.priority = las_priority(job.base_priority, job.las_level);
}

void ClusterScheduler::las_track_running(RunningJob& r) {
  if (!las_ || r.las_level >= static_cast<int>(las_thresholds_.size())) return;
  const int64_t milli = running_milli(r.req);
  if (milli <= 0) return;  // a job without GPUs receives no GPU service
  auto discount = las_discount_.find(r.req.job_id);
  int64_t service =
      r.req.attained_gpu_ms - (discount == las_discount_.end() ? 0 : discount->second);
  int64_t to_go = std::max<int64_t>(0, las_thresholds_[r.las_level] - service);
  // GPU-ms at `milli` GPU milli per ms: to_go × 1000 / milli ms, rounded up. Saturates for
  // thresholds no run reaches.
  int64_t ms = to_go > std::numeric_limits<int64_t>::max() / 1000
                   ? kNever
                   : (to_go * 1000 + milli - 1) / milli;
  r.las_crossing = ms > kNever - r.started_at ? kNever : r.started_at + ms;
  if (r.las_crossing != kNever) las_crossings_.insert({r.las_crossing, r.req.job_id});
}

void ClusterScheduler::las_untrack_running(const RunningJob& r) {
  if (r.las_crossing != kNever) las_crossings_.erase({r.las_crossing, r.req.job_id});
}

void ClusterScheduler::las_step(TimeMs now) {
  // Jobs new to the queue: when the starvation guard would promote them.
  if (settings_.las_starvation_ms > 0)
    for (auto& [seq, job] : undecided_)
      if (job->las_level > 0 && job->starve_at == kNever) {
        job->starve_at = now + settings_.las_starvation_ms;
        las_starving_.insert({job->starve_at, seq});
      }
  while (!las_crossings_.empty() && las_crossings_.begin()->first <= now) {
    std::string id = las_crossings_.begin()->second;
    las_crossings_.erase(las_crossings_.begin());
    auto it = running_.find(id);
    if (it == running_.end()) continue;
    RunningJob& r = it->second;
    r.las_crossing = kNever;
    auto discount = las_discount_.find(id);
    int64_t service = r.req.attained_gpu_ms -
                      (discount == las_discount_.end() ? 0 : discount->second) +
                      (now - r.started_at) * running_milli(r.req) / 1000;
    int level = std::max(r.las_level + 1, las_level_of(service));
    level = std::min(level, static_cast<int>(las_thresholds_.size()));
    // Its working priority drops: it is a possible victim of jobs of higher levels from now on
    // (a new running job for the victim indexes and wake-ups).
    index_running(r, false);
    r.las_level = level;
    r.req.priority = las_priority(r.base_priority, level);
    index_running(r, true);
    for (const auto& [slot, rp] : r.replicas) {
      log_victim_change(slot);
      slot_changed(slot);
      victims_changed(slot);
      mark_source_dirty(slot);
    }
    // It is a possible victim for more jobs than before: what victim candidates could free
    // grows, so their memos of requests that found nothing are void.
    for (auto& [key, candidates] : victim_slots_) candidates.nothing_freeable.clear();
    new_running_.push_back({r.req.priority, r.seq});
    placed_last_pass_ = true;
    las_track_running(r);
  }
  while (!las_starving_.empty() && las_starving_.begin()->first <= now) {
    uint64_t seq = las_starving_.begin()->second;
    las_starving_.erase(las_starving_.begin());
    auto it = pending_by_seq_.find(seq);
    if (it == pending_by_seq_.end()) continue;
    PendingJob& job = *it->second;
    job.starve_at = kNever;
    las_discount_[job.req.job_id] = job.req.attained_gpu_ms;
    unindex_waiting(job);
    job.las_level = 0;
    job.req.priority = las_priority(job.base_priority, 0);
    index_waiting(job);
    undecided_.emplace(seq, &job);  // decided in this pass, like a new job
  }
}

std::optional<TimeMs> ClusterScheduler::next_timed_decision() const {
  TimeMs next = kNever;
  if (!las_crossings_.empty()) next = las_crossings_.begin()->first;
  if (!las_starving_.empty()) next = std::min(next, las_starving_.begin()->first);
  if (next == kNever) return std::nullopt;
  return next;
}

}  // namespace gpucloud::sched
