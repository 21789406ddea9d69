#include "cli/queue_flags.h"

#include <fmt/format.h>

#include "common/units.h"
#include "sched/scheduler.h"

namespace gpucloud::cli {

void add_queue_policy_flags(CLI::App* command, QueuePolicyFlags& flags) {
  command
      ->add_option("--queue-policy", flags.queue_policy,
                   "order of each tenant's jobs of one priority: fifo (oldest first), sjf "
                   "(shortest expected_runtime, else max_runtime, first) or las (least GPU time "
                   "received first; long runs drop a level and may be preempted)")
      ->capture_default_str();
  command
      ->add_option("--las-thresholds", flags.las_thresholds_gpu_s,
                   "las: GPU-seconds of service at which a job drops a level, ascending "
                   "(default 3600,36000)")
      ->delimiter(',');
  command->add_option("--las-starvation", flags.las_starvation,
                      "las: a job pending this long goes back to the first level (default 8h; "
                      "0: never)");
}

Result<sched::PolicySettings> queue_settings_from(const QueuePolicyFlags& flags) {
  sched::PolicySettings settings;
  settings.queue_policy = flags.queue_policy;
  if (!flags.las_thresholds_gpu_s.empty())
    settings.las_thresholds_gpu_s = flags.las_thresholds_gpu_s;
  if (!flags.las_starvation.empty()) {
    auto ms = parse_duration_ms(flags.las_starvation);
    if (!ms) return invalid(fmt::format("--las-starvation: {}", ms.error().message));
    settings.las_starvation_ms = *ms;
  }
  if (Status s = sched::validate_queue_settings(settings); !s.ok()) {
    const std::string& m = s.error().message;
    const char* flag = m.starts_with("las thresholds")   ? "--las-thresholds"
                       : m.starts_with("las starvation") ? "--las-starvation"
                                                         : "--queue-policy";
    return invalid(fmt::format("{}: {}", flag, m));
  }
  return settings;
}

}  // namespace gpucloud::cli
