#include "scheduler_events.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include "sched/scheduler.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define GPUCLOUD_HAVE_CALLGRIND 1
#endif

namespace gpucloud::bench {
namespace {

// Jobs of the benchmark's mix, drawn in blocks as the run needs them, submitted in order.
class JobSource {
 public:
  explicit JobSource(uint64_t seed) : seed_(seed) {}
  JobRequest next(TimeMs created_at) {
    if (index_ == block_.jobs.size()) {
      block_ = make_workload(kBlock, seed_ + blocks_, 0, 0, static_cast<int>(blocks_ * kBlock));
      ++blocks_;
      index_ = 0;
    }
    JobRequest r = block_.jobs[index_++].req;
    r.created_at = created_at;
    return r;
  }

 private:
  static constexpr int kBlock = 10000;
  uint64_t seed_;
  uint64_t blocks_ = 0;
  Workload block_;
  size_t index_ = 0;
};

// The caller's side: what runs and what waits, as the plans said.
class Harness {
 public:
  Harness(sched::Scheduler& s, uint64_t seed) : s_(s), jobs_(seed) {}

  JobRequest draw(TimeMs now) { return jobs_.next(now); }
  void submit_new(TimeMs now) { submit(jobs_.next(now)); }
  void submit(const JobRequest& r) {
    if (!s_.submit(r).ok()) std::abort();
    requests_[r.job_id] = r;
  }
  // Applies a plan: placements run; victims stop now and wait again (their age kept).
  void apply(const sched::Plan& plan, int* placed = nullptr, int* preempted = nullptr) {
    for (const auto& p : plan.placements) add_running(p.job_id);
    for (const auto& p : plan.preemptions) {
      s_.finish(p.job_id);
      remove_running(p.job_id);
      submit(requests_.at(p.job_id));
    }
    if (placed) *placed += static_cast<int>(plan.placements.size());
    if (preempted) *preempted += static_cast<int>(plan.preemptions.size());
  }
  // Passes until nothing more is placed or preempted (at most `rounds`); false if the last
  // still placed or preempted.
  bool settle(TimeMs now, int rounds) {
    for (int i = 0; i < rounds; ++i) {
      sched::Plan plan = s_.schedule(now);
      apply(plan);
      if (plan.placements.empty() && plan.preemptions.empty()) return true;
    }
    return false;
  }
  // A running job, drawn uniformly.
  std::string pick_running(Rng& rng) const {
    return running_[static_cast<size_t>(rng.below(static_cast<int>(running_.size())))];
  }
  void finished(const std::string& id) {
    remove_running(id);
    requests_.erase(id);
  }
  size_t running() const { return running_.size(); }

 private:
  void add_running(const std::string& id) {
    position_[id] = running_.size();
    running_.push_back(id);
  }
  void remove_running(const std::string& id) {
    auto it = position_.find(id);
    if (it == position_.end()) return;
    size_t at = it->second;
    position_[running_.back()] = at;
    std::swap(running_[at], running_.back());
    running_.pop_back();
    position_.erase(id);
  }

  sched::Scheduler& s_;
  JobSource jobs_;
  std::unordered_map<std::string, JobRequest> requests_;  // running and pending
  std::vector<std::string> running_;
  std::unordered_map<std::string, size_t> position_;
};

}  // namespace

namespace {

// Profiling only the timed events: with GPUCLOUD_BENCH_PERF_FIFO set to the control FIFO of
// `perf record --control fifo:FIFO -D -1`, perf samples the timed regions and nothing else.
// With GPUCLOUD_BENCH_CALLGRIND=1 under `valgrind --tool=callgrind --instr-atstart=no
// --collect-atstart=no`, each timed event is counted alone and dumped to its own file
// (callgrind.out.N, its `totals:` line): exact instructions per event, whatever the machine's
// load (docs/scheduler.md, "Measuring"). GPUCLOUD_BENCH_CALLGRIND_EVENTS=I,J,... (event indexes,
// as the event log numbers them) limits both to those events.
class PerfControl {
 public:
  PerfControl() {
    if (const char* fifo = std::getenv("GPUCLOUD_BENCH_PERF_FIFO")) out_ = std::fopen(fifo, "w");
    const char* callgrind = std::getenv("GPUCLOUD_BENCH_CALLGRIND");
    callgrind_ = callgrind && std::string(callgrind) == "1";
    if (const char* list = std::getenv("GPUCLOUD_BENCH_CALLGRIND_EVENTS")) {
      only_ = true;
      for (const char* at = list; *at;) {
        char* end = nullptr;
        const long index = std::strtol(at, &end, 10);
        if (end == at) {  // not a number: say so rather than count nothing
          std::fprintf(stderr, "GPUCLOUD_BENCH_CALLGRIND_EVENTS: '%s' is not a list of numbers\n",
                       list);
          std::exit(2);
        }
        events_.push_back(static_cast<int>(index));
        at = *end == ',' ? end + 1 : end;
      }
    }
  }
  ~PerfControl() {
    if (out_) std::fclose(out_);
  }
  /// Starts counting event `index` (if it is one of those chosen).
  void enable(int index) {
    counting_ = !only_ || std::find(events_.begin(), events_.end(), index) != events_.end();
    if (!counting_) return;
    say("enable\n");
#ifdef GPUCLOUD_HAVE_CALLGRIND
    if (callgrind_) {
      CALLGRIND_START_INSTRUMENTATION;
      CALLGRIND_ZERO_STATS;
      CALLGRIND_TOGGLE_COLLECT;
    }
#endif
  }
  /// Stops counting the event enable() started.
  void disable() {
    if (!counting_) return;
#ifdef GPUCLOUD_HAVE_CALLGRIND
    if (callgrind_) {
      CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_DUMP_STATS;
      CALLGRIND_STOP_INSTRUMENTATION;
    }
#endif
    say("disable\n");
  }

