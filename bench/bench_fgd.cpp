// bench_fgd: the FGD experiment's speed. Runs every policy for seeds 42–51 on the full Alibaba
// default trace and prints per-policy seconds, then JSON on the last line.
// Usage: bench_fgd [TRACE_DIR]  (default: ../shared/traces/alibaba-gpu-v2023/ from the repo root)
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/fgd_experiment.h"

using namespace gpucloud;

int main(int argc, char** argv) {
  std::filesystem::path dir =
      argc > 1 ? std::filesystem::path(argv[1])
               : std::filesystem::path(GPUCLOUD_SOURCE_DIR) / "../shared/traces/alibaba-gpu-v2023";
  auto nodes_file = dir / "openb_node_list_gpu_node.csv";
  auto pods_file = dir / "openb_pod_list_default.csv";
  if (!std::filesystem::exists(nodes_file) || !std::filesystem::exists(pods_file)) {
    fmt::print("bench_fgd: skipped: no trace at {} (give the trace folder as the argument)\n",
               dir.string());
    fmt::print("{}\n", nlohmann::json{{"skipped", true}, {"trace_dir", dir.string()}}.dump());
    return 0;
  }
  auto cluster = sim::load_alibaba_nodes(nodes_file.string());
  if (!cluster.ok()) return fmt::print(stderr, "{}\n", cluster.error().message), 1;
  auto pods = sim::load_alibaba_pods(pods_file.string(), *cluster);
  if (!pods.ok()) return fmt::print(stderr, "{}\n", pods.error().message), 1;
  sim::FgdSetup setup = sim::FgdSetup::make(std::move(*cluster), std::move(*pods));

  using Clock = std::chrono::steady_clock;
  nlohmann::json policies = nlohmann::json::object();
  double all_seconds = 0, worst_run = 0;
  for (sched::Policy policy : sched::fgd_experiment_policies()) {
    std::vector<sim::SeedRun> runs;
    double total = 0, slowest = 0;
    for (uint64_t seed = 42; seed <= 51; ++seed) {
      auto start = Clock::now();
      runs.push_back(sim::run_fgd_seed(setup, policy, seed, 1.3));
      double s = std::chrono::duration<double>(Clock::now() - start).count();
      total += s;
      slowest = std::max(slowest, s);
    }
    sim::PolicySummary summary = sim::summarize(policy, runs);
    std::string name(sched::policy_name(policy));
    fmt::print(
        "{:<12} 10 seeds {:6.3f} s  slowest run {:6.3f} s  unallocated % {:.2f} {:.2f} {:.2f}\n",
        name, total, slowest, summary.unallocated_pct[95], summary.unallocated_pct[100],
        summary.unallocated_pct[130]);
    policies[name] = {{"seconds", total},
                      {"slowest_run_seconds", slowest},
                      {"unallocated_pct",
                       {{"95", summary.unallocated_pct[95]},
                        {"100", summary.unallocated_pct[100]},
                        {"130", summary.unallocated_pct[130]}}}};
    all_seconds += total;
    worst_run = std::max(worst_run, slowest);
  }
  fmt::print("{}\n", nlohmann::json{{"bench", "fgd"},
                                    {"seeds", "42-51"},
                                    {"pods", setup.pods.size()},
                                    {"nodes", setup.cluster.nodes.size()},
                                    {"policies", policies},
                                    {"total_seconds", all_seconds},
                                    {"slowest_run_seconds", worst_run}}
                         .dump());
  return 0;
}
