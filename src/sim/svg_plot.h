// SVG charts: GPU allocation vs. arrival load for the FGD experiment, and a general line chart
// (used by the replay's queue and GPU-use plot). Both have axes, tick labels, a title and a
// legend.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/fgd_experiment.h"

namespace gpucloud::sim {

/// The chart as a standalone SVG document (median allocation % per load, 0..max load).
std::string allocation_plot_svg(const std::vector<PolicySummary>& results,
                                const std::string& title);

/// One line of a LineChart: (x, y) points in ascending x.
struct ChartSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;
  bool right_axis = false;  // measured on the right y axis
  bool step = false;        // drawn as a step function (the value holds until the next x)
};

/// A line chart with a left y axis from 0 to y_max and, if a series uses it, a right one.
struct LineChart {
  std::string title, x_label, y_label, y2_label;
  double y_max = 0;   // 0: from the data
  double y2_max = 0;  // 0: from the data
  std::vector<ChartSeries> series;
};

/// The chart as a standalone SVG document; x runs from the smallest to the largest x.
std::string line_chart_svg(const LineChart& chart);

}  // namespace gpucloud::sim
