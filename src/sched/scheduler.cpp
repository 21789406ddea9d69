#include "sched/scheduler.h"

#include <fmt/format.h>

#include "common/units.h"
#include "sched/cluster_scheduler.h"
#include "sched/fit.h"

namespace gpucloud::sched {

const std::vector<std::string>& scheduler_policy_names() {
  static const std::vector<std::string> kNames = {
      "default", "first-fit", "random", "dot-product", "clustering", "packing", "best-fit", "fgd"};
  return kNames;
}

Result<std::unique_ptr<Scheduler>> create_scheduler(const PolicySettings& settings) {
  if (auto st = validate_queue_settings(settings); !st.ok()) return st.error();
  if (auto policy = parse_placement_policy(settings.policy))
    return std::unique_ptr<Scheduler>(new ClusterScheduler(*policy, settings));
  std::string names;
  for (const auto& name : scheduler_policy_names()) names += (names.empty() ? "" : ", ") + name;
  return invalid(fmt::format("unknown scheduling policy '{}'; known: {}", settings.policy, names));
}

Status validate_queue_settings(const PolicySettings& settings) {
  const std::string& q = settings.queue_policy;
  if (q != "fifo" && q != "sjf" && q != "las")
    return invalid(fmt::format("unknown queue policy '{}'; known: fifo, sjf, las", q));
  const auto& t = settings.las_thresholds_gpu_s;
  if (t.size() > kMaxLasThresholds)
    return invalid(fmt::format("las thresholds: {} given, at most {} (levels are coarse steps)",
                               t.size(), kMaxLasThresholds));
  for (size_t i = 0; i < t.size(); ++i) {
    if (!(t[i] > 0 && t[i] <= kMaxLasThresholdGpuS))
      return invalid(fmt::format("las thresholds: {} is not a number of GPU-seconds in (0, {:g}]",
                                 t[i], kMaxLasThresholdGpuS));
    if (i > 0 && t[i] <= t[i - 1])
      return invalid(fmt::format(
          "las thresholds: {} follows {}; give them in ascending order, e.g. 3600,36000", t[i],
          t[i - 1]));
  }
  if (settings.las_starvation_ms < 0)
    return invalid(fmt::format("las starvation limit: {} ms is negative; 0 turns the guard off",
                               settings.las_starvation_ms));
  return {};
}

Status check_satisfiable(const JobRequest& request, const std::vector<NodeState>& nodes) {
  if (nodes.empty()) return {};  // nothing registered yet: the job waits for nodes
  // Prices change (and cheaper nodes join): a job whose max_price no node meets today waits,
  // with the price as its pending reason, instead of being refused.
  JobRequest req = request;
  req.max_price = 0;
  std::string first_why;
  int most_gpus = 0;
  std::string most_gpus_node, most_gpus_model;
  for (const auto& node : nodes) {
    NodeState empty = node;
    empty.schedulable = true;
    for (auto& g : empty.gpus) g.used_milli = 0, g.used_memory_mib = 0;
    empty.cpu_used_milli = 0;
    empty.memory_used_mib = 0;
    std::string why;
    if (node_could_fit(req, empty, &why) && choose_gpus(req, empty)) return {};
    if (first_why.empty()) first_why = node.name + ": " + why;
    JobRequest any_count = req;
    any_count.gpus = req.gpus > 0 ? 1 : 0;
    any_count.gpu_milli = 0;
    int matching = 0;
    for (const auto& g : empty.gpus) matching += gpu_matches(any_count, g) ? 1 : 0;
    if (matching > most_gpus)
      most_gpus = matching, most_gpus_node = node.name, most_gpus_model = node.gpus[0].model;
  }
  if (req.gpus > most_gpus && most_gpus > 0)
    return Error{ErrorCode::kUnsatisfiable,
                 fmt::format("gpus: {} requested but the largest matching node ({}) has {}; ask "
                             "for --gpus {} or split the job into replicas",
                             req.gpus, most_gpus_node, most_gpus, most_gpus)};
  if (req.gpus > 0 && most_gpus == 0)
    return Error{ErrorCode::kUnsatisfiable,
                 fmt::format("gpu_model: no node has a GPU matching '{}'{}; see gpucloud nodes for "
                             "the models on offer",
                             req.gpu_model.empty() ? "any" : req.gpu_model,
                             req.gpu_memory_mib ? fmt::format(" with {} memory",
                                                              format_size_mib(req.gpu_memory_mib))
                                                : "")};
  int64_t max_cpu = 0, max_mem = 0;
  for (const auto& node : nodes)
    max_cpu = std::max(max_cpu, node.cpu_milli), max_mem = std::max(max_mem, node.memory_mib);
  if (req.cpu_milli > max_cpu)
    return Error{
        ErrorCode::kUnsatisfiable,
        fmt::format(
            "cpus: {:g} requested but the largest node has {:g}; ask for --cpus {:g} or less",
            req.cpu_milli / 1000.0, max_cpu / 1000.0, max_cpu / 1000.0)};
  if (req.memory_mib > max_mem)
    return Error{
        ErrorCode::kUnsatisfiable,
        fmt::format("memory: {} requested but the largest node has {}; ask for --mem {} or less",
                    format_size_mib(req.memory_mib), format_size_mib(max_mem),
                    format_size_mib(max_mem))};
  return Error{ErrorCode::kUnsatisfiable,
               fmt::format("no node can ever run this job ({})", first_why)};
}

JobRequest JobRequest::from_spec(const std::string& job_id, const JobSpec& spec, TimeMs created_at,
                                 int priority) {
  JobRequest r;
  r.job_id = job_id;
  r.tenant = spec.tenant;
  r.replicas = spec.replicas;
  r.gpus = spec.gpus_per_replica();
  r.gpu_milli = spec.gpu_milli;
  r.gpu_memory_mib = spec.gpu_memory_mib;
  r.gpu_model = spec.gpu_model;
  r.cpu_milli = spec.cpu_milli;
  r.memory_mib = spec.memory_mib;
  r.node_selector = spec.node_selector;
  r.capacity_class = spec.capacity_class;
  r.max_price = spec.max_price;
  // A max_cost with a max_runtime caps the price per GPU-hour: at most max_cost over the whole
  // run time on all its GPUs (a share counts its fraction).
  double gpu_hours = static_cast<double>(spec.max_runtime_ms) / 3'600'000.0 * spec.replicas *
                     (spec.gpu_milli > 0 ? spec.gpu_milli / 1000.0 : spec.gpus);
  if (spec.max_cost > 0 && gpu_hours > 0) {
    double cap = spec.max_cost / gpu_hours;
    if (r.max_price <= 0 || cap < r.max_price) {
      r.max_price = cap;
      r.price_cap_from_cost = true;
    }
  }
  r.priority = priority;
  r.created_at = created_at;
  r.max_runtime_ms = spec.max_runtime_ms;
  r.expected_runtime_ms = spec.expected_runtime_ms;
  return r;
}

}  // namespace gpucloud::sched
