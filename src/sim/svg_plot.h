// An SVG chart of the FGD experiment: GPU allocation vs. arrival load, one line per policy,
// with axes, tick labels, a title and a legend.
#pragma once

#include <string>
#include <vector>

#include "sim/fgd_experiment.h"

namespace gpucloud::sim {

/// The chart as a standalone SVG document (median allocation % per load, 0..max load).
std::string allocation_plot_svg(const std::vector<PolicySummary>& results,
                                const std::string& title);

}  // namespace gpucloud::sim
