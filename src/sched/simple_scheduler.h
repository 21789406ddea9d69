// The "simple" policy: priority then age order, best-fit node choice, best-connected GPUs.
//
// Limits: no quotas, fair share, backfill reservations or preemption; a job that cannot start
// now does not hold back smaller jobs behind it (large jobs may wait long on a busy cluster).
#pragma once

#include "sched/scheduler.h"

namespace gpucloud::sched {

class SimpleScheduler final : public Scheduler {
 public:
  std::string name() const override { return "simple"; }
  Plan schedule(const Snapshot& snapshot) override;
};

}  // namespace gpucloud::sched
