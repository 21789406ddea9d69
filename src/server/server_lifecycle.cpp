// Job lifecycle: scheduling passes, the end of attempts, restart policies.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <utility>

#include "common/units.h"
#include "cost/pricing.h"
#include "server/server.h"

namespace gpucloud::server {

sched::NodeState Server::node_state(const store::NodeRecord& rec) {
  sched::NodeState n;
  n.id = rec.id;
  n.name = rec.info.name;
  n.cpu_milli = rec.info.cpu_milli;
  n.memory_mib = rec.info.memory_mib;
  n.labels = rec.info.labels;
  if (rec.price.usd_per_hour >= 0 && !rec.info.gpus.empty())
    n.price_per_gpu_hour = rec.price.usd_per_hour / static_cast<double>(rec.info.gpus.size());
  // A node whose doctor failed at its agent's start takes no jobs (docs/doctor.md).
  n.schedulable = rec.state == "ready" && !rec.cordoned && !rec.info.failed_check();
  for (const auto& g : rec.info.gpus) {
    sched::GpuState gs;
    gs.index = g.index;
    gs.uuid = g.uuid;
    gs.model = g.model;
    gs.memory_mib = g.memory_mib;
    gs.numa_node = g.numa_node;
    n.gpus.push_back(gs);
  }
  // NVLink peers are GPU indices; the mask is over positions in gpus.
  for (size_t i = 0; i < rec.info.gpus.size(); ++i)
    for (int peer : rec.info.gpus[i].nvlink_peers)
      for (size_t j = 0; j < rec.info.gpus.size() && j < 64; ++j)
        if (rec.info.gpus[j].index == peer) n.gpus[i].nvlink_mask |= uint64_t{1} << j;
  return n;
}

std::vector<sched::NodeState> Server::node_states() const {
  std::vector<sched::NodeState> out;
  out.reserve(nodes_.size());
  std::unordered_map<std::string, size_t> position;
  position.reserve(nodes_.size());
  for (const auto& [id, rec] : nodes_) {
    position[id] = out.size();
    out.push_back(node_state(rec));
  }
  for (const auto& [id, job] : jobs_) {
    for (const auto& r : job.replicas) {
      if (r.state == ReplicaState::kExited) continue;
      auto it = position.find(r.node_id);
      if (it == position.end()) continue;
      auto& n = out[it->second];
      n.cpu_used_milli += r.cpu_milli;
      n.memory_used_mib += r.memory_mib;
      for (const auto& g : r.gpus)
        for (auto& gs : n.gpus)
          if (gs.index == g.index) {
            gs.used_milli += g.milli;
            gs.used_memory_mib += g.milli >= 1000 ? gs.memory_mib : job.spec.gpu_memory_mib;
          }
    }
  }
  return out;
}

void Server::schedule_soon() {
  if (schedule_pending_) return;
  schedule_pending_ = true;
  loop_.post([this] {
    if (schedule_pending_) run_scheduler();  // unless a poll ran it already
  });
}

int Server::priority_of(const Job& job) const {
  auto value = file_config_.priority_value(job.spec.priority);
  return value ? *value : ServerFileConfig::default_priority_classes().at("normal");
}

void Server::apply_tenants() {
  std::vector<sched::TenantSpec> specs;
  for (const auto& t : file_config_.tenants) {
    sched::TenantSpec s;
    s.name = t.name;
    s.weight = t.weight;
    s.cohort = t.cohort;
    s.has_quota = !t.quota.empty() || !t.borrowing_limit.empty() || !t.quota_windows.empty();
    s.quota = quota_at(t.quota, t.quota_windows, clock_.now_ms());
    s.borrowing_limit = t.borrowing_limit;
    quota_in_force_[t.name] = s.quota;
    specs.push_back(std::move(s));
  }
  scheduler_->set_tenants(specs);
  quotas_changed_ = true;
  arm_quota_window_timer();
}

void Server::node_changed(const std::string& node_id) {
  sched_dirty_nodes_.insert(node_id);
  schedule_soon();
}

void Server::put_node(const store::NodeRecord& record) {
  auto it = nodes_.find(record.id);
  if (it != nodes_.end() && it->second.info.name != record.info.name) {
    auto old = node_ids_by_name_.find(it->second.info.name);
    if (old != node_ids_by_name_.end()) {
      old->second.erase(record.id);
      if (old->second.empty()) node_ids_by_name_.erase(old);
    }
  }
  node_ids_by_name_[record.info.name].insert(record.id);
  auto& stored = nodes_[record.id] = record;
  stored.price = cost::price_node(record.info, catalog_ ? &*catalog_ : nullptr, file_config_.cost);
  node_builds_.reset();
}

const std::vector<sched::NodeState>& Server::node_builds() {
  if (node_builds_) return *node_builds_;
  auto& builds = node_builds_.emplace();
  std::set<std::string> seen;
  for (const auto& [id, rec] : nodes_) {
    sched::NodeState n = node_state(rec);
    std::string build = fmt::format("{}|{}|", n.cpu_milli, n.memory_mib);
    for (const auto& g : n.gpus)
      fmt::format_to(std::back_inserter(build), "{}:{}:{}:{:x};", g.model, g.memory_mib,
                     g.numa_node, g.nvlink_mask);
    for (const auto& [k, v] : n.labels) build += k + "=" + v + ",";
    if (seen.insert(build).second) builds.push_back(std::move(n));
  }
  return builds;
}

void Server::sync_scheduler() {
  for (const auto& id : sched_dirty_nodes_) {
    if (auto it = nodes_.find(id); it != nodes_.end())
      scheduler_->upsert_node(node_state(it->second));
    else
      scheduler_->remove_node(id);
  }
  sched_dirty_nodes_.clear();
  if (!sched_full_sync_) {
    sched::Snapshot changed = scheduler_snapshot(false);
    sched::sync_jobs(*scheduler_, changed, scheduler_known_, sched_dirty_jobs_);
  }
  sched_dirty_jobs_.clear();
  // Every job now and then (every 10 min), as a check that no change went unwritten: after the
  // incremental sync above, such a pass should find nothing to tell the scheduler.
  TimeMs now = clock_.now_ms();
  bool check = !sched_full_sync_ && now - last_full_sync_ >= 10 * 60 * 1000;
  if (sched_full_sync_ || check) {
    // The jobs through sync_snapshot (it diffs them by fingerprint); nodes are not in the
    // snapshot and never in scheduler_known_.nodes, so it leaves the scheduler's nodes alone.
    sched::Snapshot all = scheduler_snapshot(true);
    size_t events = sched::sync_snapshot(*scheduler_, all, scheduler_known_);
    if (check && events > 0)
      spdlog::warn("scheduler: a full sync found {} job changes the incremental ones missed",
                   events);
    sched_full_sync_ = false;
    last_full_sync_ = now;
  }
}

sched::Snapshot Server::scheduler_snapshot(bool all) const {
  // Jobs only: the nodes reach the scheduler incrementally (sync_scheduler).
  sched::Snapshot snapshot;
  snapshot.now = clock_.now_ms();
  std::vector<const Job*> active;
  if (all) {
    for (const auto& [id, job] : jobs_) active.push_back(&job);
  } else {
    for (const auto& id : sched_dirty_jobs_)
      if (auto it = jobs_.find(id); it != jobs_.end()) active.push_back(&it->second);
  }
  for (const Job* job_ptr : active) {
    const Job& job = *job_ptr;
    if (is_terminal(job.state)) continue;
    auto request = sched::JobRequest::from_spec(job.id, job.spec, job.created_at, priority_of(job));
    request.attained_gpu_ms = job.attained_gpu_ms;
    if (job.replicas.empty()) {
      // A tenant over its budget's hard cap, or a job whose worst case its budget cannot pay:
      // they wait outside the scheduler.
      if (job.state == JobState::kPending && !job.cancel_requested &&
          !budget_held_.count(job.spec.tenant) && !cost_held_.count(job.id))
        snapshot.pending.push_back(std::move(request));
      continue;
    }
    sched::RunningJob running;
    running.request = std::move(request);
    running.placement.job_id = job.id;
    running.started_at = job.started_at ? job.started_at : job.created_at;
    for (const auto& r : job.replicas) {
      if (r.state == ReplicaState::kExited) continue;
      running.placement.replicas.push_back({r.rank, r.node_id, r.gpus, r.cpu_milli, r.memory_mib});
    }
    if (!running.placement.replicas.empty()) snapshot.running.push_back(std::move(running));
  }
  return snapshot;
}

void Server::run_scheduler() {
  schedule_pending_ = false;
  // Nothing to decide without a pending job: the scheduler is brought up to date (changed
  // nodes, started and ended jobs) at the next pass that has one. Polls and registrations of
  // an idle cluster thus cost no pass. The scheduler knows every pending job but those changed
  // since the last sync (a deep queue is not walked here on every event).
  // After a quota change a pass runs even so: it reclaims use above the new quotas.
  bool quotas_changed = std::exchange(quotas_changed_, false);
  if (!quotas_changed && !sched_full_sync_ && sched_dirty_jobs_.empty() &&
      scheduler_->pending_count() == 0)
    return;
  auto pass_started = std::chrono::steady_clock::now();
  sync_scheduler();
  size_t pending = scheduler_->pending_count();
  if (pending == 0 && !quotas_changed) return;
  sched::Plan plan = scheduler_->schedule(clock_.now_ms());
  sched::record_placements(plan, scheduler_known_);
  store::WriteBatch batch;
  std::set<std::string> touched_nodes;
  std::vector<std::pair<std::string, std::string>> placed_keys;  // node, key
  for (const auto& placement : plan.placements) {
    auto it = jobs_.find(placement.job_id);
    if (it == jobs_.end()) continue;
    Job& job = it->second;
    std::set<std::string> names;
    for (const auto& rp : placement.replicas) {
      ReplicaAssignment a;
      a.rank = rp.rank;
      a.node_id = rp.node_id;
      a.node_name = nodes_.at(rp.node_id).info.name;
      a.gpus = rp.gpus;
      a.cpu_milli = rp.cpu_milli;
      a.memory_mib = rp.memory_mib;
      names.insert(a.node_name);
      touched_nodes.insert(rp.node_id);
      runtime_[rp.node_id].jobs.insert(job.id);
      placed_keys.push_back({rp.node_id, replica_key(job.id, job.attempt, rp.rank)});
      job.replicas.push_back(std::move(a));
    }
    price_replicas(job);
    std::string where;
    for (const auto& n : names) where += (where.empty() ? "" : ", ") + n;
    job.pending_reason = "starting on " + where;
    std::string gpus;
    for (const auto& r : job.replicas)
      for (const auto& g : r.gpus)
        gpus += fmt::format("{}{}:{}{}", gpus.empty() ? "" : " ", r.node_name, g.index,
                            g.milli < 1000 ? fmt::format("({}m)", g.milli) : "");
    record_job_event(job, clock_.now_ms(), "placed",
                     fmt::format("attempt {} on {}{}", job.attempt, where,
                                 gpus.empty() ? "" : "; GPUs " + gpus));
    batch.jobs.push_back(job);
    metrics_->placement(job.spec.tenant);
  }
  for (const auto& p : plan.pending)
    if (auto it = jobs_.find(p.job_id); it != jobs_.end()) it->second.pending_reason = p.reason;
  preempt(plan.preemptions, batch);
  if (!commit(batch).ok()) return;
  metrics_->scheduling_pass(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - pass_started).count(),
      plan.placements.size(), plan.pending.size(), plan.preemptions.size());
  spdlog::debug("scheduler: placed {} of {} pending jobs, preempting {}", plan.placements.size(),
                pending, plan.preemptions.size());
  for (const auto& node_id : touched_nodes) bump_node(node_id);
  for (const auto& [node_id, key] : placed_keys)
    runtime_[node_id].placed_at[key] = runtime_[node_id].version;
}

