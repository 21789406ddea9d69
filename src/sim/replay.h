// `gpucloud sim replay`: a discrete-event replay of a trace on virtual time through the
// production scheduler (sched::Scheduler, the same library as the server). Jobs arrive at their
// submit time, the scheduler is asked for a plan after every batch of events at one instant,
// placed jobs run for their duration (stopped at max_runtime when that is shorter) and leave;
// preempted jobs go back to the queue and later run their full duration again (no checkpoint).
// Jobs that can never fit the cluster are found before the run and reported, not replayed.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "sim/cluster.h"
#include "sim/replay_result.h"
#include "sim/trace.h"

namespace gpucloud::sim {

/// How to replay.
struct ReplayOptions {
  std::string policy = "default";  // a name create_scheduler() knows
  uint64_t seed = 42;              // for policies that draw random numbers
};

/// Replays the trace on the cluster. Error only for an unknown policy.
Result<ReplayResult> run_replay(const SimCluster& cluster, const Trace& trace,
                                const ReplayOptions& options);

}  // namespace gpucloud::sim
