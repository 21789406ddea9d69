// sync_snapshot(): turns the difference between two snapshots of the caller's state into
// scheduler events.
#include <fmt/format.h>

#include <set>

#include "sched/scheduler.h"

namespace gpucloud::sched {
namespace {

std::string fingerprint(const NodeState& n) {
  std::string f = fmt::format("{}|{}|{}|{}|{}|{}|", n.name, n.cpu_milli, n.memory_mib,
                              n.schedulable ? 1 : 0, n.gpus.size(), n.price_per_gpu_hour);
  for (const auto& g : n.gpus)
    fmt::format_to(std::back_inserter(f), "{}:{}:{}:{}:{}:{:x};", g.index, g.uuid, g.model,
                   g.memory_mib, g.numa_node, g.nvlink_mask);
  for (const auto& [k, v] : n.labels) f += k + "=" + v + ",";
  return f;
}

std::string fingerprint(const JobRequest& r) {
  std::string f = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|", r.tenant, r.replicas,
                              r.gpus, r.gpu_milli, r.gpu_memory_mib, r.gpu_model, r.cpu_milli,
                              r.memory_mib, static_cast<int>(r.capacity_class), r.priority,
                              r.created_at, r.max_runtime_ms, r.max_price);
  if (r.price_cap_from_cost) f += "c|";
  for (const auto& [k, v] : r.node_selector) f += k + "=" + v + ",";
  return f;
}

std::string fingerprint(const Placement& p) {
  std::string f = "@";
  for (const auto& rp : p.replicas) {
    fmt::format_to(std::back_inserter(f), "{}:{}:{}:{}:", rp.rank, rp.node_id, rp.cpu_milli,
                   rp.memory_mib);
    for (const auto& g : rp.gpus) fmt::format_to(std::back_inserter(f), "{}/{},", g.index, g.milli);
    f += ";";
  }
  return f;
}

// The jobs' part of sync_snapshot. With `only`, just those ids are compared (the snapshot
// holds their current state); without, every job the scheduler knows or the snapshot holds.
size_t sync_job_states(Scheduler& scheduler, const Snapshot& snapshot, SyncState& known,
                       const std::set<std::string>* only) {
  size_t events = 0;
  std::map<std::string, std::pair<std::string, const RunningJob*>> running;
  for (const auto& r : snapshot.running)
    running[r.request.job_id] = {fingerprint(r.request) + fingerprint(r.placement), &r};
  std::map<std::string, std::pair<std::string, const JobRequest*>> pending;
  for (const auto& p : snapshot.pending) pending[p.job_id] = {fingerprint(p), &p};

  // Ended or changed jobs first, so that their resources and ids are free again.
  auto drop_changed = [&](std::map<std::string, std::string>& reported, const auto& current) {
    auto changed = [&](const std::string& id, const std::string& fp) {
      auto now = current.find(id);
      return now == current.end() || now->second.first != fp;
    };
    if (only) {
      for (const auto& id : *only)
        if (auto it = reported.find(id); it != reported.end() && changed(id, it->second)) {
          scheduler.finish(id);
          reported.erase(it);
          ++events;
        }
      return;
    }
    for (auto it = reported.begin(); it != reported.end();) {
      if (!changed(it->first, it->second)) {
        ++it;
        continue;
      }
      scheduler.finish(it->first);
      it = reported.erase(it);
      ++events;
    }
  };
  drop_changed(known.running, running);
  drop_changed(known.pending, pending);
  // Events the scheduler accepted are counted (a refused one is tried again at the next sync
  // that covers the job).
  for (const auto& [id, entry] : running) {
    if (known.running.count(id) || (only && !only->count(id))) continue;
    const RunningJob& r = *entry.second;
    if (scheduler.start(r.request, r.placement, r.started_at).ok()) {
      known.running[id] = entry.first;
      ++events;
    }
  }
  for (const auto& [id, entry] : pending) {
    if (known.pending.count(id) || known.running.count(id) || (only && !only->count(id))) continue;
    if (scheduler.submit(*entry.second).ok()) {
      known.pending[id] = entry.first;
      ++events;
    }
  }
  return events;
}

}  // namespace

size_t sync_snapshot(Scheduler& scheduler, const Snapshot& snapshot, SyncState& known) {
  size_t events = 0;
  std::set<std::string> seen;
  for (const auto& node : snapshot.nodes) {
    seen.insert(node.id);
    std::string fp = fingerprint(node);
    auto [it, fresh] = known.nodes.try_emplace(node.id, fp);
    if (fresh || it->second != fp) {
      it->second = fp;
      scheduler.upsert_node(node);
      ++events;
    }
  }
  for (auto it = known.nodes.begin(); it != known.nodes.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    scheduler.remove_node(it->first);
    it = known.nodes.erase(it);
    ++events;
  }
  return events + sync_job_states(scheduler, snapshot, known, nullptr);
}

size_t sync_jobs(Scheduler& scheduler, const Snapshot& snapshot, SyncState& known,
                 const std::set<std::string>& job_ids) {
  return sync_job_states(scheduler, snapshot, known, &job_ids);
}

void record_placements(const Plan& plan, SyncState& known) {
  for (const auto& p : plan.placements) {
    auto it = known.pending.find(p.job_id);
    if (it == known.pending.end()) continue;
    known.running[p.job_id] = it->second + fingerprint(p);
    known.pending.erase(it);
  }
}

}  // namespace gpucloud::sched
