// The queue-policy flags shared by `gpucloud dev`, `gpucloud server` and `sim replay`:
// --queue-policy, --las-thresholds and --las-starvation (docs/scheduler.md, "Queue policies").
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "sched/types.h"

namespace gpucloud::cli {

/// The flags as given.
struct QueuePolicyFlags {
  std::string queue_policy = "fifo";
  std::vector<double> las_thresholds_gpu_s;  // empty: the default levels
  std::string las_starvation;                // a duration ("4h", "0"); empty: the default
};

/// Adds the three flags to a command.
void add_queue_policy_flags(CLI::App* command, QueuePolicyFlags& flags);

/// The flags as scheduler settings (the other fields at their defaults), validated; the error
/// starts with the flag it is about, e.g. "--las-thresholds: las thresholds: 60 follows 3600".
Result<sched::PolicySettings> queue_settings_from(const QueuePolicyFlags& flags);

}  // namespace gpucloud::cli
