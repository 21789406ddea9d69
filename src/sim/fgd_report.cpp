#include "sim/fgd_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/published.h"

namespace gpucloud::sim {

namespace {

std::string num(double v, int width = 6) {
  return std::isnan(v) ? fmt::format("{:>{}}", "-", width) : fmt::format("{:>{}.2f}", v, width);
}

nlohmann::json by_load(const std::map<int, double>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (auto [k, v] : values)
    out[std::to_string(k)] = std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
  return out;
}

std::string pod_example(const FgdSetup& setup, int index) {
  const TracePod& p = setup.pods[index];
  return fmt::format("{} (line {}: cpu {}m, {} GPU x {}m{})", p.name, p.line, p.request.cpu_milli,
                     p.request.num_gpu, p.request.gpu_milli,
                     p.gpu_spec.empty() ? "" : ", " + p.gpu_spec);
}

}  // namespace

std::string format_fgd_table(const FgdSetup& setup, const FgdRunInfo& info,
                             const std::vector<PolicySummary>& results) {
  std::string out = fmt::format(
      "FGD allocation experiment: {} nodes, {} GPUs, {} pods inflated to {:.0f} % of GPU "
      "capacity, {} seeds ({}..{}), {} typical pod types\n",
      setup.cluster.nodes.size(), setup.cluster.gpus, setup.pods.size(), info.inflation * 100,
      info.seeds.size(), info.seeds.empty() ? 0 : info.seeds.front(),
      info.seeds.empty() ? 0 : info.seeds.back(), setup.profile.types.size());
  out +=
      "Unallocated GPU % at arrival load 95/100/130 %, median over seeds.\n"
      "  ours  = measured now by gpucloud\n"
      "  paper = published by Weng et al., ATC'23 (FGD), median of seeds 42-51\n"
      "  diff  = ours - paper (ok: within the reproduction tolerance)\n";
  if (!info.published_input)
    out += fmt::format(
        "  No published figures exist for this input: they were published for {} only, "
        "recognised by content; paper and diff are empty.\n",
        kPublishedInput);
  out += "\n";
  out += fmt::format("{:<12} {:>20} {:>20} {:>20}  {:>23}  {:>7} {:>8}\n", "", "load 95 %",
                     "load 100 %", "load 130 %", "frag ratio % (ours)", "dropped", "");
  out += fmt::format("{:<12} {:>20} {:>20} {:>20}  {:>23}  {:>7} {:>8}\n", "policy",
                     "  ours  paper   diff", "  ours  paper   diff", "  ours  paper   diff",
                     "    0    95   100   130", "median", "seconds");
  for (const PolicySummary& r : results) {
    auto paper = info.published_input ? published_unallocated(r.policy) : std::nullopt;
    double tol = reproduction_tolerance(r.policy);
    std::string line = fmt::format("{:<12}", sched::policy_name(r.policy));
    bool all_ok = paper.has_value();
    for (int k : allocation_loads()) {
      double ours = r.unallocated_pct.at(k);
      double theirs = paper ? paper->at(k) : NAN;
      double diff = ours - theirs;
      all_ok = all_ok && std::fabs(diff) <= tol + 1e-9;
      line += fmt::format(" {}{}{}", num(ours), num(theirs, 7), num(diff, 7));
    }
    line += "  ";
    for (int k : fragmentation_loads()) line += num(r.frag_ratio_pct.at(k), k == 0 ? 5 : 6);
    line += fmt::format("  {:>7.0f} {:>8.2f}", r.median_dropped, r.seconds);
    if (paper) line += all_ok ? fmt::format("  ok (±{})", tol) : fmt::format("  MISS (±{})", tol);
    out += line + "\n";
  }
  out += fmt::format("\nPods that fit no node even on the empty cluster: {}\n",
                     setup.never_fit.size());
  for (size_t i = 0; i < setup.never_fit.size() && i < 5; ++i)
    out += "  " + pod_example(setup, setup.never_fit[i]) + "\n";
  out +=
      "Dropped: arrivals that fit no node when they came (counted as arrived, never retried); "
      "first ones of the first seed:\n";
  for (const PolicySummary& r : results) {
    if (r.dropped_examples.empty()) continue;
    out += fmt::format("  {:<12} {}\n", sched::policy_name(r.policy),
                       pod_example(setup, r.dropped_examples.front()));
  }
  return out;
}

nlohmann::json fgd_json(const FgdSetup& setup, const FgdRunInfo& info,
                        const std::vector<PolicySummary>& results) {
  nlohmann::json out;
  out["results"] = nlohmann::json::array();
  for (const PolicySummary& r : results) {
    nlohmann::json j;
    j["policy"] = std::string(sched::policy_name(r.policy));
    j["unallocated_pct"] = by_load(r.unallocated_pct);
    j["frag_ratio_pct"] = by_load(r.frag_ratio_pct);
    j["frag_milli_pct"] = by_load(r.frag_milli_pct);
    j["seconds"] = r.seconds;
    auto paper = info.published_input ? published_unallocated(r.policy) : std::nullopt;
    j["published_unallocated_pct"] = paper ? by_load(*paper) : nlohmann::json();
    j["dropped_median"] = r.median_dropped;
    out["results"].push_back(std::move(j));
  }
  nlohmann::json never = nlohmann::json::array();
  for (size_t i = 0; i < setup.never_fit.size() && i < 5; ++i)
    never.push_back(pod_example(setup, setup.never_fit[i]));
  out["never_fit"] = {{"count", setup.never_fit.size()}, {"examples", never}};
  out["published_input"] = info.published_input;
  out["seeds"] = info.seeds;
  out["inflation"] = info.inflation;
  return out;
}

}  // namespace gpucloud::sim
