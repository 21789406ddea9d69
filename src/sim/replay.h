// `gpucloud sim replay`: a discrete-event replay of a trace on virtual time through the
// production scheduler (sched::Scheduler, the same library as the server). Jobs arrive at their
// submit time, the scheduler is asked for a plan after every batch of events at one instant,
// placed jobs run for their duration (stopped at max_runtime when that is shorter) and leave;
// preempted jobs go back to the queue. A preempted job keeps the work of its last checkpoint
// (every checkpoint_interval_ms of work; without checkpoints it starts over) and pays
// restart_cost_ms at the start of each later attempt. The scheduler is also asked for a plan
// when it says a decision is due without an event (queue policy las).
// Jobs that can never fit the cluster are found before the run and reported, not replayed.
// A replay may be stopped early (a stop time, or a stop request): the result then says where,
// and counts what was running, pending and yet to arrive at that time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "common/result.h"
#include "model/quota_windows.h"
#include "sched/types.h"
#include "sim/cluster.h"
#include "sim/replay_result.h"
#include "sim/trace.h"

namespace gpucloud::sim {

/// Where a replay stands, for progress reports.
struct ReplayProgress {
  int64_t sim_ms = 0;     // virtual time of the events just processed
  int64_t submitted = 0;  // jobs that have arrived (a preempted job counts once)
  int64_t done = 0;       // jobs that finished (or were stopped at max_runtime)
  int64_t queued = 0;     // jobs pending now
  int64_t running = 0;    // jobs running now
  bool final = false;     // the last call: the replay is over
};

/// A tenant of a replay: its quotas (as the server's config file gives them) and quota windows.
struct ReplayTenant {
  sched::TenantSpec spec;            // spec.quota: the quota outside every window
  std::vector<QuotaWindow> windows;  // the quota in force changes at their starts and ends
};

/// How to replay.
struct ReplayOptions {
  std::string policy = "default";     // a name create_scheduler() knows
  uint64_t seed = 42;                 // for policies that draw random numbers
  std::string queue_policy = "fifo";  // fifo, sjf or las (PolicySettings::queue_policy)
  // las levels and starvation guard (PolicySettings' fields of the same names).
  std::vector<double> las_thresholds_gpu_s = sched::PolicySettings{}.las_thresholds_gpu_s;
  int64_t las_starvation_ms = sched::PolicySettings{}.las_starvation_ms;
  // A running job checkpoints after every this much work (0: never: a preempted job starts
  // over); a job that starts again after a preemption first spends restart_cost_ms (loading
  // its checkpoint, warming up) before its work goes on.
  int64_t checkpoint_interval_ms = 0;
  int64_t restart_cost_ms = 0;
  // Spot interruptions: each node labelled capacity-class=spot is taken by its provider at
  // this rate (a Poisson process, drawn from `seed`); its jobs are interrupted as preempted
  // jobs are (checkpoint, restart cost) and go back to the queue, and a replacement node joins
  // spot_downtime_ms later. 0: no interruptions.
  double spot_interrupt_rate_per_hour = 0;
  int64_t spot_downtime_ms = 10 * 60'000;
  // Tenants' quotas (none: no tenant is limited). Quota windows are read in wall-clock time:
  // trace time 0 is epoch_ms (ms since the Unix epoch, UTC), and the quotas in force change at
  // the windows' starts and ends as the server applies them (use above nominal + borrowing
  // limit is reclaimed then; see docs/config.md, "Quota windows").
  std::vector<ReplayTenant> tenants;
  int64_t epoch_ms = 0;
  // Called after every instant's events and once more, with final set, at the end. Called
  // often: the caller rate-limits what it prints (the replay never reads the wall clock).
  std::function<void(const ReplayProgress&)> progress;
  // Stop at this virtual time (events at exactly this time still happen); the result is then
  // partial (ReplayResult::stopped). INT64_MAX: run until the trace is done.
  int64_t until_ms = INT64_MAX;
  // When it reads true (e.g. set by a Ctrl-C handler, or from the progress callback), the replay
  // stops before the next instant's events; the result is partial. Null: never.
  const std::atomic<bool>* stop_requested = nullptr;
};

/// Replays the trace on the cluster. Error only for an unknown policy.
Result<ReplayResult> run_replay(const SimCluster& cluster, const Trace& trace,
                                const ReplayOptions& options);

}  // namespace gpucloud::sim
