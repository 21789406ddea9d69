// The job spec: one schema shared by `gpucloud run` flags, job YAML files and POST /v1/jobs.
// docs/jobspec.md documents every field; validation messages name the field and the fix.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/container_spec.h"

namespace gpucloud {

enum class CapacityClass { kOnDemand, kSpot, kAny };
enum class RestartPolicy { kNever, kOnLost, kOnFailure, kAlways };

const char* to_string(CapacityClass c);
const char* to_string(RestartPolicy r);

/// When an ended attempt is re-run, and how often.
struct RestartSpec {
  RestartPolicy policy = RestartPolicy::kOnLost;
  int max = 3;  // re-runs after the first attempt
};

/// What a user asks for. Resource fields are per replica.
struct JobSpec {
  std::string name;
  std::vector<std::string> command;  // argv; never run through a shell
  int replicas = 1;
  int gpus = 0;                // whole GPUs per replica (1 when gpu_milli is set)
  std::string gpu_model;       // "" = any; "A100|H100"; "A100-80GB"
  int gpu_milli = 0;           // 1..999: a share of one GPU; 0 = whole GPUs
  int64_t gpu_memory_mib = 0;  // minimum GPU memory per GPU, or the share's memory
  int64_t cpu_milli = 1000;
  int64_t memory_mib = 0;  // 0 = no reservation and no limit
  std::string tenant = "default";
  std::string priority = "normal";  // a priority class: low, normal, high or from the config
  CapacityClass capacity_class = CapacityClass::kAny;
  // The most the job pays per GPU-hour (USD): nodes whose known price per GPU-hour is higher
  // are not used for it; nodes without a price are. 0 = no limit.
  double max_price = 0;
  std::map<std::string, std::string> node_selector;
  int64_t max_runtime_ms = 0;  // 0 = unlimited
  // The most the job may cost over all its attempts, in USD (docs/cost.md, "max_cost"): it is
  // stopped before its cost would pass it, and with a max_runtime it is placed only where
  // max_runtime cannot pass it. 0 = no limit.
  double max_cost = 0;
  // The user's estimate of the run time, for queue policy sjf; stops nothing. 0 = none.
  int64_t expected_runtime_ms = 0;
  RestartSpec restart;
  int64_t grace_period_ms = 30'000;
  // How long its GPUs may stay idle before they are handed back (docs/interruptions.md):
  // 0 = the tenant's or the server's window; kIdleTimeoutOff = never (refused where an
  // administrator set a maximum).
  int64_t idle_timeout_ms = 0;
  std::map<std::string, std::string> env;
  std::string workdir;  // absolute; the client fills in its own working directory
  // The image to run in and its options (docs/containers.md); no image = a host process.
  ContainerSpec container;

  /// GPUs per replica counting a share as one GPU.
  int gpus_per_replica() const { return gpu_milli > 0 ? 1 : gpus; }
};

/// JobSpec::idle_timeout_ms for "off": the job's GPUs are never reclaimed for idleness.
inline constexpr int64_t kIdleTimeoutOff = -1;

/// Hard limits on a spec, so that absurd values are rejected with a clear message.
struct JobSpecLimits {
  static constexpr int kMaxReplicas = 1024;
  static constexpr double kMaxCostUsd = 1e9;
  static constexpr int kMaxGpusPerReplica = 64;
  static constexpr int64_t kMaxCpuMilli = 1024 * 1000;
  static constexpr size_t kMaxNameLength = 128;
  static constexpr size_t kMaxCommandBytes = 128 * 1024;
  static constexpr size_t kMaxEnvBytes = 128 * 1024;
  static constexpr size_t kMaxEnvVars = 1024;
  static constexpr size_t kMaxCommandArgs = 16 * 1024;
  static constexpr size_t kMaxNodeSelectorLabels = 64;
  static constexpr int kMaxRestarts = 100;
  static constexpr int64_t kMaxGracePeriodMs = 3'600'000;
  static constexpr int64_t kMinIdleTimeoutMs = 1'000;
  static constexpr int64_t kMaxIdleTimeoutMs = 30LL * 86'400'000;
};

/// Reads a spec from a JSON object, rejecting unknown fields and wrong types, then validates it.
/// Durations are strings ("30s", "1h") or seconds; sizes are strings ("16GiB") or MiB.
Result<JobSpec> job_spec_from_json(const nlohmann::json& j);

/// Checks every field's range and consistency; fills in defaults (name from the command).
Status validate_job_spec(JobSpec& spec);

/// The spec as JSON, in the same schema job_spec_from_json reads.
nlohmann::json job_spec_to_json(const JobSpec& spec);

/// Whether s is valid UTF-8 (specs must be; YAML input is not checked by its parser).
bool is_valid_utf8(std::string_view s);

/// Whether a priority class name is well formed: 1..32 lowercase letters, digits or '-'.
bool valid_priority_name(const std::string& name);

}  // namespace gpucloud