void Server::preempt(const std::vector<sched::Preemption>& preemptions, store::WriteBatch& batch) {
  for (const auto& p : preemptions) {
    auto it = jobs_.find(p.job_id);
    if (it == jobs_.end()) continue;
    Job& job = it->second;
    if (job.replicas.empty() || stop_requested(job)) continue;
    job.interrupt_reason = p.reason;
    job.message = fmt::format("{}; stopping (grace period {})", p.reason,
                              format_duration_ms(job.spec.grace_period_ms));
    stop_replicas(job, interrupt_cause::kPreemption, p.reason);
    batch.jobs.push_back(job);
    batch.audit.push_back({clock_.now_ms(), "scheduler", "job.preempt", job.id, p.reason});
    metrics_->preemption(job.spec.tenant);
    spdlog::info("job {} {}", job.id, p.reason);
  }
}

void Server::stop_replicas(Job& job, const std::string& cause, const std::string& why,
                           TimeMs deadline_ms) {
  std::set<std::string> nodes;
  for (const auto& r : job.replicas)
    if (r.state != ReplicaState::kExited) nodes.insert(r.node_id);
  if (!cause.empty() && !nodes.empty()) metrics_->interruption(cause);
  InterruptNotice notice{
      cause, deadline_ms > 0 ? deadline_ms : clock_.now_ms() + job.spec.grace_period_ms, why};
  if (!nodes.empty())
    record_job_event(
        job, clock_.now_ms(), cause.empty() ? "stop" : "interrupt",
        fmt::format("{}{}SIGTERM now, SIGKILL at {}", cause.empty() ? "" : cause + ": ",
                    why.empty() ? "" : why + "; ", format_time_iso(notice.deadline_ms)));
  for (const auto& node_id : nodes) {
    auto& rt = runtime_[node_id];
    for (const auto& r : job.replicas)
      if (r.node_id == node_id && r.state != ReplicaState::kExited && !cause.empty())
        rt.interrupts.emplace(replica_key(job.id, job.attempt, r.rank), notice);
    bump_node(node_id);  // answers a held poll: the notices go with it
    for (const auto& r : job.replicas)
      if (r.node_id == node_id && r.state != ReplicaState::kExited)
        rt.removed_at.emplace(replica_key(job.id, job.attempt, r.rank), rt.version);
  }
}

