// EASY backfill: the earliest time the first blocked job can start, from the running jobs'
// declared max_runtime, and the nodes it will start on.
#include <fmt/format.h>

#include <boost/container/small_vector.hpp>
#include <map>

#include "sched/cluster_scheduler.h"
#include "sched/fit.h"

namespace gpucloud::sched {
namespace {

// How many replicas of `req` (up to `limit`) fit on the node as it is; `mask`: which of its
// GPUs match the request (as gpus_fit). A second replica is fitted on a copy of what fitting
// reads, made in `scratch` (reused: no allocation once it has held a node).
int replicas_fitting(const JobRequest& req, const NodeState& node, int limit, uint64_t mask,
                     NodeState& scratch) {
  if (limit <= 0 || !cpu_memory_fit(req, node) || !gpus_fit(req, node, mask)) return 0;
  if (limit == 1) return 1;
  scratch.gpus = node.gpus;
  scratch.cpu_milli = node.cpu_milli;
  scratch.cpu_used_milli = node.cpu_used_milli;
  scratch.memory_mib = node.memory_mib;
  scratch.memory_used_mib = node.memory_used_mib;
  int n = 0;
  while (n < limit && cpu_memory_fit(req, scratch)) {
    auto choice = choose_gpus(req, scratch, mask);
    if (!choice) break;
    apply_choice(req, *choice, scratch);
    ++n;
  }
  return n;
}

}  // namespace

std::optional<ClusterScheduler::Reservation> ClusterScheduler::reserve(const PendingJob& job,
                                                                       TimeMs now) {
  // Without running jobs that declared when they end, no start can be promised (and a job
  // that fits now needs no reservation either).
  if (ends_count_ == 0) return std::nullopt;
  // A job of the same request found no start since capacity last changed: neither does this.
  auto memo = std::make_pair(job.shape, job.req.replicas);
  if (failed_reserves_.count(memo)) return std::nullopt;
  // Nor while it could not fit even were every job with a declared end gone, and nothing
  // else was freed since (a job without one ended, or a node changed).
  if (never_reservable_at_ != unending_freed_) never_reservable_.clear();
  never_reservable_at_ = unending_freed_;
  if (auto never = never_reservable_.find(memo);
      never != never_reservable_.end() && never->second == unending_freed_)
    return std::nullopt;
  bool never = false;
  auto result = find_reservation(job, now, &never);
  if (!result) failed_reserves_.insert(memo);
  if (never) never_reservable_[memo] = unending_freed_;
  return result;
}

std::optional<ClusterScheduler::Reservation> ClusterScheduler::find_reservation(
    const PendingJob& job, TimeMs now, bool* never) {
  JobRequest one = job.req;
  one.replicas = 1;
  const int want = job.req.replicas;
  // Replicas that fit now, per node, and in all (nodes statically able to run the job only).
  std::map<int, int> fit_now;
  int total = 0;
  // The classes one replica fits now are those of the shape's ranking (its memory aside, which
  // replicas_fitting checks); if all that fits now is too little, every one of them counts.
  for (const auto& [score, id] : refresh_ranking(job.shape).ranked) {
    const NodeClass& c = classes_.get(id);
    if (c.members.empty() || !could_fit(shapes_[job.shape], c)) continue;
    int k = replicas_fitting(one, c.state, want, gpu_match_mask(shapes_[job.shape], c),
                             reservation_scratch_);
    if (k == 0) continue;
    for (int slot : c.members) {
      fit_now[slot] = k;
      total += k;
      if (total >= want) break;
    }
    if (total >= want) break;
  }
  // Release running jobs in the order they are expected to end, until the job fits.
  std::map<int, NodeState> scratch;
  TimeMs start = kNever;
  if (total < want) {
    // The ends filed under the groups the job could run on, and the gangs', merged in end order.
    boost::container::small_vector<std::pair<Ends::const_iterator, Ends::const_iterator>, 8> walks;
    for (int g = 0; g < static_cast<int>(ends_by_group_.size()); ++g)
      if (!ends_by_group_[g].empty() && could_fit(shapes_[job.shape], g))
        walks.emplace_back(ends_by_group_[g].begin(), ends_by_group_[g].end());
    if (!spanning_ends_.empty()) walks.emplace_back(spanning_ends_.begin(), spanning_ends_.end());
    while (true) {
      auto next = walks.end();
      for (auto w = walks.begin(); w != walks.end(); ++w)
        if (w->first != w->second && (next == walks.end() || w->first->first < next->first->first))
          next = w;
      if (next == walks.end()) break;
      const auto& [end_id, running] = *next->first++;
      // (Most jobs have one replica: the job is read only where its node could run this one; a
      // node is in a class while it is present.)
      if (const int slot = running.only_slot;
          slot >= 0 && (classes_.class_of(slot) < 0 || !slot_could_fit(shapes_[job.shape], slot)))
        continue;
      const RunningJob& r = *running.job;
      const TimeMs end = end_id.first;
      for (const auto& [slot, rp] : r.replicas) {
        if (!nodes_[slot].present || !slot_could_fit(shapes_[job.shape], slot)) continue;
        auto [it, fresh] = scratch.try_emplace(slot);
        if (fresh) {  // what fitting reads (labels stay out: copying them would allocate)
          const NodeState& node = nodes_[slot].state;
          it->second.gpus = node.gpus;
          it->second.cpu_milli = node.cpu_milli;
          it->second.cpu_used_milli = node.cpu_used_milli;
          it->second.memory_mib = node.memory_mib;
          it->second.memory_used_mib = node.memory_used_mib;
        }
        apply_replica_use(it->second, r.req, rp, -1);
        int k = replicas_fitting(one, it->second, want,
                                 gpu_match_mask(shapes_[job.shape], classes_.group_of_slot(slot)),
                                 reservation_scratch_);
        total += k - fit_now[slot];
        fit_now[slot] = k;
      }
      if (total >= want) {
        start = std::max(end, now);
        break;
      }
    }
    if (total < want) {  // not even then: nothing to reserve
      *never = true;
      return std::nullopt;
    }
  } else {
    return std::nullopt;  // it fits now; it was kept out by quota or other reservations
  }
  Reservation r;
  r.job_id = job.req.job_id;
  r.start = start;
  int covered = 0;
  std::string first;
  for (const auto& [slot, k] : fit_now) {
    if (k == 0) continue;
    r.slots.push_back(slot);
    if (first.empty()) first = nodes_[slot].state.name;
    covered += k;
    if (covered >= want) break;
  }
  r.text =
      fmt::format("reserved start in {} on {}{}", format_wait(start - now), first,
                  r.slots.size() > 1 ? fmt::format(" and {} more nodes", r.slots.size() - 1) : "");
  return r;
}

}  // namespace gpucloud::sched
