// bench_scheduler: how fast sched::Scheduler decides, on a synthetic cluster. Single-threaded;
// the workload comes from a fixed seed, so every run builds the same cluster and queue and (the
// scheduler being deterministic) gets the same plans.
//
// The headline (scheduler_events.h; `--events-only` runs only it): on 10,000 nodes × 8 GPUs,
// full, with 1,000 / 10,000 / 100,000 jobs waiting, the p50/p99 time from one event (a job
// finishing, a node joining, a job submitted) to its plan; and the same without wake-ups (every
// pass after a release decides every job) at the two smallest queues, in the same run. Between
// events the queue is settled (victims stop, pass after pass until one places and preempts
// nothing; "unsettled" counts the events after which 20 passes did not), so an event's pass
// does its own work only. The slowest events are listed with what their pass did (PassStats:
// decisions, wake-up queries, placement, preemption and reservation searches, reasons);
// `--event-log FILE` writes that for every event, one JSON line each (docs/scheduler.md,
// "Measuring").
//
// Then the older figures (issue 3, "Performance"), described below.
//
// The cluster: N nodes × 8 GPUs; 40 % A100-80GB (half NVSwitch full mesh, half NVLink pairs,
// 128 CPUs, 1 TiB), 30 % H100-80GB (full mesh, 192 CPUs, 2 TiB), 30 % L4-24GB (no NVLink,
// 96 CPUs, 1 TiB); GPUs 0-3 on NUMA node 0, 4-7 on NUMA node 1; labels zone=z0..z9 and
// capacity-class (20 % spot, the rest on-demand).
//
// The queue: J jobs, 60 % one whole GPU, 20 % GPU shares (100/250/500 milli), 15 % 2-8 GPUs on
// one node, 5 % gangs of 2-8 replicas × 8 GPUs; CPUs and memory proportional to the GPUs; 8
// tenants with weights, five with quotas in two cohorts; priorities 0/100/1000; some spot and
// on-demand-only jobs, some zone selectors and GPU model lists; log-normal durations, declared
// as max_runtime on 85 % of the jobs. With that mix a job asks for ~2.9 GPUs on average, so the
// default 100,000 jobs ask for ~3.6× the 80,000 GPUs of 10,000 nodes (the "about 1.2×"
// cannot hold with this mix at 10 jobs per node: even its smallest sizes, 100-milli shares,
// 2 GPUs and gangs of 2 × 8, give 2.15×); the figure is printed as demand_ratio.
//
// The run ("schedules it to the end"): submit every job, schedule(now); then repeatedly advance
// virtual time (to the next job's end, at least one tick of --tick-ms later), report the jobs
// whose duration has passed as finished, and schedule again, until every job has been placed
// (or nothing runs and the last pass did nothing: reported as stalled). Preemption victims are
// reported finished and submitted again right after the plan (they restart from the beginning);
// their preemptors start in the next pass.
//
// What is measured (std::chrono::steady_clock around the scheduler's calls only):
//  - decisions_per_sec: decisions / seconds spent in schedule() in the run's passes. A decision
//    is a pending job placed, or told why it waits, in one pass. Every pass of the run follows
//    a finish (jobs ended, or preemption victims stopped), so it is a full pass: the scheduler
//    decides every pending job; a pass's decisions are therefore pending_count() before the
//    pass (placements + jobs left waiting). Plan.pending lists only reasons that changed, so it
//    cannot be counted instead.
//  - placements_per_sec: placements / the same seconds (unambiguous; a preempted job placed
//    again counts again).
//  - p50/p99_decision_us, p99_gang_us, p99_preempt_us: the latency of deciding one newly
//    submitted job. After the initial fill (cluster full, long queue) and a settling pass (a
//    pass after placements decides every pending job again: the queue's high-priority jobs
//    choose their victims there), jobs held back from the queue are submitted one at a time
//    and each schedule() is timed; nothing finishes between them (the victims chosen so far
//    are stopped after the last probe), so such a pass decides only the new job. Single-node jobs
//    (whole GPUs and shares, priority 0/100) give p50/p99; gangs give p99_gang_us; priority-1000
//    whole-node (8 GPU) jobs of a tenant without quota, which can only start by preempting, give
//    p99_preempt_us. How many of each were placed, preempted for, or told to wait is printed, with
//    the single-node probes' latency per outcome (p99_single_by_outcome_us): a single-node job that
//    can only start by choosing victims makes a preemption decision, which the targets
//    bound by 10 ms, not 1 ms.
//  - the same for policy first-fit in the same run (--no-baseline skips it); with --scaling,
//    the time per decision of the policy at 1,000, 10,000 and 50,000 nodes, 10 jobs per node:
//    over the whole run (us_per_decision) and in the initial fill (fill_us_per_decision, the
//    figure that compares across sizes: every run makes that pass).
//
// --time-limit S (default 75) bounds each run: a pass cannot be cut short, so no pass starts
// that would end more than S seconds after the initial fill started (judged by the previous
// pass's time per decision); a run not finished by then stops, its figures cover the passes
// made, and the output says so ("completed": false). The probes get their own budget of
// max(20, S/4) seconds, a third per kind. The initial fill is one schedule() call over every
// job; a scaling size whose fill is projected to take far longer than S is skipped, with the
// projection printed.
//
// Usage: bench_scheduler [--nodes N] [--jobs J] [--policy NAME] [--quick] [--scaling]
//                        [--no-baseline] [--tick-ms MS] [--time-limit S] [--seed S]
// --quick: 200 nodes, 2,000 jobs, --time-limit 20 (and 100/200/400 nodes for --scaling).
// The last line of the output is one JSON object.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sched/scheduler.h"
#include "scheduler_events.h"
#include "scheduler_workload.h"