 private:
  void say(const char* what) {
    if (!out_) return;
    std::fputs(what, out_);
    std::fflush(out_);
  }
  std::FILE* out_ = nullptr;
  bool callgrind_ = false;
  bool only_ = false;        // only events_ are counted
  std::vector<int> events_;  // GPUCLOUD_BENCH_CALLGRIND_EVENTS
  bool counting_ = false;
};

}  // namespace

EventRun measure_events(const EventOptions& o) {
  PerfControl perf;
  EventRun run;
  run.options = o;
  auto start = SteadyClock::now();
  sched::PolicySettings settings;
  settings.policy = "default";
  settings.seed = o.seed;
  settings.wake_ups = o.wake_ups;
  auto created = sched::create_scheduler(settings);
  if (!created.ok()) std::abort();
  sched::Scheduler& s = **created;
  Cluster cluster = make_cluster(o.nodes);
  s.set_tenants(make_tenants(cluster));
  for (const auto& node : cluster.nodes) s.upsert_node(node);

  // Fill: jobs asking for the cluster's GPUs (1.0×: at 1.1× some 2,500 were left waiting, more
  // than the smallest queue asked for), placed and settled; then the queue.
  Harness h(s, o.seed);
  TimeMs now = kStart;
  double demand = 0;
  while (demand < static_cast<double>(cluster.gpus)) {
    JobRequest r = h.draw(now);
    demand += r.replicas * (r.gpu_milli > 0 ? r.gpu_milli / 1000.0 : r.gpus);
    h.submit(r);
  }
  h.settle(now, 100);
  while (s.pending_count() < o.pending) h.submit_new(now);
  if (!h.settle(now, 100)) ++run.unsettled;
  run.setup_s = seconds_since(start);
  run.pending_min = run.pending_max = s.pending_count();

  const char* kinds[] = {"finish", "node joins", "submit"};
  std::vector<std::vector<double>> us(3);
  run.kinds.resize(3);
  for (int k = 0; k < 3; ++k) run.kinds[k].kind = kinds[k];
  Rng rng(o.seed * 7 + 1);
  int next_node = o.nodes;
  std::vector<double> all;
  for (int e = 0; e < 3 * o.events_per_kind; ++e) {
    int k = e % 3;
    now += 1000;
    // The event's call and the pass after it are timed (and counted, under callgrind) alone.
    sched::Plan plan;
    TimedEvent timed;
    auto time = [&](auto&& call) {
      perf.enable(e);
      const SteadyClock::time_point t = SteadyClock::now();
      call();
      timed.call_us = seconds_since(t) * 1e6;
      plan = s.schedule(now);
      timed.us = seconds_since(t) * 1e6;
      perf.disable();
    };
    if (k == 0) {
      std::string id = h.pick_running(rng);
      time([&] { s.finish(id); });
      h.finished(id);
    } else if (k == 1) {
      sched::NodeState node = make_node(next_node++);
      time([&] { s.upsert_node(node); });
    } else {
      // The job is drawn before the clock starts: only submit() and the pass are timed.
      JobRequest r = h.draw(now);
      time([&] { h.submit(r); });
    }
    us[k].push_back(timed.us);
    all.push_back(timed.us);
    timed.index = e;
    timed.kind = kinds[k];
    timed.placed = static_cast<int>(plan.placements.size());
    timed.preempted = static_cast<int>(plan.preemptions.size());
    timed.pass = s.last_pass();
    run.events.push_back(timed);
    h.apply(plan, &run.kinds[k].placed, &run.kinds[k].preempted);
    run.pending_min = std::min(run.pending_min, s.pending_count());
    run.pending_max = std::max(run.pending_max, s.pending_count());
    // Untimed: the victims' preemptors start, the queue is refilled and decided.
    bool settled = h.settle(now, 20);
    while (s.pending_count() < o.pending) h.submit_new(now);
    settled &= h.settle(now, 20);
    if (!settled) ++run.unsettled;
  }
  run.slowest = run.events;
  std::stable_sort(run.slowest.begin(), run.slowest.end(),
                   [](const TimedEvent& a, const TimedEvent& b) { return a.us > b.us; });
  run.slowest.resize(std::min<size_t>(run.slowest.size(), 8));
  for (int k = 0; k < 3; ++k) run.kinds[k].us = percentiles(us[k]);
  run.all_us = percentiles(all);
  run.running = h.running();
  return run;
}

}  // namespace gpucloud::bench