void Server::record_attempt(Job& job, const std::string& end, store::WriteBatch& batch) {
  if (job.replicas.empty()) return;
  AttemptRecord a;
  a.attempt = job.attempt;
  a.started_at = job.started_at;
  a.ended_at = clock_.now_ms();
  a.end = end;
  int64_t milli = 0;
  for (const auto& r : job.replicas) {
    a.nodes.push_back(r.node_name);
    if (a.cause.empty()) a.cause = r.interrupt_cause;
    if (r.checkpoint_at > a.checkpoint_at) {
      a.checkpoint_at = r.checkpoint_at;
      a.checkpoint_bytes = r.checkpoint_bytes;
    }
    for (const auto& g : r.gpus) milli += g.milli;
  }
  a.checkpoint_committed = a.started_at > 0 && a.checkpoint_at >= a.started_at;
  if (!a.cause.empty() && a.started_at > 0) {
    TimeMs since = a.checkpoint_committed ? a.checkpoint_at : a.started_at;
    a.gpu_seconds_lost =
        static_cast<double>(std::max<TimeMs>(0, a.ended_at - since)) / 1000 * milli / 1000;
  }
  write_ledger(job, a, batch);
  job.attempts.push_back(std::move(a));
  if (job.attempts.size() > kMaxAttemptRecords)
    job.attempts.erase(job.attempts.begin(),
                       job.attempts.begin() + (job.attempts.size() - kMaxAttemptRecords));
}