using namespace gpucloud;
using namespace gpucloud::bench;
using sched::JobRequest;
using SteadyClock = std::chrono::steady_clock;

namespace {

struct ProbeStats {
  std::vector<double> us;
  // The same latencies split by what the decision was: the job placed, victims chosen for it
  // (a preemption), or told to wait.
  std::vector<double> placed_us, preempting_us, waiting_us;
  int placed = 0, preempting = 0, waiting = 0;
};

struct RunResult {
  std::string policy;
  int nodes = 0, jobs = 0;
  double setup_s = 0;   // upsert_node for every node and set_tenants
  double submit_s = 0;  // submit() of the queue, including resubmitted victims
  double finish_s = 0;  // finish() of ended jobs and of victims
  double sched_s = 0;   // schedule() in the run's passes (not the probes)
  double wall_s = 0;
  uint64_t decisions = 0, placements = 0, preemptions = 0, passes = 0;
  std::vector<double> pass_ms;
  std::vector<size_t> pass_pending;  // pending_count() before each pass
  double first_pass_s = 0;           // the initial fill: every job pending
  size_t first_pass_pending = 0;
  uint64_t placed_and_preempted = 0;  // jobs a plan both placed and chose as victims
  uint64_t first_pass_placements = 0, first_pass_preemptions = 0;
  size_t max_pending = 0;
  ProbeStats single, gang, preempt;
  bool completed = false;
  std::string stop_reason;
  size_t left_pending = 0;
  TimeMs virtual_end = 0;
  std::vector<std::string> stuck_reasons;
};

struct Options {
  int nodes = 10000;
  int jobs = 100000;
  std::string policy = "default";
  bool quick = false;
  bool scaling = false;
  bool baseline = true;  // also run first-fit
  TimeMs tick_ms = 60'000;
  bool events = true;        // the headline: event-to-plan latency
  bool events_only = false;  // ... and nothing else
  bool reference = true;     // ... also without wake-ups, at the two smallest queues
  int events_per_kind = 300;
  std::vector<size_t> event_pending = {1000, 10000, 100000};
  std::string event_log;     // a file for one JSON line per timed event ("": none)
  double time_limit_s = 75;  // no pass starts later in a run (probes have their own budget)
  uint64_t seed = 42;
};

RunResult run(const std::string& policy, const Cluster& cluster, const Workload& w,
              const Options& opt, bool probes) {
  RunResult res;
  res.policy = policy;
  res.nodes = static_cast<int>(cluster.nodes.size());
  res.jobs = static_cast<int>(w.jobs.size());
  auto wall = SteadyClock::now();

  sched::PolicySettings settings;
  settings.policy = policy;
  settings.seed = opt.seed;
  auto created = sched::create_scheduler(settings);
  if (!created.ok()) {
    fmt::print(stderr, "bench_scheduler: {}\n", created.error().message);
    std::exit(2);
  }
  sched::Scheduler& s = **created;

  auto t = SteadyClock::now();
  s.set_tenants(make_tenants(cluster));
  for (const auto& node : cluster.nodes) s.upsert_node(node);
  res.setup_s = seconds_since(t);
  fmt::print(stderr, "[{}] {} nodes added in {:.2f} s\n", policy, res.nodes, res.setup_s);

  std::vector<char> held(w.jobs.size(), 0);
  if (probes) {
    for (int i : w.probe_single) held[i] = 1;
    for (int i : w.probe_gang) held[i] = 1;
    for (int i : w.probe_preempt) held[i] = 1;
  }
  std::vector<char> submitted(w.jobs.size(), 0);
  auto submit = [&](int i) {
    submitted[i] = 1;
    auto t0 = SteadyClock::now();
    auto st = s.submit(w.jobs[i].req);
    res.submit_s += seconds_since(t0);
    if (!st.ok()) {
      fmt::print(stderr, "bench_scheduler: submit {}: {}\n", w.jobs[i].req.job_id,
                 st.error().message);
      std::exit(2);
    }
  };
  for (int i = 0; i < res.jobs; ++i)
    if (!held[i]) submit(i);

  std::set<std::pair<TimeMs, int>> ends;  // real end, job index
  std::vector<TimeMs> end_of(w.jobs.size(), 0);
  std::map<int, std::string> reasons;  // last reason per pending job (for a stalled run)
  TimeMs now = kStart;

  auto apply = [&](const sched::Plan& plan, std::vector<std::string>* victims) {
    for (const auto& p : plan.placements) {
      int i = job_index(p.job_id);
      end_of[i] = now + w.jobs[i].duration;
      ends.insert({end_of[i], i});
      reasons.erase(i);
    }
    for (const auto& p : plan.pending) reasons[job_index(p.job_id)] = p.reason;
    for (const auto& p : plan.preemptions) victims->push_back(p.job_id);
  };
  // Victims stop (finish) and return to the queue (submit).
  auto stop_victims = [&](std::vector<std::string>& victims) {
    for (const auto& id : victims) {
      int i = job_index(id);
      ends.erase({end_of[i], i});
      auto t0 = SteadyClock::now();
      s.finish(id);
      res.finish_s += seconds_since(t0);
      submit(i);
    }
    res.preemptions += victims.size();
    victims.clear();
  };
  // A pass of the run: every pending job is decided (see the top of this file). Victims stop
  // at once (or, for the initial fill and the settling pass, after the probes, whose passes
  // must decide only the new job: a finish makes the next pass a full one); their preemptors
  // start in the next pass.
  // Returns whether the plan did anything.
  std::vector<std::string> probe_victims;
  auto pass = [&](bool stop_now) {
    size_t pending = s.pending_count();
    res.max_pending = std::max(res.max_pending, pending);
    auto t0 = SteadyClock::now();
    sched::Plan plan = s.schedule(now);
    double dt = seconds_since(t0);
    res.sched_s += dt;
    res.pass_ms.push_back(dt * 1e3);
    res.pass_pending.push_back(pending);
    ++res.passes;
    res.decisions += pending;
    res.placements += plan.placements.size();
    std::set<std::string> placed;
    for (const auto& p : plan.placements) placed.insert(p.job_id);
    for (const auto& p : plan.preemptions) res.placed_and_preempted += placed.count(p.job_id);
    if (res.passes == 1) {
      res.first_pass_s = dt;
      res.first_pass_pending = pending;
      res.first_pass_placements = plan.placements.size();
      res.first_pass_preemptions = plan.preemptions.size();
    }
    std::vector<std::string> victims;
    apply(plan, stop_now ? &victims : &probe_victims);
    stop_victims(victims);
    return !plan.placements.empty() || !plan.preemptions.empty();
  };
  // A probe: one held-back job submitted alone; its pass decides only it.
  auto probe = [&](int i, ProbeStats& stats) {
    submit(i);
    auto t0 = SteadyClock::now();
    sched::Plan plan = s.schedule(now);
    double us = seconds_since(t0) * 1e6;
    stats.us.push_back(us);
    size_t before = probe_victims.size();
    apply(plan, &probe_victims);
    if (!plan.placements.empty()) {
      ++stats.placed;
      stats.placed_us.push_back(us);
    } else if (probe_victims.size() > before) {
      ++stats.preempting;
      stats.preempting_us.push_back(us);
    } else {
      ++stats.waiting;
      stats.waiting_us.push_back(us);
    }
  };

  auto limit_start = SteadyClock::now();
  auto over_time = [&] { return seconds_since(limit_start) > opt.time_limit_s; };
  bool changed = pass(!probes);  // the initial fill
  fmt::print(stderr, "[{}] initial pass: {:.2f} s for {} jobs\n", policy, res.first_pass_s,
             res.first_pass_pending);
  if (probes) {
    // A pass after one that placed jobs decides every pending job again (jobs placed in the
    // last pass may be preempted now): settle before the probes, so that each probe's pass
    // decides only the new job.
    for (int settle = 0; settle < 5 && changed; ++settle) {
      size_t placed = res.placements;
      pass(false);
      if (res.placements == placed) break;
    }
    // Each kind of probe gets a third of the probe budget; the rest of its jobs are submitted
    // without timing.
    const double budget = std::max(20.0, opt.time_limit_s / 4) / 3;
    for (auto [ids, stats] :
         {std::pair{&w.probe_single, &res.single}, std::pair{&w.probe_gang, &res.gang},
          std::pair{&w.probe_preempt, &res.preempt}}) {
      auto start = SteadyClock::now();
      for (int i : *ids)
        if (seconds_since(start) < budget) probe(i, *stats);
    }
    changed = changed || !probe_victims.empty();
    stop_victims(probe_victims);
    for (int i = 0; i < res.jobs; ++i)
      if (held[i] && !submitted[i]) submit(i);
  }

  auto last_progress = SteadyClock::now();
  while (s.pending_count() > 0) {
    if (ends.empty() && !changed) {
      res.stop_reason = fmt::format(
          "stalled: {} jobs pending, none running (the scheduler counts {}), the last "
          "pass placed nothing",
          s.pending_count(), s.running_count());
      break;
    }
    // A pass cannot be cut short: none starts that would end past the limit, judging by the
    // last pass's time per decision.
    double last_us = res.passes && res.pass_pending.back()
                         ? res.pass_ms.back() * 1e3 / static_cast<double>(res.pass_pending.back())
                         : 0;
    double next_pass_s = last_us * 1e-6 * static_cast<double>(s.pending_count());
    if (over_time() || seconds_since(limit_start) + next_pass_s > opt.time_limit_s) {
      res.stop_reason = fmt::format(
          "time limit: stopped at {:.0f} s, the next pass would end after --time-limit {:.0f} s; "
          "{} jobs pending",
          seconds_since(limit_start), opt.time_limit_s, s.pending_count());
      break;
    }
    now = ends.empty() ? now + opt.tick_ms : std::max(now + opt.tick_ms, ends.begin()->first);
    auto t0 = SteadyClock::now();
    while (!ends.empty() && ends.begin()->first <= now) {
      s.finish(w.jobs[ends.begin()->second].req.job_id);
      ends.erase(ends.begin());
    }
    res.finish_s += seconds_since(t0);
    changed = pass(true);
    if (seconds_since(last_progress) > 10) {
      last_progress = SteadyClock::now();
      fmt::print(stderr, "[{}] {:.0f} s: {} passes, {} pending, {} placements\n", policy,
                 seconds_since(limit_start), res.passes, s.pending_count(), res.placements);
    }
  }
  res.completed = s.pending_count() == 0;
  res.left_pending = s.pending_count();
  res.virtual_end = now - kStart;
  if (!res.completed && res.stop_reason.starts_with("stalled")) {
    for (const auto& u : s.tenant_usage())
      if (u.used_milli != 0)
        res.stuck_reasons.push_back(fmt::format("tenant {} still uses {} milli of {}", u.tenant,
                                                u.used_milli, u.gpu_model));
    // Plan.pending repeats no reason, so the last one seen may be old: withdraw the stuck jobs,
    // submit them again and decide them once more for their reasons now.
    std::vector<int> stuck;
    for (const auto& [i, why] : reasons)
      if (stuck.size() < 5) stuck.push_back(i);
    for (int i : stuck) s.finish(w.jobs[i].req.job_id), submit(i);
    reasons.clear();
    std::vector<std::string> ignored;
    apply(s.schedule(now), &ignored);
  }
  if (!res.completed)
    for (const auto& [i, why] : reasons) {
      if (res.stuck_reasons.size() >= 5) break;
      const JobRequest& r = w.jobs[i].req;
      res.stuck_reasons.push_back(
          fmt::format("{} ({} of tenant {}: {}x{} {}{}): {}", r.job_id, kind_name(w.jobs[i].kind),
                      r.tenant, r.replicas, r.gpu_milli > 0 ? r.gpu_milli / 1000.0 : r.gpus,
                      r.gpu_model.empty() ? "GPU" : r.gpu_model,
                      r.capacity_class == CapacityClass::kAny
                          ? ""
                          : fmt::format(", {}", to_string(r.capacity_class)),
                      why));
    }
  res.wall_s = seconds_since(wall);
  return res;
}

// ---- Output -----------------------------------------------------------------------------------

double per_sec(double n, double s) {
  return s > 0 ? n / s : 0;
}

nlohmann::ordered_json figures(const RunResult& r) {
  auto single = percentiles(r.single.us), gang = percentiles(r.gang.us),
       preempt = percentiles(r.preempt.us);
  auto us = [](size_t count, double v) -> nlohmann::ordered_json {
    if (count == 0) return nullptr;  // no probe of that kind was timed
    return std::round(v * 10) / 10;
  };
  return {
      {"decisions_per_sec", std::round(per_sec(r.decisions, r.sched_s))},
      {"placements_per_sec", std::round(per_sec(r.placements, r.sched_s))},
      {"p50_decision_us", us(single.count, single.p50)},
      {"p99_decision_us", us(single.count, single.p99)},
      {"p99_gang_us", us(gang.count, gang.p99)},
      {"p99_preempt_us", us(preempt.count, preempt.p99)},
      // Single-node probes by outcome: a decision that chose victims is a preemption.
      {"p99_single_by_outcome_us",
       {{"placed", us(r.single.placed_us.size(), percentiles(r.single.placed_us).p99)},
        {"preempting", us(r.single.preempting_us.size(), percentiles(r.single.preempting_us).p99)},
        {"waiting", us(r.single.waiting_us.size(), percentiles(r.single.waiting_us).p99)}}},
      {"probes", {single.count, gang.count, preempt.count}},
      {"decisions", r.decisions},
      {"placements", r.placements},
      {"preemptions", r.preemptions},
      {"passes", r.passes},
      {"schedule_s", std::round(r.sched_s * 1000) / 1000},
      {"setup_s", std::round(r.setup_s * 1000) / 1000},
      {"completed", r.completed},
      {"pending_left", r.left_pending}};
}

void print_run(const RunResult& r) {
  auto pass = percentiles(r.pass_ms);
  fmt::print("-- policy {}: {} nodes, {} jobs\n", r.policy, r.nodes, r.jobs);
  fmt::print(
      "   setup (upsert {} nodes, tenants) {:.3f} s; submit {:.3f} s; finish {:.3f} s; "
      "wall {:.1f} s\n",
      r.nodes, r.setup_s, r.submit_s, r.finish_s, r.wall_s);
  fmt::print(
      "   {} passes, {:.3f} s in schedule(): {} decisions, {} placements, {} preemptions; "
      "largest queue {}\n",
      r.passes, r.sched_s, r.decisions, r.placements, r.preemptions, r.max_pending);
  if (r.placed_and_preempted > 0)
    fmt::print("   {} jobs were placed and chosen as preemption victims in the same plan\n",
               r.placed_and_preempted);
  fmt::print(
      "   {:.0f} decisions/s ({:.2f} us each), {:.0f} placements/s; pass p50 {:.2f} ms, "
      "p99 {:.2f} ms, max {:.2f} ms\n",
      per_sec(r.decisions, r.sched_s), r.decisions ? r.sched_s * 1e6 / r.decisions : 0,
      per_sec(r.placements, r.sched_s), pass.p50, pass.p99, pass.max);
  fmt::print("   initial fill pass: {:.3f} s for {} pending jobs, {} placed, {} preemptions\n",
             r.first_pass_s, r.first_pass_pending, r.first_pass_placements,
             r.first_pass_preemptions);
  auto probe_line = [](const char* what, const ProbeStats& p) {
    auto q = percentiles(p.us);
    if (q.count == 0) return;
    fmt::print(
        "   {:<36} n={:<5} p50 {:8.1f} us  p99 {:8.1f} us  max {:8.1f} us  "
        "(placed {}, preempting {}, waiting {})\n",
        what, q.count, q.p50, q.p99, q.max, p.placed, p.preempting, p.waiting);
    auto part = [](const char* outcome, const std::vector<double>& us) {
      auto o = percentiles(us);
      if (o.count == 0) return;
      fmt::print("     {:<34} n={:<5} p50 {:8.1f} us  p99 {:8.1f} us  max {:8.1f} us\n", outcome,
                 o.count, o.p50, o.p99, o.max);
    };
    part("of which placed:", p.placed_us);
    part("of which preempting:", p.preempting_us);
    part("of which told to wait:", p.waiting_us);
  };
  probe_line("one new single-node job:", r.single);
  probe_line("one new gang:", r.gang);
  probe_line("one new priority-1000 job (preempts):", r.preempt);
  if (r.completed)
    fmt::print("   every job placed; virtual time {:.1f} h\n", r.virtual_end / 3.6e6);
  else
    fmt::print("   NOT completed: {}; virtual time {:.1f} h\n", r.stop_reason,
               r.virtual_end / 3.6e6);
  for (const auto& why : r.stuck_reasons) fmt::print("     waits: {}\n", why);
}

constexpr const char* kUsage =
    "usage: bench_scheduler [--nodes N] [--jobs J] [--policy NAME] [--quick] [--scaling] "
    "[--no-baseline] [--tick-ms MS] [--time-limit S] [--seed S]\n"
    "                       [--events-only | --no-events] [--events N] "
    "[--event-pending N,N,...] [--no-reference] [--event-log FILE]\n";

[[noreturn]] void usage(const std::string& problem) {
  fmt::print(stderr, "bench_scheduler: {}\n{}", problem, kUsage);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  bool nodes_set = false, jobs_set = false, limit_set = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(fmt::format("{} needs a value", a));
      return argv[++i];
    };
    auto number = [&](int64_t min) {
      std::string v = value();
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < min)
        usage(fmt::format("{}: '{}' is not a whole number >= {}", a, v, min));
      return static_cast<int64_t>(n);
    };
    if (a == "--nodes")
      o.nodes = static_cast<int>(number(1)), nodes_set = true;
    else if (a == "--jobs")
      o.jobs = static_cast<int>(number(1)), jobs_set = true;
    else if (a == "--policy")
      o.policy = value();
    else if (a == "--quick")
      o.quick = true;
    else if (a == "--scaling")
      o.scaling = true;
    else if (a == "--no-baseline")
      o.baseline = false;
    else if (a == "--tick-ms")
      o.tick_ms = number(1);
    else if (a == "--time-limit")
      o.time_limit_s = static_cast<double>(number(1)), limit_set = true;
    else if (a == "--seed")
      o.seed = static_cast<uint64_t>(number(0));
    else if (a == "--events-only")
      o.events_only = true;
    else if (a == "--no-events")
      o.events = false;
    else if (a == "--no-reference")
      o.reference = false;
    else if (a == "--events")
      o.events_per_kind = static_cast<int>(number(1));
    else if (a == "--event-log")
      o.event_log = value();
    else if (a == "--event-pending") {
      o.event_pending.clear();
      std::string list = value();
      for (size_t at = 0; at <= list.size();) {
        size_t comma = std::min(list.find(',', at), list.size());
        std::string item = list.substr(at, comma - at);
        char* end = nullptr;
        long long n = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || n < 1)
          usage(fmt::format("--event-pending: '{}' is not a whole number >= 1", item));
        o.event_pending.push_back(static_cast<size_t>(n));
        at = comma + 1;
      }
    } else if (a == "--help" || a == "-h")
      fmt::print("{}", kUsage), std::exit(0);
    else
      usage(fmt::format("unknown argument '{}'", a));
  }
  if (o.quick) {
    if (!nodes_set) o.nodes = 200;
    if (!jobs_set) o.jobs = 2000;
    if (!limit_set) o.time_limit_s = 20;
    o.events_per_kind = std::min(o.events_per_kind, 50);
    o.event_pending = {100, 1000};
  }
  if (o.events_only && !o.events) usage("--events-only and --no-events exclude each other");
  return o;
}

}  // namespace

