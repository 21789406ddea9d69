// bench_scheduler's headline: the time from one event to its plan on a full cluster with a
// deep queue. What a user feels: a job ends and the next one should start; a node joins and
// work should land on it; a job is submitted and should be placed or told why it waits.
#pragma once

#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "scheduler_workload.h"

namespace gpucloud::bench {

/// One setting of the event benchmark.
struct EventOptions {
  int nodes = 10000;
  size_t pending = 10000;  // jobs waiting when the events start (the queue is refilled to it)
  int events_per_kind = 300;
  bool wake_ups = true;  // false: the reference, every pass after a release decides every job
  uint64_t seed = 42;
};

/// The latency of one kind of event.
struct EventKindFigures {
  std::string kind;  // "finish", "node joins", "submit"
  Percentiles us;    // finish()/upsert_node()/submit() and the schedule() after it
  int placed = 0, preempted = 0;
};

/// One timed event: what it cost and what its pass did.
struct TimedEvent {
  int index = 0;  // in the run, from 0 (kinds take turns: finish, node joins, submit)
  std::string kind;
  double us = 0;
  double call_us = 0;  // of which the finish()/upsert_node()/submit() call, before the pass
  int placed = 0, preempted = 0;
  sched::PassStats pass;
};

/// What one setting measured.
struct EventRun {
  EventOptions options;
  size_t running = 0, pending_min = 0, pending_max = 0;  // during the events
  double setup_s = 0;                                    // filling the cluster and the queue
  // The setup (100 passes allowed) and events (20) after which the passes did not settle the
  // queue: the last one still placed or preempted.
  int unsettled = 0;
  std::vector<EventKindFigures> kinds;
  Percentiles all_us;               // every event of every kind
  std::vector<TimedEvent> events;   // every event, in order
  std::vector<TimedEvent> slowest;  // the slowest events, slowest first (at most 8)
};

/// Fills a cluster of options.nodes with jobs, queues options.pending more, then times events
/// of each kind in turn (between them, untimed: preempted jobs are stopped and resubmitted, the
/// queue is refilled, and a pass decides the refill). The events and their order depend only on
/// the options, so an event's index names the same event in every run of the same build (and
/// of another build while plans are the same): GPUCLOUD_BENCH_CALLGRIND_EVENTS=I,J,... counts
/// only those events under callgrind (see PerfControl in scheduler_events.cpp).
EventRun measure_events(const EventOptions& options);

}  // namespace gpucloud::bench