void Server::settle_attempt(Job& job, store::WriteBatch& batch) {
  if (job.replicas.empty() || is_terminal(job.state)) return;  // already settled
  bool all_exited =
      std::all_of(job.replicas.begin(), job.replicas.end(),
                  [](const ReplicaAssignment& r) { return r.state == ReplicaState::kExited; });
  if (!all_exited) {
    // One replica failed: the rest of the gang is stopped; the attempt ends when they have.
    if (std::any_of(job.replicas.begin(), job.replicas.end(), replica_failed)) stop_replicas(job);
    batch.jobs.push_back(job);
    schedule_soon();  // an exited replica freed its resources
    return;
  }
  const ReplicaAssignment* lost = nullptr;
  const ReplicaAssignment* unstarted = nullptr;  // lost, but provably before its command ran
  const ReplicaAssignment* failed = nullptr;
  for (const auto& r : job.replicas) {
    if (r.lost && r.end_reason == "not_started") {
      if (!unstarted) unstarted = &r;
      continue;
    }
    if (r.lost && !lost) lost = &r;
    // Overrunning max_runtime fails the attempt even when the process exits 0 on SIGTERM.
    if (!r.lost && (r.exit_code.value_or(0) != 0 || r.end_reason == "max_runtime") && !failed)
      failed = &r;
  }
  const int restarts_used = job.attempt - 1 - job.interruptions;
  const auto policy = job.spec.restart.policy;
  const bool restarts_left = restarts_used < job.spec.restart.max;
  auto requeue = [&](const std::string& why) {
    record_attempt(job, why, batch);
    if (job.started_at > 0) {
      int64_t milli = 0;  // GPU milli the attempt held
      for (const auto& r : job.replicas)
        for (const auto& g : r.gpus) milli += g.milli;
      job.attained_gpu_ms += std::max<TimeMs>(0, clock_.now_ms() - job.started_at) * milli / 1000;
    }
    forget_attempt(job);
    job.message =
        fmt::format("attempt {} {}; re-queued as attempt {}", job.attempt, why, job.attempt + 1);
    job.attempt += 1;
    job.replicas.clear();
    job.idle_since = 0;
    job.state = JobState::kPending;
    job.started_at = 0;
    job.exit_code.reset();
    job.pending_reason = "re-queued after " + why;
    record_job_event(job, clock_.now_ms(), "requeued", job.message);
    batch.jobs.push_back(job);
    batch.audit.push_back({clock_.now_ms(), "server", "job.requeue", job.id, job.message});
    schedule_soon();
  };
  int first_code = job.replicas.empty() ? 0 : job.replicas.front().exit_code.value_or(0);
  if (!job.reclaim_reason.empty()) {
    end_job(job, JobState::kIdleReclaimed,
            job.replicas.empty() ? std::nullopt : job.replicas.front().exit_code,
            job.reclaim_reason, batch);
  } else if (!job.cost_limit_reason.empty()) {
    end_job(job, JobState::kFailed,
            job.replicas.empty() ? std::nullopt : job.replicas.front().exit_code,
            job.cost_limit_reason, batch);
  } else if (!job.cancel_requested && !job.interrupt_reason.empty()) {
    std::string why = job.interrupt_reason;
    job.interrupt_reason.clear();
    job.interruptions += 1;
    requeue("was interrupted: " + why);
  } else if (job.cancel_requested) {
    end_job(job, JobState::kCancelled,
            job.replicas.empty() ? std::nullopt : job.replicas.front().exit_code, "cancelled",
            batch);
  } else if (lost) {
    std::string why =
        fmt::format("was lost ({}, rank {}: {})", lost->node_name, lost->rank, lost->message);
    if (policy != RestartPolicy::kNever && restarts_left)
      requeue(why);
    else
      end_job(job, JobState::kLost, std::nullopt, fmt::format("attempt {} {}", job.attempt, why),
              batch);
  } else if (unstarted) {
    // Its command never ran: like an interruption, this uses no restart, whatever the policy.
    job.interruptions += 1;
    requeue(fmt::format("did not start ({}, rank {}: {})", unstarted->node_name, unstarted->rank,
                        unstarted->message));
  } else if (failed) {
    bool start_failure = failed->end_reason == "failed_to_start";
    bool over_time = failed->end_reason == "max_runtime";
    std::string why = fmt::format("failed with exit code {} (rank {} on {}){}",
                                  failed->exit_code.value_or(0), failed->rank, failed->node_name,
                                  failed->message.empty() ? "" : ": " + failed->message);
    if ((policy == RestartPolicy::kOnFailure || policy == RestartPolicy::kAlways) &&
        restarts_left && !start_failure && !over_time)
      requeue(why);
    else
      end_job(job, JobState::kFailed, failed->exit_code.value_or(0), why, batch);
  } else if (policy == RestartPolicy::kAlways && restarts_left) {
    requeue("succeeded (restart policy always)");
  } else {
    end_job(job, JobState::kSucceeded, first_code, "", batch);
  }
}

