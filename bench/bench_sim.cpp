// bench_sim: the simulator's speed on the full Alibaba trace.
//  1. the FGD experiment: one (policy, seed) run per policy, and all 7 policies × seeds 42–51;
//  2. a replay of 100,000 jobs from `sim gen` (shapes of the default pod list, a rate that offers
//     about 90 % of the GPUs by the mean shape and mean duration)
//     on 1,500 nodes (the node list's shapes, repeated), policy `default`.
// Prints one line per figure, then JSON on the last line.
// Usage: bench_sim [TRACE_DIR]  (default: ../shared/traces/alibaba-gpu-v2023/ from the repo root)
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/cluster.h"
#include "sim/fgd_experiment.h"
#include "sim/replay.h"
#include "sim/replay_report.h"
#include "sim/trace_gen.h"

using namespace gpucloud;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

nlohmann::json bench_fgd(const sim::FgdSetup& setup) {
  std::vector<sched::Policy> policies = sched::fgd_experiment_policies();
  policies.push_back(sched::Policy::kDefault);
  nlohmann::json one = nlohmann::json::object();
  double all = 0, slowest = 0;
  for (sched::Policy policy : policies) {
    double first = 0;
    for (uint64_t seed = 42; seed <= 51; ++seed) {
      auto start = Clock::now();
      sim::run_fgd_seed(setup, policy, seed, 1.3);
      double s = since(start);
      if (seed == 42) first = s;
      all += s;
      slowest = std::max(slowest, s);
    }
    std::string name(sched::policy_name(policy));
    fmt::print("fgd {:<12} one run (seed 42) {:6.3f} s\n", name, first);
    one[name] = first;
  }
  fmt::print("fgd all {} policies x 10 seeds {:6.2f} s (slowest run {:.3f} s)\n", policies.size(),
             all, slowest);
  return {{"one_run_seconds", one},
          {"slowest_run_seconds", slowest},
          {"all_policies_10_seeds_seconds", all}};
}

nlohmann::json bench_replay(const std::filesystem::path& dir) {
  auto nodes = sim::load_cluster((dir / "openb_node_list_gpu_node.csv").string());
  auto pods = sim::load_trace((dir / "openb_pod_list_default.csv").string());
  if (!nodes.ok() || !pods.ok()) {
    fmt::print(stderr, "{}\n", !nodes.ok() ? nodes.error().message : pods.error().message);
    return {{"error", "cannot load the trace"}};
  }
  sim::SimCluster cluster;
  for (size_t i = 0; i < 1500; ++i) {
    const sched::NodeState& n = nodes->nodes[i % nodes->nodes.size()];
    sched::NodeState copy =
        sim::make_node(fmt::format("node-{:04}", i), static_cast<int>(n.gpus.size()),
                       n.gpus.empty() ? "" : n.gpus[0].model, 0, n.cpu_milli, n.memory_mib);
    copy.labels = n.labels;
    cluster.nodes.push_back(std::move(copy));
  }
  sim::GenOptions g;
  g.jobs = 100'000;
  g.seed = 42;
  g.tenants = 8;
  double mean_gpus = 0;
  for (const sim::TraceJob& j : pods->jobs)
    mean_gpus += static_cast<double>(j.replicas * j.gpu_milli_per_replica()) / 1000;
  mean_gpus /= static_cast<double>(pods->jobs.size());
  double mean_duration_s = g.duration_median_s * std::exp(g.duration_sigma * g.duration_sigma / 2);
  g.rate_per_s = 0.9 * static_cast<double>(cluster.gpus()) / (mean_gpus * mean_duration_s);
  sim::Trace trace{"generated", sim::generate_trace(pods->jobs, g)};

  auto start = Clock::now();
  auto result = sim::run_replay(cluster, trace, {"default", 42});
  double seconds = since(start);
  if (!result.ok()) return {{"error", result.error().message}};
  nlohmann::json report = sim::replay_json(*result, nullptr);
  fmt::print(
      "replay {} jobs on {} nodes ({} GPUs, rate {:.3f}/s): {:.3f} s, {} schedule calls, "
      "GPU allocation while jobs arrive {:.1f} %, p95 queueing delay {:.0f} s\n",
      g.jobs, cluster.nodes.size(), cluster.gpus(), g.rate_per_s, seconds, result->schedule_calls,
      report["gpu_allocation_pct"]["while_arriving"].get<double>(),
      report["queueing_delay_s"]["p95"].get<double>());
  return {{"jobs", g.jobs},
          {"nodes", cluster.nodes.size()},
          {"gpus", cluster.gpus()},
          {"rate_per_s", g.rate_per_s},
          {"policy", "default"},
          {"seconds", seconds},
          {"schedule_calls", result->schedule_calls},
          {"gpu_allocation_pct", report["gpu_allocation_pct"]},
          {"queueing_delay_s", report["queueing_delay_s"]},
          {"never_fit", result->never_fit.size()}};
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir =
      argc > 1 ? std::filesystem::path(argv[1])
               : std::filesystem::path(GPUCLOUD_SOURCE_DIR) / "../shared/traces/alibaba-gpu-v2023";
  auto nodes_file = dir / "openb_node_list_gpu_node.csv";
  auto pods_file = dir / "openb_pod_list_default.csv";
  if (!std::filesystem::exists(nodes_file) || !std::filesystem::exists(pods_file)) {
    fmt::print("bench_sim: skipped: no trace at {} (give the trace folder as the argument)\n",
               dir.string());
    fmt::print("{}\n", nlohmann::json{{"skipped", true}, {"trace_dir", dir.string()}}.dump());
    return 0;
  }
  auto cluster = sim::load_alibaba_nodes(nodes_file.string());
  if (!cluster.ok()) return fmt::print(stderr, "{}\n", cluster.error().message), 1;
  auto pods = sim::load_alibaba_pods(pods_file.string(), *cluster);
  if (!pods.ok()) return fmt::print(stderr, "{}\n", pods.error().message), 1;
  sim::FgdSetup setup = sim::FgdSetup::make(std::move(*cluster), std::move(*pods));
  nlohmann::json fgd = bench_fgd(setup);
  nlohmann::json replay = bench_replay(dir);
  fmt::print("{}\n", nlohmann::json{{"bench", "sim"}, {"fgd", fgd}, {"replay", replay}}.dump());
  return 0;
}
