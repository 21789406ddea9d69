#include "sim/trace_cells.h"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <cmath>

#include "sim/trace.h"

namespace gpucloud::sim {

Result<int64_t> seconds_cell_ms(const CsvTable& t, size_t r, int c) {
  std::string_view s = t.text(r, c);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    return invalid(fmt::format("{}column '{}': '{}' is not a number of seconds", t.where(r, c),
                               t.header(c), s));
  if (v < 0)
    return invalid(
        fmt::format("{}column '{}': {} is negative; times and durations must be 0 or more",
                    t.where(r, c), t.header(c), s));
  if (v > static_cast<double>(kMaxTraceSeconds))
    return invalid(
        fmt::format("{}column '{}': {} seconds is too large", t.where(r, c), t.header(c), s));
  return static_cast<int64_t>(std::llround(v * 1000));
}

Result<int> priority_cell(const CsvTable& t, size_t r, int c) {
  std::string_view s = t.text(r, c);
  if (s == "low") return kPriorityLow;
  if (s == "normal") return kPriorityNormal;
  if (s == "high") return kPriorityHigh;
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size())
    return invalid(fmt::format("{}column '{}': {} is out of range; a priority is within {}..{}",
                               t.where(r, c), t.header(c), s, INT_MIN, INT_MAX));
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return invalid(fmt::format("{}column '{}': '{}' is not low, normal, high or a whole number",
                               t.where(r, c), t.header(c), s));
  return v;
}

Result<CapacityClass> capacity_class_cell(const CsvTable& t, size_t r, int c) {
  std::string_view s = t.text(r, c);
  if (s == "on-demand") return CapacityClass::kOnDemand;
  if (s == "spot") return CapacityClass::kSpot;
  if (s == "any") return CapacityClass::kAny;
  return invalid(fmt::format("{}column '{}': '{}' is not on-demand, spot or any", t.where(r, c),
                             t.header(c), s));
}

}  // namespace gpucloud::sim