void Server::forget_attempt(const Job& job) {
  idle_clocks_.erase(job.id);
  for (const auto& r : job.replicas) {
    std::string key = replica_key(job.id, job.attempt, r.rank);
    logs_.wake(key);  // followers see the end
    logs_.forget(key);
    if (auto it = runtime_.find(r.node_id); it != runtime_.end()) {
      it->second.placed_at.erase(key);
      it->second.removed_at.erase(key);
      it->second.interrupts.erase(key);
      it->second.warnings.erase(key);
    }
  }
}

void Server::end_job(Job& job, JobState state, std::optional<int> exit_code, std::string message,
                     store::WriteBatch& batch) {
  job.state = state;
  job.exit_code = exit_code;
  if (!message.empty()) job.message = std::move(message);
  job.finished_at = clock_.now_ms();
  job.pending_reason.clear();
  job.idle_since = 0;
  record_job_event(job, job.finished_at, "ended",
                   std::string(to_string(state)) +
                       (exit_code ? fmt::format(" (exit code {})", *exit_code) : "") +
                       (job.message.empty() ? "" : ": " + job.message));
  record_attempt(
      job,
      std::string(to_string(state)) + (exit_code ? fmt::format(" (exit code {})", *exit_code) : ""),
      batch);
  batch.jobs.push_back(job);
  batch.audit.push_back({job.finished_at, "server", "job.end", job.id,
                         std::string(to_string(state)) + " " + job.message});
  forget_attempt(job);
  finished_.push_back(job.id);
  metrics_->job_finished(job.spec.tenant, std::string(to_string(state)));
  schedule_soon();  // its resources are free for the jobs that wait
  spdlog::info("job {} {}{}", job.id, to_string(state),
               exit_code ? fmt::format(" (exit code {})", *exit_code) : "");
}

}  // namespace gpucloud::server
