#include "sim/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <random>
#include <set>
#include <tuple>
#include <unordered_map>

#include "model/gpu_model.h"
#include "sched/scheduler.h"
#include "sim/frag_tracker.h"

namespace gpucloud::sim {

namespace {

sched::JobRequest to_request(const TraceJob& j, int64_t attained_gpu_ms) {
  sched::JobRequest r;
  r.job_id = j.id;
  r.tenant = j.tenant;
  r.replicas = j.replicas;
  r.gpus = j.gpus;
  r.gpu_milli = j.gpu_milli;
  r.gpu_model = j.gpu_model;
  r.cpu_milli = j.cpu_milli;
  r.memory_mib = j.memory_mib;
  r.capacity_class = j.capacity_class;
  r.priority = j.priority;
  r.created_at = j.submit_ms;
  r.max_runtime_ms = j.max_runtime_ms;
  r.expected_runtime_ms = j.expected_runtime_ms;
  r.attained_gpu_ms = attained_gpu_ms;
  return r;
}

/// The shape of a request, to check each distinct shape against the cluster once.
using ShapeKey = std::tuple<int, int, int, std::string, int64_t, int64_t, int>;

ShapeKey shape_key(const TraceJob& j) {
  return {j.replicas,
          j.gpus,
          j.gpu_milli,
          j.gpu_model,
          j.cpu_milli,
          j.memory_mib,
          static_cast<int>(j.capacity_class)};
}

/// Where the job's problem is: the cell the reason is about (gpu_model when no node has such a
/// model, cpu_milli, memory_mib, capacity_class), else its gpus cell.
std::string never_fit_message(const std::string& file, const TraceJob& j,
                              const std::vector<sched::NodeState>& nodes,
                              const std::string& reason) {
  if (j.gpus > 0 && !j.gpu_model.empty()) {
    bool any = false;
    for (const sched::NodeState& n : nodes)
      for (const sched::GpuState& g : n.gpus)
        any = any || gpu_model_matches(j.gpu_model, g.model, g.memory_mib);
    if (!any)
      return fmt::format("{}job {}: gpu_model '{}': no node has this GPU model",
                         job_where(file, j, TraceJob::kModelCell), j.id, j.gpu_model);
  }
  TraceJob::Cell cell = TraceJob::kGpusCell;
  if (reason.starts_with("cpus:"))
    cell = TraceJob::kCpuCell;
  else if (reason.starts_with("memory:"))
    cell = TraceJob::kMemoryCell;
  else if (reason.find("capacity class") != std::string::npos)
    cell = TraceJob::kClassCell;
  return fmt::format("{}job {}: {}", job_where(file, j, cell), j.id, reason);
}

/// The replay's mutable state.
class Replayer {
 public:
  Replayer(const SimCluster& cluster, const std::vector<TraceJob>& jobs, sched::Scheduler& s,
           const ReplayOptions& options, ReplayResult& out)
      : cluster_(cluster),
        jobs_(jobs),
        sched_(s),
        options_(options),
        out_(out),
        frag_(cluster, jobs),
        state_(jobs.size()) {
    for (size_t i = 0; i < jobs.size(); ++i) index_[jobs[i].id] = i;
    if (options.spot_interrupt_rate_per_hour > 0) {
      spot_rng_.seed(options.seed);
      for (size_t n = 0; n < cluster.nodes.size(); ++n)
        if (auto it = cluster.nodes[n].labels.find("capacity-class");
            it != cluster.nodes[n].labels.end() && it->second == "spot")
          spot_.emplace(next_spot_interrupt(0), n, false);
    }
  }

  /// Hands the tenants' quotas in force at trace time t to the scheduler, records the ones that
  /// changed, and finds the next change.
  void apply_quotas(int64_t t) {
    std::vector<sched::TenantSpec> specs;
    quota_next_.reset();
    for (const ReplayTenant& tenant : options_.tenants) {
      sched::TenantSpec spec = tenant.spec;
      if (!tenant.windows.empty()) spec.has_quota = true;
      spec.quota = quota_at(tenant.spec.quota, tenant.windows, options_.epoch_ms + t);
      bool first = !quota_in_force_.count(spec.name);
      auto& was = quota_in_force_[spec.name];
      if (!tenant.windows.empty() && (first || spec.quota != was))
        out_.quota_changes.push_back({t, spec.name, spec.quota});
      was = spec.quota;
      if (auto next = next_quota_change(tenant.windows, options_.epoch_ms + t))
        quota_next_ = std::min(quota_next_.value_or(INT64_MAX), *next - options_.epoch_ms);
      specs.push_back(std::move(spec));
    }
    sched_.set_tenants(specs);
  }

