// Reports of the FGD experiment: a text table beside the published numbers, and JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "sim/fgd_experiment.h"

namespace gpucloud::sim {

/// What the run was, for the report's heading.
struct FgdRunInfo {
  std::vector<uint64_t> seeds;
  double inflation = 1.3;
  std::string nodes_file, pods_file;
  bool published_input = false;  // is_published_input(): the paper's figures apply
};

/// The text table: per policy, our median unallocated GPU % at loads 95/100/130 next to the
/// published one and the difference (only for the published input; otherwise a line says that
/// no published figures exist for it), the fragmentation ratio at 0/95/100/130, dropped pods and
/// seconds; then the pods that fit no node, with examples.
std::string format_fgd_table(const FgdSetup& setup, const FgdRunInfo& info,
                             const std::vector<PolicySummary>& results);

/// {"results":[{"policy", "unallocated_pct":{"95","100","130"}, "frag_ratio_pct":{"0","95",
/// "100","130"}, "frag_milli_pct":{...}, "seconds", "published_unallocated_pct" (null unless
/// the input is the published one), "dropped_median"}], "never_fit":{"count","examples"},
/// "published_input", "seeds", "inflation"}; NaN as null.
nlohmann::json fgd_json(const FgdSetup& setup, const FgdRunInfo& info,
                        const std::vector<PolicySummary>& results);

}  // namespace gpucloud::sim