// One timed event and what its pass did, times in ms.
nlohmann::ordered_json event_json(const TimedEvent& e) {
  const sched::PassStats& p = e.pass;
  auto ms = [](double ns) { return std::round(ns / 1e4) / 100; };
  return {{"event", e.index},
          {"kind", e.kind},
          {"ms", ms(e.us * 1e3)},
          {"call_ms", ms(e.call_us * 1e3)},
          {"placed", e.placed},
          {"preempted", e.preempted},
          {"decisions", p.decisions},
          {"woken", p.woken},
          {"wake_queries", p.wake_queries},
          {"wake_ms", ms(static_cast<double>(p.wake_ns))},
          {"place_ms", ms(static_cast<double>(p.place_ns))},
          {"preemption_searches", p.preemption_searches},
          {"preemption_ms", ms(static_cast<double>(p.preemption_ns))},
          {"reservation_searches", p.reservation_searches},
          {"reservation_ms", ms(static_cast<double>(p.reservation_ns))},
          {"reason_ms", ms(static_cast<double>(p.reason_ns))},
          {"pass_ms", ms(static_cast<double>(p.total_ns))}};
}

// The headline: event-to-plan latency per queue length, with and without wake-ups.
nlohmann::ordered_json event_headline(const Options& opt) {
  auto figures_of = [](const Percentiles& p) {
    return nlohmann::ordered_json{{"p50_us", std::round(p.p50 * 10) / 10},
                                  {"p99_us", std::round(p.p99 * 10) / 10},
                                  {"max_us", std::round(p.max * 10) / 10}};
  };
  fmt::print(
      "-- headline: time from one event to its plan, {} nodes x 8 GPUs full, policy default, "
      "{} events of each kind\n",
      opt.nodes, opt.events_per_kind);
  fmt::print("   {:>9}  {:<12} {:>10} {:>10} {:>10}  {:>7} {:>9}\n", "pending", "event", "p50 us",
             "p99 us", "max us", "placed", "preempted");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::map<std::pair<bool, size_t>, Percentiles> pooled;
  std::FILE* event_log = nullptr;
  if (!opt.event_log.empty() && !(event_log = std::fopen(opt.event_log.c_str(), "w"))) {
    fmt::print(stderr, "bench_scheduler: cannot write --event-log {}: {}\n", opt.event_log,
               std::strerror(errno));
    std::exit(2);
  }
  for (bool wake_ups : {true, false}) {
    if (!wake_ups && !opt.reference) break;
    if (!wake_ups)
      fmt::print("   reference: every pass after a release decides every pending job\n");
    for (size_t i = 0; i < opt.event_pending.size(); ++i) {
      // Without wake-ups a pass costs the queue: the two smallest queues, fewer events.
      if (!wake_ups && i >= 2) break;
      EventOptions eo;
      eo.nodes = opt.nodes;
      eo.pending = opt.event_pending[i];
      eo.events_per_kind = wake_ups ? opt.events_per_kind : std::max(opt.events_per_kind / 10, 5);
      eo.wake_ups = wake_ups;
      eo.seed = opt.seed;
      EventRun r = measure_events(eo);
      for (const auto& k : r.kinds)
        fmt::print("   {:>9}  {:<12} {:>10.1f} {:>10.1f} {:>10.1f}  {:>7} {:>9}\n", eo.pending,
                   k.kind, k.us.p50, k.us.p99, k.us.max, k.placed, k.preempted);
      fmt::print(
          "   {:>9}  {:<12} {:>10.1f} {:>10.1f} {:>10.1f}   (queue {}-{}, {} running, setup "
          "{:.1f} s, unsettled after {} events)\n",
          eo.pending, "all", r.all_us.p50, r.all_us.p99, r.all_us.max, r.pending_min, r.pending_max,
          r.running, r.setup_s, r.unsettled);
      nlohmann::ordered_json slowest = nlohmann::ordered_json::array();
      for (const TimedEvent& e : r.slowest) {
        const sched::PassStats& p = e.pass;
        auto ms = [](int64_t ns) { return ns / 1e6; };
        fmt::print(
            "     slow {:<10} {:8.2f} ms (event {}, call {:.2f} ms): placed {}, preempted {}; "
            "decided {} ({} woken, {} queries {:.2f} ms), place {:.2f} ms, {} preemption "
            "searches {:.2f} ms, {} reservation searches {:.2f} ms, reasons {:.2f} ms, pass "
            "{:.2f} ms\n",
            e.kind, e.us / 1000, e.index, e.call_us / 1000, e.placed, e.preempted, p.decisions,
            p.woken, p.wake_queries, ms(p.wake_ns), ms(p.place_ns), p.preemption_searches,
            ms(p.preemption_ns), p.reservation_searches, ms(p.reservation_ns), ms(p.reason_ns),
            ms(p.total_ns));
        slowest.push_back(event_json(e));
      }
      if (event_log) {
        for (const TimedEvent& e : r.events) {
          nlohmann::ordered_json line = {{"wake_ups", wake_ups}, {"pending", eo.pending}};
          line.update(event_json(e));
          std::fputs((line.dump() + "\n").c_str(), event_log);
        }
        std::fflush(event_log);
      }
      fflush(stdout);
      pooled[{wake_ups, eo.pending}] = r.all_us;
      nlohmann::ordered_json row = {
          {"wake_ups", wake_ups},         {"pending", eo.pending},
          {"pending_min", r.pending_min}, {"pending_max", r.pending_max},
          {"running", r.running},         {"events_per_kind", eo.events_per_kind},
          {"all", figures_of(r.all_us)},  {"slowest", slowest}};
      for (const auto& k : r.kinds) {
        auto f = figures_of(k.us);
        f["placed"] = k.placed;
        f["preempted"] = k.preempted;
        row[k.kind] = f;
      }
      rows.push_back(std::move(row));
    }
  }
  if (event_log) std::fclose(event_log);
  nlohmann::ordered_json out = {{"runs", rows}};
  size_t smallest = opt.event_pending.front(), largest = opt.event_pending.back();
  if (pooled.count({true, smallest}) && pooled.count({true, largest}) && smallest != largest) {
    const Percentiles &a = pooled[{true, smallest}], &b = pooled[{true, largest}];
    double p50 = b.p50 / a.p50, p99 = b.p99 / a.p99;
    fmt::print("   cost at {} pending / at {} pending: p50 {:.2f}x, p99 {:.2f}x\n", largest,
               smallest, p50, p99);
    out["ratio_largest_to_smallest"] = {{"p50", std::round(p50 * 100) / 100},
                                        {"p99", std::round(p99 * 100) / 100}};
  }
  for (size_t pending : opt.event_pending)
    if (pooled.count({false, pending}) && pooled.count({true, pending})) {
      const Percentiles &ref = pooled[{false, pending}], &wake = pooled[{true, pending}];
      fmt::print("   reference / wake-ups at {} pending: p50 {:.1f}x, p99 {:.1f}x\n", pending,
                 ref.p50 / wake.p50, ref.p99 / wake.p99);
      out["speedup_vs_reference"][std::to_string(pending)] = {
          {"p50", std::round(ref.p50 / wake.p50 * 10) / 10},
          {"p99", std::round(ref.p99 / wake.p99 * 10) / 10}};
    }
  return out;
}

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);
  nlohmann::ordered_json headline;
  if (opt.events) headline = event_headline(opt);
  if (opt.events_only) {
    fmt::print("{}\n", nlohmann::ordered_json{{"nodes", opt.nodes}, {"events", headline}}.dump());
    return 0;
  }
  const int probes_single = opt.quick ? 200 : 1000, probes_other = opt.quick ? 50 : 200;

  Cluster cluster = make_cluster(opt.nodes);
  Workload workload = make_workload(opt.jobs, opt.seed, probes_single, probes_other);
  double demand_ratio = workload.gpu_demand / static_cast<double>(cluster.gpus);
  int kinds[4] = {0, 0, 0, 0};
  for (const auto& j : workload.jobs) ++kinds[static_cast<int>(j.kind)];
  fmt::print(
      "bench_scheduler: {} nodes ({} GPUs: {} A100, {} H100, {} L4), {} jobs asking for "
      "{:.0f} GPUs ({:.2f}x the cluster), seed {}, tick {} ms\n",
      opt.nodes, cluster.gpus, cluster.gpus_by_model["A100"], cluster.gpus_by_model["H100"],
      cluster.gpus_by_model["L4"], opt.jobs, workload.gpu_demand, demand_ratio, opt.seed,
      opt.tick_ms);
  fmt::print(
      "   jobs: {} {}, {} {}, {} {}, {} {}; probes held back: {} single-node, {} gangs, "
      "{} priority-1000\n",
      kinds[0], kind_name(Kind::kOneGpu), kinds[1], kind_name(Kind::kShare), kinds[2],
      kind_name(Kind::kMultiGpu), kinds[3], kind_name(Kind::kGang), workload.probe_single.size(),
      workload.probe_gang.size(), workload.probe_preempt.size());
  fflush(stdout);

  RunResult main_run = run(opt.policy, cluster, workload, opt, true);
  print_run(main_run);
  fflush(stdout);
  bool own_first_fit = opt.baseline && opt.policy != "first-fit";
  RunResult first_fit = own_first_fit ? run("first-fit", cluster, workload, opt, true) : main_run;
  if (own_first_fit) print_run(first_fit);
  fflush(stdout);

  nlohmann::ordered_json out = {{"nodes", opt.nodes}, {"jobs", opt.jobs}, {"policy", opt.policy}};
  if (opt.events) out["events"] = headline;
  out.update(figures(main_run));
  out["first_fit"] = opt.baseline ? figures(first_fit) : nlohmann::ordered_json();

  if (opt.scaling) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    std::vector<int> sizes =
        opt.quick ? std::vector<int>{100, 200, 400} : std::vector<int>{1000, 10000, 50000};
    fmt::print("-- scaling, policy {}, 10 jobs per node:\n", opt.policy);
    // The initial fill is one schedule() call that no time limit can cut short: a size whose
    // fill would take far longer than --time-limit (from the previous size's fill time per
    // decision, taken to grow in proportion to the nodes) is skipped. The fill's time per
    // decision is also the figure that compares across sizes: every run makes that pass, while
    // how many later passes a run makes depends on the time limit.
    double prev_fill_us = 0;
    int prev_nodes = 0;
    for (int n : sizes) {
      int jobs = n * 10;
      double projected = prev_fill_us * 1e-6 * n / std::max(prev_nodes, 1) * jobs;
      bool reuse = n == opt.nodes && jobs == opt.jobs;
      if (prev_fill_us > 0 && projected > 4 * opt.time_limit_s && !reuse) {
        std::string note = fmt::format(
            "skipped: its initial pass alone would take about {:.0f} s ({:.0f} us per decision "
            "in the fill at {} nodes, times {}/{} nodes, times {} jobs)",
            projected, prev_fill_us, prev_nodes, n, prev_nodes, jobs);
        fmt::print("   {:>6} nodes {:>7} jobs: {}\n", n, jobs, note);
        rows.push_back({{"nodes", n},
                        {"jobs", jobs},
                        {"us_per_decision", nullptr},
                        {"fill_us_per_decision", nullptr},
                        {"note", note}});
        continue;
      }
      RunResult r;
      if (reuse) {
        r = main_run;
      } else {
        Cluster c = make_cluster(n);
        Workload w = make_workload(jobs, opt.seed, 0, 0);
        r = run(opt.policy, c, w, opt, false);
      }
      double us = r.decisions ? r.sched_s * 1e6 / static_cast<double>(r.decisions) : 0;
      double fill_us = r.first_pass_pending
                           ? r.first_pass_s * 1e6 / static_cast<double>(r.first_pass_pending)
                           : 0;
      fmt::print(
          "   {:>6} nodes {:>7} jobs: {:8.2f} us/decision ({:.2f} in the fill), {:.0f} "
          "placements/s, fill {:.2f} s, setup {:.2f} s, {} passes{}\n",
          n, jobs, us, fill_us, per_sec(r.placements, r.sched_s), r.first_pass_s, r.setup_s,
          r.passes, r.completed ? "" : " (" + r.stop_reason + ")");
      fflush(stdout);
      nlohmann::ordered_json row = {
          {"nodes", n},
          {"jobs", jobs},
          {"us_per_decision", std::round(us * 100) / 100},
          {"fill_us_per_decision", std::round(fill_us * 100) / 100},
          {"placements_per_sec", std::round(per_sec(r.placements, r.sched_s))},
          {"passes", r.passes},
          {"initial_pass_s", std::round(r.first_pass_s * 1000) / 1000},
          {"setup_s", std::round(r.setup_s * 1000) / 1000},
          {"completed", r.completed}};
      if (!r.completed) row["note"] = r.stop_reason;
      if (r.stop_reason.starts_with("stalled"))
        for (const auto& why : r.stuck_reasons) fmt::print("     waits: {}\n", why);
      rows.push_back(std::move(row));
      prev_fill_us = fill_us;
      prev_nodes = n;
    }
    out["scaling"] = std::move(rows);
  }
  out["demand_ratio"] = std::round(demand_ratio * 100) / 100;
  out["decision"] =
      "a pending job placed or told why it waits, in one pass; every pass of the run is a full "
      "pass, so decisions = the sum over passes of pending_count() before the pass";
  fmt::print("{}\n", out.dump());
  return 0;
}