  void run(const std::vector<size_t>& order) {
    size_t next = 0;
    // Jobs wait for a spot node's replacement when every node that fits them was taken.
    while (next < order.size() || !ends_.empty() ||
           (nodes_down_ > 0 && sched_.pending_count() > 0)) {
      int64_t t = INT64_MAX;
      if (next < order.size()) t = jobs_[order[next]].submit_ms;
      if (!ends_.empty()) t = std::min(t, std::get<0>(ends_.top()));
      if (!spot_.empty()) t = std::min(t, std::get<0>(spot_.top()));
      if (quota_next_) t = std::min(t, *quota_next_);
      // A decision due without an event (las) matters only while jobs wait.
      if (sched_.pending_count() > 0)
        if (auto due = sched_.next_timed_decision(); due && *due > now_) t = std::min(t, *due);
      bool interrupted = options_.stop_requested != nullptr && options_.stop_requested->load();
      if (interrupted || t > options_.until_ms) {
        stop_early(interrupted ? now_ : options_.until_ms, interrupted ? "interrupted" : "--until",
                   order.size() - next);
        break;
      }
      now_ = t;
      while (!ends_.empty() && std::get<0>(ends_.top()) <= t) {
        auto [end, job, attempt] = ends_.top();
        ends_.pop();
        if (attempt != state_[job].attempt) continue;  // preempted meanwhile
        stop(job, t);
        out_.jobs[job].end_ms = t;
        ++progress_.done;
      }
      while (!spot_.empty() && std::get<0>(spot_.top()) <= t) {
        auto [at, node, back] = spot_.top();
        spot_.pop();
        spot_event(node, back, t);
      }
      bool quotas_changed = quota_next_ && *quota_next_ <= t;
      if (quotas_changed) apply_quotas(t);
      while (next < order.size() && jobs_[order[next]].submit_ms <= t) {
        submit(order[next++], t);
        ++progress_.submitted;
      }
      // After a quota change even without waiting jobs: use above the new quotas is reclaimed.
      if (sched_.pending_count() > 0 || quotas_changed) schedule(t);
      record(t);
      report_progress(t, false);
    }
    report_progress(now_, true);
  }

 private:
  struct JobState {
    int attempt = 0;
    int64_t pending_since = 0;
    int64_t started_at = 0;
    int64_t restart_ms = 0;       // of the current attempt: time spent restarting before work
    int64_t saved_ms = 0;         // work kept by checkpoints over earlier attempts
    int64_t attained_gpu_ms = 0;  // GPU time received over earlier attempts
    sched::Placement placement;
  };

  void submit(size_t job, int64_t t) {
    state_[job].pending_since = t;
    (void)sched_.submit(to_request(jobs_[job], state_[job].attained_gpu_ms));
  }

  void schedule(int64_t t) {
    for (int round = 0; round < 16; ++round) {
      sched::Plan plan = sched_.schedule(t);
      ++out_.schedule_calls;
      for (sched::Placement& p : plan.placements) start(std::move(p), t);
      for (const sched::Preemption& p : plan.preemptions) {
        auto it = index_.find(p.job_id);
        if (it == index_.end()) continue;
        ++out_.preemptions;
        interrupt(it->second, t);
      }
      if (plan.preemptions.empty()) break;
    }
  }

  /// The running job is interrupted at t: it keeps the work of its last checkpoint, the rest
  /// (and its restart time) is lost, and it goes back to the queue.
  void interrupt(size_t job, int64_t t) {
    JobState& s = state_[job];
    int64_t worked = std::max<int64_t>(0, t - s.started_at - s.restart_ms);
    int64_t kept = options_.checkpoint_interval_ms > 0
                       ? worked / options_.checkpoint_interval_ms * options_.checkpoint_interval_ms
                       : 0;
    s.saved_ms += kept;
    int64_t milli = int64_t{jobs_[job].replicas} * jobs_[job].gpu_milli_per_replica();
    out_.gpu_hours_lost += static_cast<double>(t - s.started_at - kept) / 3'600'000.0 *
                           static_cast<double>(milli) / 1000.0;
    s.attained_gpu_ms += (t - s.started_at) * milli / 1000;
    stop(job, t);
    ++s.attempt;  // its scheduled end no longer counts
    submit(job, t);
  }

