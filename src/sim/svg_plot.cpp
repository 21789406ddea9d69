#include "sim/svg_plot.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace gpucloud::sim {

namespace {

constexpr double kLeft = 70, kTop = 50, kWidth = 620, kHeight = 420;
constexpr std::array<const char*, 8> kColors{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                             "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string allocation_plot_svg(const std::vector<PolicySummary>& results,
                                const std::string& title) {
  double max_load = 130;
  for (const PolicySummary& r : results)
    max_load = std::max(max_load, static_cast<double>(r.alloc_curve.size()) - 1);
  max_load = std::ceil(max_load / 10) * 10;
  auto x = [&](double load) { return kLeft + load / max_load * kWidth; };
  auto y = [&](double pct) { return kTop + (100 - pct) / 100 * kHeight; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"28\" font-size=\"16\" "
      "text-anchor=\"middle\">{}</text>\n",
      kLeft + kWidth + 300, kTop + kHeight + 60, kLeft + kWidth / 2, escape(title));
  for (int t = 0; t <= 100; t += 10) {  // y grid and ticks
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        kLeft, y(t), kLeft + kWidth, y(t), kLeft - 6, y(t) + 4, t);
  }
  for (int t = 0; t <= max_load; t += 10) {  // x grid and ticks
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>"
        "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
        x(t), kTop, x(t), kTop + kHeight, x(t), kTop + kHeight + 16, t);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arrival load (requested GPUs, % of "
      "capacity)</text>\n<text transform=\"translate(20,{}) rotate(-90)\" "
      "text-anchor=\"middle\">allocated GPUs (% of capacity), median over seeds</text>\n",
      kLeft, kTop, kWidth, kHeight, kLeft + kWidth / 2, kTop + kHeight + 40, kTop + kHeight / 2);
  svg += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\" "
      "stroke-dasharray=\"4 4\"/>\n",
      x(0), y(0), x(100), y(100));
  for (size_t i = 0; i < results.size(); ++i) {
    const PolicySummary& r = results[i];
    const char* color = kColors[i % kColors.size()];
    std::string points;
    for (size_t k = 0; k < r.alloc_curve.size(); ++k)
      if (!std::isnan(r.alloc_curve[k]))
        points += fmt::format("{:.1f},{:.1f} ", x(static_cast<double>(k)), y(r.alloc_curve[k]));
    svg +=
        fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                    color, points);
    double ly = kTop + 20 + 20 * static_cast<double>(i);
    std::string name(sched::policy_name(r.policy));
    auto at100 = r.unallocated_pct.find(100);
    std::string label = at100 == r.unallocated_pct.end() || std::isnan(at100->second)
                            ? name
                            : fmt::format("{} ({:.2f} % idle at 100 %)", name, at100->second);
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"3\"/>"
        "<text x=\"{}\" y=\"{:.1f}\">{}</text>\n",
        kLeft + kWidth + 12, ly, kLeft + kWidth + 32, ly, color, kLeft + kWidth + 38, ly + 4,
        escape(label));
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{:.1f}\" fill=\"#666\">dashed: all requested GPUs "
      "allocated</text>\n",
      kLeft + kWidth + 12, kTop + 30 + 20 * static_cast<double>(results.size()));
  svg += "</svg>\n";
  return svg;
}

}  // namespace gpucloud::sim

namespace gpucloud::sim {

namespace {

/// A round step (1, 2 or 5 × 10^k) giving about `ticks` intervals up to `max`.
double nice_step(double max, int ticks) {
  if (!(max > 0)) return 1;
  double raw = max / ticks;
  double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string tick_text(double v) {
  return std::fabs(v - std::round(v)) < 1e-9 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v);
}

double axis_max(double wanted, double data) {
  double m = wanted > 0 ? wanted : data;
  if (!(m > 0)) m = 1;
  double step = nice_step(m, 5);
  return std::ceil(m / step - 1e-9) * step;
}

}  // namespace

std::string line_chart_svg(const LineChart& chart) {
  double x_lo = 0, x_hi = 0, y_data = 0, y2_data = 0;
  bool first = true, has_right = false;
  for (const ChartSeries& s : chart.series) {
    has_right = has_right || s.right_axis;
    for (auto [px, py] : s.points) {
      x_lo = first ? px : std::min(x_lo, px);
      x_hi = first ? px : std::max(x_hi, px);
      first = false;
      (s.right_axis ? y2_data : y_data) = std::max(s.right_axis ? y2_data : y_data, py);
    }
  }
  if (x_hi <= x_lo) x_hi = x_lo + 1;
  double y_max = axis_max(chart.y_max, y_data), y2_max = axis_max(chart.y2_max, y2_data);
  auto x = [&](double v) { return kLeft + (v - x_lo) / (x_hi - x_lo) * kWidth; };
  auto y = [&](double v, double max) { return kTop + (1 - v / max) * kHeight; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"28\" font-size=\"16\" "
      "text-anchor=\"middle\">{}</text>\n",
      kLeft + kWidth + 330, kTop + kHeight + 60, kLeft + kWidth / 2, escape(chart.title));
  double ys = nice_step(y_max, 5);
  for (double t = 0; t <= y_max + 1e-9; t += ys)
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        kLeft, y(t, y_max), kLeft + kWidth, y(t, y_max), kLeft - 6, y(t, y_max) + 4, tick_text(t));
  if (has_right) {
    double s2 = nice_step(y2_max, 5);
    for (double t = 0; t <= y2_max + 1e-9; t += s2)
      svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\">{}</text>\n", kLeft + kWidth + 6,
                         y(t, y2_max) + 4, tick_text(t));
    svg += fmt::format(
        "<text transform=\"translate({},{}) rotate(90)\" text-anchor=\"middle\">{}</text>\n",
        kLeft + kWidth + 52, kTop + kHeight / 2, escape(chart.y2_label));
  }
  double xs = nice_step(x_hi - x_lo, 8);
  for (double t = std::ceil(x_lo / xs) * xs; t <= x_hi + 1e-9; t += xs)
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>"
        "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
        x(t), kTop, x(t), kTop + kHeight, x(t), kTop + kHeight + 16, tick_text(t));
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text "
      "transform=\"translate(20,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      kLeft, kTop, kWidth, kHeight, kLeft + kWidth / 2, kTop + kHeight + 40, escape(chart.x_label),
      kTop + kHeight / 2, escape(chart.y_label));
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& s = chart.series[i];
    const char* color = kColors[i % kColors.size()];
    double max = s.right_axis ? y2_max : y_max;
    std::string points;
    for (size_t k = 0; k < s.points.size(); ++k) {
      auto [px, py] = s.points[k];
      if (s.step && k > 0)
        points += fmt::format("{:.1f},{:.1f} ", x(px), y(s.points[k - 1].second, max));
      points += fmt::format("{:.1f},{:.1f} ", x(px), y(py, max));
    }
    svg +=
        fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                    color, points);
    double ly = kTop + 20 + 20 * static_cast<double>(i);
    double lx = kLeft + kWidth + (has_right ? 70 : 12);
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"3\"/>"
        "<text x=\"{}\" y=\"{:.1f}\">{}</text>\n",
        lx, ly, lx + 20, ly, color, lx + 26, ly + 4,
        escape(s.label + (s.right_axis && has_right ? " (right axis)" : "")));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace gpucloud::sim
