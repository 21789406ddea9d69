// What a change of tenants' quotas (a config reload, a quota window) does to running jobs: use
// above the new nominal quota is borrowed, and use above nominal plus borrowing limit is
// reclaimed at once (docs/scheduler.md, "Quota changes").
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sched/cluster_scheduler.h"

namespace gpucloud::sched {
namespace {

int64_t job_gpu_milli(const JobRequest& r) {
  return int64_t{r.replicas} * (r.gpu_milli > 0 ? r.gpu_milli : int64_t{r.gpus} * 1000);
}

std::string gpus_text(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return fmt::format("{:.3f}", milli / 1000.0);
}

}  // namespace

// Running jobs per (tenant, GPU model of their first replica), cheapest to stop first: lowest
// priority, then fewest GPUs, then the most recently started.
template <typename RunningMap>
static auto by_tenant_model(RunningMap& running) {
  using Running = typename RunningMap::mapped_type;
  std::map<std::pair<std::string, std::string>, std::vector<Running*>> groups;
  for (auto& [id, r] : running)
    if (!r.models.empty() && job_gpu_milli(r.req) > 0)
      groups[{r.req.tenant, r.models[0]}].push_back(&r);
  for (auto& [key, jobs] : groups)
    std::sort(jobs.begin(), jobs.end(), [](const Running* a, const Running* b) {
      if (a->req.priority != b->req.priority) return a->req.priority < b->req.priority;
      int64_t ga = job_gpu_milli(a->req), gb = job_gpu_milli(b->req);
      if (ga != gb) return ga < gb;
      if (a->started_at != b->started_at) return a->started_at > b->started_at;
      return a->req.job_id < b->req.job_id;
    });
  return groups;
}

void ClusterScheduler::rederive_borrowed() {
  // Which running jobs borrow changes what victim memos found (their nodes are as they were).
  victim_memo_.clear();
  victim_memo_entries_ = 0;
  for (auto& [key, jobs] : by_tenant_model(running_)) {
    int64_t excess = tenants_.over_nominal(key.first, key.second);
    for (RunningJob* r : jobs) {
      bool borrowed = excess > 0;
      if (borrowed) excess -= job_gpu_milli(r->req);
      if (borrowed == r->borrowed) continue;
      index_running(*r, false);
      r->borrowed = borrowed;
      index_running(*r, true);
      // A new possible victim for lenders (or no longer one): its nodes wake the jobs that
      // may reclaim it, in this pass and the next.
      wake_victims_.push_back({r->req.priority, r->seq});
      new_running_.push_back({r->req.priority, r->seq});
      for (const auto& [slot, rp] : r->replicas) {
        log_victim_change(slot);
        slot_changed(slot);
        victims_changed(slot);
        mark_source_dirty(slot);
      }
    }
  }
}

void ClusterScheduler::reclaim_over_limit(Plan& plan) {
  for (auto& [key, jobs] : by_tenant_model(running_)) {
    const auto& [tenant, model] = key;
    int64_t excess = tenants_.over_limit(tenant, model);
    // Jobs already being stopped free their GPUs soon.
    for (const RunningJob* r : jobs)
      if (r->preempting) excess -= job_gpu_milli(r->req);
    if (excess <= 0) continue;
    std::vector<RunningJob*> chosen;
    int64_t freed = 0;
    for (RunningJob* r : jobs) {
      if (freed >= excess) break;
      if (r->preempting) continue;
      chosen.push_back(r);
      freed += job_gpu_milli(r->req);
    }
    // Keep the ones not needed after all, the last chosen first (a large cheap job may cover
    // what small ones chosen before it would).
    for (size_t i = chosen.size(); i-- > 0;)
      if (freed - job_gpu_milli(chosen[i]->req) >= excess) {
        freed -= job_gpu_milli(chosen[i]->req);
        chosen.erase(chosen.begin() + static_cast<long>(i));
      }
    int64_t over = tenants_.over_limit(tenant, model);
    for (RunningJob* r : chosen) {
      r->preempting = true;
      victim_chosen(*r);
      for (const auto& [slot, rp] : r->replicas) mark_source_dirty(slot);
      plan.preemptions.push_back(
          {r->req.job_id,
           fmt::format("preempted: quota reclaim, tenant {} holds {} {} GPUs above its quota in "
                       "force",
                       tenant, gpus_text(over), model.empty() ? "" : model)});
    }
  }
}

}  // namespace gpucloud::sched