  /// A spot node is taken (its jobs are interrupted, the scheduler loses it) or its
  /// replacement joins (and its next interruption is drawn).
  void spot_event(size_t node, bool back, int64_t t) {
    const sched::NodeState& n = cluster_.nodes[node];
    if (back) {
      --nodes_down_;
      sched_.upsert_node(n);
      spot_.emplace(next_spot_interrupt(t), node, false);
      return;
    }
    ++out_.spot_interruptions;
    ++nodes_down_;
    std::vector<size_t> victims;
    if (auto it = jobs_on_node_.find(n.id); it != jobs_on_node_.end())
      victims.assign(it->second.begin(), it->second.end());
    sched_.remove_node(n.id);
    for (size_t job : victims) {
      ++out_.jobs_spot_interrupted;
      interrupt(job, t);
    }
    spot_.emplace(t + options_.spot_downtime_ms, node, true);
  }

  int64_t next_spot_interrupt(int64_t from) {
    double u = (static_cast<double>(spot_rng_() >> 11) + 1) * 0x1.0p-53;  // (0, 1]
    double hours = -std::log(u) / options_.spot_interrupt_rate_per_hour;
    return from + static_cast<int64_t>(std::min(hours * 3'600'000.0, 1e15));
  }

  void start(sched::Placement p, int64_t t) {
    auto it = index_.find(p.job_id);
    if (it == index_.end()) return;
    size_t job = it->second;
    const TraceJob& j = jobs_[job];
    JobState& s = state_[job];
    JobOutcome& o = out_.jobs[job];
    o.waited_ms += t - s.pending_since;
    if (o.first_start_ms < 0) o.first_start_ms = t;
    ++o.attempts;
    s.restart_ms = o.attempts > 1 ? options_.restart_cost_ms : 0;
    int64_t run = s.restart_ms + std::max<int64_t>(0, j.duration_ms - s.saved_ms);
    o.stopped_at_max_runtime = j.max_runtime_ms > 0 && run > j.max_runtime_ms;
    if (o.stopped_at_max_runtime) run = j.max_runtime_ms;
    for (const sched::ReplicaPlacement& r : p.replicas) {
      frag_.apply(r, +1);
      if (!spot_.empty()) jobs_on_node_[r.node_id].insert(job);
    }
    s.started_at = t;
    s.placement = std::move(p);
    ends_.emplace(t + run, job, s.attempt);
  }

  /// The job leaves the cluster at t (finished, stopped or preempted): its GPU-hours count.
  void stop(size_t job, int64_t t) {
    JobState& s = state_[job];
    sched_.finish(jobs_[job].id);
    charge(job, t);
    for (const sched::ReplicaPlacement& r : s.placement.replicas) {
      frag_.apply(r, -1);
      if (auto it = jobs_on_node_.find(r.node_id); it != jobs_on_node_.end()) it->second.erase(job);
    }
    s.placement = {};
  }

  /// Adds the GPU-hours of the job's current run, from its start to t.
  void charge(size_t job, int64_t t) {
    const JobState& s = state_[job];
    double hours = static_cast<double>(t - s.started_at) / 3'600'000.0;
    auto& by_model = out_.gpu_hours[jobs_[job].tenant];
    for (const sched::ReplicaPlacement& r : s.placement.replicas)
      for (const GpuShare& g : r.gpus)
        by_model[frag_.gpu_model(r.node_id, g.index)] += hours * g.milli / 1000.0;
  }

  /// Ends the replay at `at` with jobs left: the running ones are charged up to then, the
  /// timeline reaches `at`, and the result says what was left.
  void stop_early(int64_t at, const char* reason, size_t not_arrived) {
    for (size_t job = 0; job < state_.size(); ++job)
      if (!state_[job].placement.replicas.empty()) charge(job, at);
    if (!out_.timeline.empty() && out_.timeline.back().t_ms < at) record(at);
    now_ = std::max(now_, at);
    out_.stopped =
        ReplayStop{at, reason, static_cast<int64_t>(sched_.running_count()),
                   static_cast<int64_t>(sched_.pending_count()), static_cast<int64_t>(not_arrived)};
  }

