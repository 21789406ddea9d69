// The FGD paper's published results (Weng et al., ATC'23; shared/fgd-experiment.md): unallocated
// GPU % at loads 95/100/130, median of seeds 42–51 on openb_pod_list_default.
#pragma once

#include <map>
#include <optional>

#include "sched/policies/policy_scores.h"

namespace gpucloud::sim {

/// The published unallocated GPU % per load for a policy of the paper's table, or nothing.
std::optional<std::map<int, double>> published_unallocated(sched::Policy policy);

/// How far from the published medians a faithful reproduction should be, in percentage points:
/// 0.3 for best-fit and fgd, 0.6 for dot-product, clustering and packing, 1.5 for random (whose
/// choices in their simulator also depend on the order of a parallel filter).
double reproduction_tolerance(sched::Policy policy);

}  // namespace gpucloud::sim
