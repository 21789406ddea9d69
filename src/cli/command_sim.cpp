// `gpucloud sim fgd`: the FGD allocation experiment on a node list and a pod list.
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "sim/fgd_report.h"
#include "sim/published.h"
#include "sim/svg_plot.h"

namespace gpucloud::cli {

namespace {

Result<uint64_t> parse_seed(std::string_view s, const std::string& all) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return invalid(
        fmt::format("--seeds: '{}' in '{}' is not a seed; use e.g. 42-51 or 1,2,3", s, all));
  return v;
}

/// "42-51", "7" or "1,2,5" (ranges and single seeds, comma-separated).
Result<std::vector<uint64_t>> parse_seeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    size_t dash = part.find('-');
    auto lo = parse_seed(part.substr(0, dash), text);
    if (!lo.ok()) return lo.error();
    auto hi = dash == std::string_view::npos ? lo : parse_seed(part.substr(dash + 1), text);
    if (!hi.ok()) return hi.error();
    if (*hi < *lo || *hi - *lo > 10000)
      return invalid(
          fmt::format("--seeds: '{}' is not an increasing range of at most 10000", part));
    for (uint64_t s = *lo; s <= *hi; ++s) seeds.push_back(s);
  }
  if (seeds.empty()) return invalid("--seeds: no seeds given; use e.g. 42-51");
  return seeds;
}

Result<std::vector<sched::Policy>> parse_policies(const std::string& name) {
  if (name == "all") {
    // The six policies of the FGD paper's table, then gpucloud's own `default`.
    std::vector<sched::Policy> all = sched::fgd_experiment_policies();
    all.push_back(sched::Policy::kDefault);
    return all;
  }
  auto p = sched::parse_policy(name);
  if (!p)
    return invalid(fmt::format(
        "--policy: unknown policy '{}'; use random, dot-product, clustering, packing, best-fit, "
        "fgd, default or all",
        name));
  return std::vector<sched::Policy>{*p};
}

}  // namespace

int cmd_sim_fgd(const SimFgdOptions& o) {
  // Bad flags exit with kExitUsage, like every other command; bad files with kExitError.
  auto usage = [](const std::string& message) {
    fail(message);
    return kExitUsage;
  };
  auto seeds = parse_seeds(o.seeds);
  if (!seeds.ok()) return usage(seeds.error().message);
  auto policies = parse_policies(o.policy);
  if (!policies.ok()) return usage(policies.error().message);
  if (!(o.inflation > 0 && o.inflation <= 10))
    return usage(
        fmt::format("--inflation: {} must be above 0 and at most 10 (1.3: 130 %)", o.inflation));
  auto cluster = sim::load_alibaba_nodes(o.nodes);
  if (!cluster.ok()) return fail(cluster.error().message);
  auto pods = sim::load_alibaba_pods(o.pods, *cluster);
  if (!pods.ok()) return fail(pods.error().message);
  bool published_input = sim::is_published_input(*cluster, *pods);
  sim::FgdSetup setup = sim::FgdSetup::make(std::move(*cluster), std::move(*pods));
  sim::FgdRunInfo info{*seeds, o.inflation, o.nodes, o.pods, published_input};

  std::vector<sim::PolicySummary> results;
  for (sched::Policy policy : *policies) {
    auto start = std::chrono::steady_clock::now();
    std::vector<sim::SeedRun> runs;
    for (uint64_t seed : *seeds)
      runs.push_back(sim::run_fgd_seed(setup, policy, seed, o.inflation));
    sim::PolicySummary summary = sim::summarize(policy, runs);
    summary.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    results.push_back(std::move(summary));
  }
  if (!o.plot.empty()) {
    std::ofstream out(o.plot, std::ios::trunc);
    out << sim::allocation_plot_svg(
        results, fmt::format("GPU allocation vs. arrival load ({} pods, {} GPUs, {} seeds)",
                             setup.pods.size(), setup.cluster.gpus, seeds->size()));
    if (!out.good()) return fail(fmt::format("--plot: cannot write '{}'", o.plot));
  }
  if (o.json)
    std::cout << sim::fgd_json(setup, info, results).dump(2) << "\n";
  else
    std::cout << sim::format_fgd_table(setup, info, results);
  return 0;
}

}  // namespace gpucloud::cli
