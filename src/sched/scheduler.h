// The Scheduler interface and its factory.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "sched/types.h"

namespace gpucloud::sched {

/// Turns a snapshot into a plan. Implementations are deterministic: the same snapshot
/// (including settings.seed) always gives the same plan.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  /// The policy's name, e.g. "simple".
  virtual std::string name() const = 0;
  /// Decides placements, preemptions and pending reasons for the snapshot's pending jobs.
  virtual Plan schedule(const Snapshot& snapshot) = 0;
};

/// Creates the scheduler named by settings.policy (one explicit name->factory table).
Result<std::unique_ptr<Scheduler>> create_scheduler(const PolicySettings& settings);

/// Whether a request could run on some node of an otherwise empty cluster. When it cannot,
/// the error (kUnsatisfiable) says what the largest fitting request would be, e.g.
/// "gpus: 12 requested but the largest node has 8 A100; ask for --gpus 8 or split the job into
/// replicas".
Status check_satisfiable(const JobRequest& request, const std::vector<NodeState>& nodes);

}  // namespace gpucloud::sched
