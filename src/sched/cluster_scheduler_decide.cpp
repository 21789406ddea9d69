// One decision: place the job, or preempt for it, or reserve its start, and say why it waits.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "common/units.h"
#include "sched/cluster_scheduler.h"
#include "sched/fit.h"

namespace gpucloud::sched {
namespace {

std::string short_id(const std::string& id) {
  return id.size() > 12 ? id.substr(0, 12) + "…" : id;
}

std::string id_list(const std::vector<std::string>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < 3; ++i) out += (i ? ", " : "") + short_id(ids[i]);
  if (ids.size() > 3) out += fmt::format(" and {} more", ids.size() - 3);
  return out;
}

}  // namespace

std::string format_wait(TimeMs ms) {
  if (ms < 90'000) return fmt::format("~{} s", std::max<TimeMs>(ms / 1000, 1));
  if (ms < 90 * 60'000) return fmt::format("~{} min", ms / 60'000);
  return fmt::format("~{:.1f} h", ms / 3'600'000.0);
}

void ClusterScheduler::decide(PendingJob& job, TimeMs now, Plan& plan, bool full_pass) {
  (void)full_pass;
  job.decided_pass = pass_;
  ++stats_.decisions;
  // Victims chosen earlier that still run: wait for them (they hold what this job needs).
  std::vector<std::string> still_running;
  for (const auto& v : job.victims)
    if (running_.count(v)) still_running.push_back(v);
  job.victims = still_running;

  Filter f;
  f.job = &job;
  f.now = now;
  f.ends_before_reservation = ends_before_reservation(job.req, now);
  // Nothing was freed since a job with the same key was found waiting in this epoch at this
  // time, and capacity, quota and blocked nodes only shrink within it: this one waits for the
  // same reason (unless it has its own preemption in progress).
  WaitKey wait_key{job.shape, job.req.replicas, job.req.priority, f.ends_before_reservation,
                   job.tenant};
  if (job.victims.empty() && !nominated_slots_.count(job.req.job_id))
    if (auto it = waits_.find(wait_key);
        it != waits_.end() && it->second.now == now &&
        it->second.reservation == (reservation_ ? reservation_->job_id : std::string())) {
      set_reason(job, it->second.reason, plan);
      return;
    }
  std::string resource_why;
  if (auto cached = failed_shapes_.find(job.shape);
      cached != failed_shapes_.end() && job.req.replicas == 1) {
    resource_why = cached->second;
  } else {
    std::optional<Placement> placement;
    {
      StatTimer timer(stats_.place_ns);
      placement = place(job, now, f);
    }
    if (placement) {
      plan.placements.push_back(*placement);
      commit_placement(job, std::move(*placement), now);
      return;
    }
  }

  if (!job.victims.empty()) {
    set_reason(job,
               fmt::format("waiting for {} preempted job{} to stop ({})", job.victims.size(),
                           job.victims.size() == 1 ? "" : "s", id_list(job.victims)),
               plan);
    return;
  }
  bool quota_blocked = f.skipped_quota && resource_why.empty();
  if (quota_blocked && job.req.replicas > 1) {
    // Said of the whole gang, not of the replicas it had tried when the quota ran out.
    int64_t per_replica = job.req.gpu_milli > 0 ? job.req.gpu_milli : int64_t{job.req.gpus} * 1000;
    tenants_.allows(job.req.tenant, f.quota_model, per_replica * job.req.replicas, &f.quota_why);
  }
  if (resource_why.empty() && !quota_blocked) {
    auto [memo, fresh] = resource_reasons_.try_emplace({job.shape, job.req.replicas});
    if (fresh) {
      StatTimer timer(stats_.reason_ns);
      memo->second = resource_reason(job);
    }
    resource_why = memo->second;
    if (!f.skipped_reserved && job.req.replicas == 1) failed_shapes_[job.shape] = resource_why;
  }

  // Preemption: only when it lets the job start (choose_victims checks the fit). A job held
  // back by quota its tenant lent within the cohort reclaims it from the borrowers.
  auto preemption_key = std::make_tuple(job.shape, job.req.replicas, job.req.priority, job.tenant);
  // A single replica at least as large as one that found no victims finds none either.
  std::optional<PreemptionBucket> bucket;
  std::array<int64_t, 4> size{};
  bool dominated = false;
  if (settings_.preemption && job.req.replicas == 1 && !quota_blocked) {
    bucket.emplace(job.req.tenant, job.req.priority, job.req.preemptible(),
                   fit_signature(shapes_[job.shape]), job.req.gpu_model);
    size = {job.req.gpus == 0       ? 0
            : job.req.gpu_milli > 0 ? job.req.gpu_milli
                                    : int64_t{job.req.gpus} * 1000,
            job.req.cpu_milli, job.req.memory_mib, job.req.gpu_memory_mib};
    if (auto it = failed_preemption_sizes_.find(*bucket); it != failed_preemption_sizes_.end())
      for (const auto& failed : it->second)
        if (failed[0] <= size[0] && failed[1] <= size[1] && failed[2] <= size[2] &&
            failed[3] <= size[3])
          dominated = true;
  }
  if (settings_.preemption && !dominated && !failed_preemptions_.count(preemption_key)) {
    bool fits_freely = false;
    std::optional<std::vector<std::string>> victims;
    std::string reclaimed_model;
    std::set<int> chosen_nodes;  // the option's nodes, with or without victims
    {
      StatTimer timer(stats_.preemption_ns);
      ++stats_.preemption_searches;
      victims = quota_blocked
                    ? choose_reclaim_victims(job, &reclaimed_model)
                    : choose_victims(job, f.ends_before_reservation, &chosen_nodes, &fits_freely);
    }
    if (victims) {
      std::set<int> where = chosen_nodes;
      for (const auto& v : *victims) {
        RunningJob& r = running_.at(v);
        r.preempting = true;
        victim_chosen(r);
        for (const auto& [slot, rp] : r.replicas) {
          where.insert(slot);
          mark_source_dirty(slot);
        }
        std::string why =
            fmt::format("preempted for job {} ({}{})", short_id(job.req.job_id),
                        priority_text(job.base_priority, job.las_level),
                        r.borrowed && r.req.tenant != job.req.tenant
                            ? fmt::format(", reclaiming quota lent to tenant {}", r.req.tenant)
                            : "");
        plan.preemptions.push_back({v, std::move(why)});
      }
      nominate(job.req.job_id, job.req.priority, where);
      if (!job.had_victims) {
        // Decided one by one from now on (waits_now never holds for it while it preempts).
        job.had_victims = true;
        if (job.signature >= 0) {
          unindex_waiting(job);
          index_waiting(job);
        }
      }
      // Victims that only a lender may preempt (borrowers it outranks by neither priority nor
      // spot): it reclaims their quota.
      if (!quota_blocked)
        for (const auto& v : *victims)
          if (const RunningJob& r = running_.at(v); reclaims_only(job, r)) {
            reclaimed_model = r.models[0];
            break;
          }
      if (!reclaimed_model.empty()) hold_reclaim(job, reclaimed_model);
      job.victims = *victims;
      set_reason(job,
                 fmt::format("preempting {} job{} to start ({}); {}", victims->size(),
                             victims->size() == 1 ? "" : "s", id_list(*victims),
                             quota_blocked ? f.quota_why : resource_why),
                 plan);
      return;
    }
    failed_preemptions_.insert(preemption_key);
    // Where it fits without preempting (a node held for another job), a larger one might need
    // victims there: such a search proves nothing about larger requests.
    if (bucket && !fits_freely) failed_preemption_sizes_[*bucket].push_back(size);
  }

  if (quota_blocked) {
    set_wait(job, wait_key, f.quota_why, now, plan);
    return;
  }
  // EASY backfill: the first job that cannot start gets the earliest start it can have.
  if (settings_.backfill && !reservation_) {
    std::optional<Reservation> r;
    {
      StatTimer timer(stats_.reservation_ns);
      ++stats_.reservation_searches;
      r = reserve(job, now);
    }
    if (r) {
      set_reservation(std::move(*r));
      set_reason(job, resource_why + "; " + reservation_->text, plan);
      return;
    }
  }
  if (f.skipped_reserved && reservation_ && reservation_->job_id != job.req.job_id) {
    std::string when = reservation_->start == kNever
                           ? "start not yet known"
                           : "reserved start in " + format_wait(reservation_->start - now);
    set_wait(job, wait_key,
             fmt::format("waiting behind job {} ({}); jobs whose max_runtime ends before that "
                         "may start first",
                         short_id(reservation_->job_id), when),
             now, plan);
    return;
  }
  set_wait(job, wait_key, resource_why, now, plan);
}

bool ClusterScheduler::ends_before_reservation(const JobRequest& req, TimeMs now) const {
  return reservation_ && req.max_runtime_ms > 0 && reservation_->start != kNever &&
         now + req.max_runtime_ms <= reservation_->start;
}

void ClusterScheduler::wait_for_quota(PendingJob& job, int class_id, TimeMs now, Plan& plan) {
  // What decide() does for it: place() finds the quota refusing the class's model first; the
  // victim search finds nothing, and is not tried again for its key in this pass.
  job.decided_pass = pass_;
  ++stats_.decisions;
  const JobRequest& r = job.req;
  if (settings_.preemption)
    failed_preemptions_.insert({job.shape, r.replicas, r.priority, job.tenant});
  const std::string& why = quota_why(job, classes_.get(class_id).gpu_model, replica_gpu_milli(r));
  set_wait(job, {job.shape, r.replicas, r.priority, ends_before_reservation(r, now), job.tenant},
           why, now, plan);
}

void ClusterScheduler::set_wait(PendingJob& job, const WaitKey& key, const std::string& reason,
                                TimeMs now, Plan& plan) {
  Wait& wait = waits_[key];  // (assigned in place: its strings keep their room)
  wait.reason = reason;
  if (reservation_)
    wait.reservation = reservation_->job_id;
  else
    wait.reservation.clear();
  wait.now = now;
  // Every job of its class like it (ending before the reservation or not) waits as it does.
  if (job.wait_class >= 0 && job.victims.empty())
    waiting_.mark_waiting(job.tenant, job.signature, job.wait_class, std::get<3>(key));
  set_reason(job, reason, plan);
}

std::pair<int64_t, int> ClusterScheduler::most_cpu_not_fitting(int group, int64_t cpu_milli,
                                                               int64_t memory_mib) {
  // The first in the group's order by CPUs free that it does not fit: the first with too few
  // CPUs (a lookup), unless one before it has too little memory (read only when some class of
  // the group has).
  const auto& order = classes_.group_by_free_cpu(group);
  auto few = order.lower_bound({-cpu_milli + 1, std::numeric_limits<int>::min()});
  if (classes_.least_free_memory(group) < memory_mib)
    for (auto it = order.begin(); it != few; ++it)
      if (classes_.summary(it->second).memory_free_mib < memory_mib)
        return {-it->first, it->second};
  return few != order.end() ? std::pair{-few->first, few->second} : std::pair<int64_t, int>{0, -1};
}

std::string ClusterScheduler::resource_reason(const PendingJob& job) {
  // Static groups first (a group that cannot run the job is skipped whole), then, per group,
  // its classes most free first: the largest block and the most free CPUs are found without
  // visiting every class. Ties go to the lowest class id.
  const JobRequest& req = job.req;
  Shape& shape = shapes_[job.shape];
  std::string why_not;
  int matching = 0, largest_block = -1, largest_class = -1;
  std::vector<int> groups;  // that could run it
  for (int g = 0; g < static_cast<int>(classes_.static_groups()); ++g) {
    if (classes_.group_members(g) == 0) continue;
    const NodeClass& example = classes_.group_example(g);
    if (!could_fit(shape, example)) {
      if (why_not.empty()) node_could_fit(req, example.state, &why_not);
      continue;
    }
    groups.push_back(g);
    matching += classes_.group_members(g);
  }
  auto take_block = [&](int block, int class_id) {
    if (block > largest_block || (block == largest_block && class_id < largest_class))
      largest_block = block, largest_class = class_id;
  };
  for (int g : groups) {
    bool all_match = shape.all_match[g];
    if (req.gpu_milli > 0) {
      // Most milli free first: the first class a share fits on decides the group.
      int found = -1;
      for (const auto& [neg_milli, id] : classes_.group_by_free_milli(g)) {
        if (all_match && -neg_milli < req.gpu_milli) break;
        if (gpus_fit(req, classes_.get(id).state, shape.match_mask[g]) && (found < 0 || id < found))
          found = id;
        if (found >= 0 && all_match) break;
      }
      if (found >= 0)
        take_block(1, found);
      else
        take_block(0, classes_.group_by_free_milli(g).begin()->second);
    } else if (all_match) {
      const auto& top = *classes_.group_by_free_gpus(g).begin();
      take_block(-top.first, top.second);
    } else {
      for (const auto& [neg_free, id] : classes_.group_by_free_gpus(g))
        take_block(free_matching_gpus(classes_.get(id).state, shape.match_mask[g], req), id);
    }
  }
  std::string largest_node =
      largest_class >= 0 ? nodes_[*classes_.get(largest_class).members.begin()].state.name : "";
  bool gpus_enough = req.gpus == 0 || largest_block >= (req.gpu_milli > 0 ? 1 : req.gpus);
  // Only a job whose GPUs would fit somewhere is told about CPUs and memory: the class with the
  // most CPUs free among those the request does not fit (ties to the lowest id).
  int cpu_class = -1;
  int64_t cpu_class_free = -1;
  if (gpus_enough)
    for (int g : groups)
      if (auto [cpu, id] = most_cpu_not_fitting(g, req.cpu_milli, req.memory_mib);
          id >= 0 && (cpu > cpu_class_free || (cpu == cpu_class_free && id < cpu_class)))
        cpu_class = id, cpu_class_free = cpu;
  // A gang is told how many nodes a replica fits on now, counting up to replicas - 1; whole GPUs
  // of a group where all match are counted from the classes most free first, so the walk stops
  // at the first with too few.
  int placeable = 0;
  if (req.replicas > 1)
    for (int g : groups) {
      bool whole_counted = req.gpus > 0 && req.gpu_milli == 0 && shape.all_match[g];
      for (const auto& [neg_free, id] : classes_.group_by_free_gpus(g)) {
        if (placeable >= req.replicas - 1) break;
        const ClassSummary& c = classes_.summary(id);
        if (whole_counted && c.free_gpus < req.gpus) break;  // fewer from here on
        if (req.cpu_milli > c.cpu_free_milli || req.memory_mib > c.memory_free_mib) continue;
        bool fits =
            req.gpus == 0 ||
            (req.gpu_milli > 0
                 ? c.max_free_milli >= req.gpu_milli &&
                       gpus_fit(req, classes_.get(id).state, shape.match_mask[g])
                 : (whole_counted ? c.free_gpus
                                  : free_matching_gpus(classes_.get(id).state, shape.match_mask[g],
                                                       req)) >= req.gpus);
        if (fits) placeable += classes_.member_count(id);
      }
    }
  std::string gang = req.replicas > 1
                         ? fmt::format("gang of {} replicas, {} placeable now; ", req.replicas,
                                       std::min(placeable, req.replicas - 1))
                         : "";
  if (matching == 0)
    return fmt::format("{}no schedulable node can run it ({})", gang,
                       why_not.empty() ? "no nodes registered" : why_not);
  if (!gpus_enough) {
    if (req.gpu_milli > 0)
      return fmt::format("{}needs {} on one GPU; no matching GPU has {} milli free", gang,
                         describe_gpus(req), req.gpu_milli);
    return fmt::format("{}needs {} on one node; largest free block is {} ({})", gang,
                       describe_gpus(req), largest_block, largest_node);
  }
  if (cpu_class >= 0) {
    const NodeClass& c = classes_.get(cpu_class);
    return fmt::format(
        "{}needs {:g} CPUs and {} memory; most free on a matching node is {:g} CPUs, {} ({})", gang,
        req.cpu_milli / 1000.0, format_size_mib(req.memory_mib),
        (c.state.cpu_milli - c.state.cpu_used_milli) / 1000.0,
        format_size_mib(c.state.memory_mib - c.state.memory_used_mib),
        nodes_[*c.members.begin()].state.name);
  }
  return fmt::format("{}waiting for resources", gang);
}

}  // namespace gpucloud::sched