  void report_progress(int64_t t, bool final) {
    if (!options_.progress) return;
    progress_.sim_ms = t;
    progress_.queued = static_cast<int64_t>(sched_.pending_count());
    progress_.running = static_cast<int64_t>(sched_.running_count());
    progress_.final = final;
    options_.progress(progress_);
  }

  void record(int64_t t) {
    TimePoint p{t, frag_.used_gpu_milli(), static_cast<int64_t>(sched_.pending_count()),
                static_cast<int64_t>(sched_.running_count()), frag_.total_frag_milli()};
    if (!out_.timeline.empty() && out_.timeline.back().t_ms == t)
      out_.timeline.back() = p;
    else
      out_.timeline.push_back(p);
  }

  const SimCluster& cluster_;
  const std::vector<TraceJob>& jobs_;
  sched::Scheduler& sched_;
  const ReplayOptions& options_;
  ReplayResult& out_;
  ReplayProgress progress_;
  int64_t now_ = 0;  // virtual time of the last instant processed
  FragTracker frag_;
  std::vector<JobState> state_;
  std::unordered_map<std::string, size_t> index_;
  using End = std::tuple<int64_t, size_t, int>;  // end time, job, attempt
  std::priority_queue<End, std::vector<End>, std::greater<>> ends_;
  using SpotEvent = std::tuple<int64_t, size_t, bool>;  // time, node, the replacement joins
  std::priority_queue<SpotEvent, std::vector<SpotEvent>, std::greater<>> spot_;
  std::mt19937_64 spot_rng_;
  std::unordered_map<std::string, std::set<size_t>> jobs_on_node_;  // with spot interruptions
  int64_t nodes_down_ = 0;             // spot nodes taken and not yet replaced
  std::optional<int64_t> quota_next_;  // trace time of the next quota window change
  std::map<std::string, std::map<std::string, int>> quota_in_force_;
};

}  // namespace

Result<ReplayResult> run_replay(const SimCluster& cluster, const Trace& trace,
                                const ReplayOptions& options) {
  sched::PolicySettings settings;
  settings.policy = options.policy;
  settings.seed = options.seed;
  settings.queue_policy = options.queue_policy;
  settings.las_thresholds_gpu_s = options.las_thresholds_gpu_s;
  settings.las_starvation_ms = options.las_starvation_ms;
  auto scheduler = sched::create_scheduler(settings);
  if (!scheduler.ok()) return scheduler.error();
  ReplayResult out;
  out.policy = options.policy;
  out.nodes = cluster.nodes.size();
  out.gpus = cluster.gpus();

  // Jobs that can never fit are reported with where they were read, not replayed.
  std::map<ShapeKey, std::string> checked;  // shape -> "" (fits) or the reason
  std::vector<TraceJob> jobs;
  jobs.reserve(trace.jobs.size());
  for (const TraceJob& j : trace.jobs) {
    auto [it, fresh] = checked.try_emplace(shape_key(j));
    if (fresh) {
      Status s = sched::check_satisfiable(to_request(j, 0), cluster.nodes);
      it->second = s.ok() ? "" : s.error().message;
    }
    if (!it->second.empty()) {
      out.never_fit.push_back({j.id, never_fit_message(trace.file, j, cluster.nodes, it->second)});
      continue;
    }
    jobs.push_back(j);
    JobOutcome o;
    o.id = j.id;
    o.tenant = j.tenant;
    o.submit_ms = j.submit_ms;
    out.jobs.push_back(std::move(o));
  }

  for (const sched::NodeState& n : cluster.nodes) (*scheduler)->upsert_node(n);
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return jobs[a].submit_ms < jobs[b].submit_ms; });
  if (!order.empty()) {
    out.first_submit_ms = jobs[order.front()].submit_ms;
    out.last_submit_ms = jobs[order.back()].submit_ms;
  }
  Replayer replayer(cluster, jobs, **scheduler, options, out);
  replayer.apply_quotas(order.empty() ? 0 : jobs[order.front()].submit_ms);
  replayer.run(order);
  return out;
}

}  // namespace gpucloud::sim
