#include "common/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

namespace gpucloud {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads a non-negative decimal number at the front of s; advances pos. Returns false if none.
bool read_number(std::string_view s, size_t& pos, double& out) {
  size_t start = pos;
  bool dot = false;
  while (pos < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[pos])) || (s[pos] == '.' && !dot))) {
    if (s[pos] == '.') dot = true;
    ++pos;
  }
  if (pos == start || (pos - start == 1 && dot)) return false;
  // strtod, not stod: a number too long for a double becomes HUGE_VAL (rejected as too large)
  // instead of throwing std::out_of_range.
  out = std::strtod(std::string(s.substr(start, pos - start)).c_str(), nullptr);
  return true;
}

}  // namespace

Result<int64_t> parse_duration_ms(std::string_view text) {
  static const std::vector<std::pair<std::string, double>> kUnits = {
      {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
  std::string s = lower(text);
  if (s.empty()) return invalid("empty duration; write it like 30s, 5m, 1h30m or 2d");
  if (s[0] == '-')
    return invalid(fmt::format("duration '{}' is negative; durations must be >= 0", text));
  double total = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    double value = 0;
    if (!read_number(s, pos, value))
      return invalid(fmt::format(
          "duration '{}' is not a number with a unit; write it like 30s, 5m, 1h30m or 2d", text));
    size_t unit_start = pos;
    while (pos < s.size() && std::isalpha(static_cast<unsigned char>(s[pos]))) ++pos;
    std::string unit = s.substr(unit_start, pos - unit_start);
    if (unit.empty()) {
      if (pos != s.size() || total != 0)
        return invalid(fmt::format("duration '{}' has a number without a unit", text));
      unit.assign(1, 's');  // not = "s": g++ 12 -Wrestrict false positive
    }
    double factor = 0;
    for (const auto& [name, f] : kUnits)
      if (name == unit) factor = f;
    if (factor == 0)
      return invalid(
          fmt::format("duration '{}' has unknown unit '{}'; use ms, s, m, h or d", text, unit));
    total += value * factor;
  }
  if (total > 10.0 * 365 * 86'400'000)
    return invalid(fmt::format("duration '{}' is above 10 years", text));
  return static_cast<int64_t>(std::llround(total));
}

std::string format_duration_ms(int64_t ms) {
  if (ms < 1000) return fmt::format("{}ms", ms);
  // Every non-zero part, largest first: exact, so that parse_duration_ms reads back the same
  // value (specs are stored in this form).
  static const std::pair<int64_t, const char*> kParts[] = {
      {86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}, {1, "ms"}};
  std::string out;
  for (const auto& [size, unit] : kParts) {
    if (ms < size) continue;
    out += fmt::format("{}{}", ms / size, unit);
    ms %= size;
  }
  return out;
}

Result<int64_t> parse_size_mib(std::string_view text) {
  std::string s = lower(text);
  if (s.empty()) return invalid("empty size; write it like 512MiB, 16GiB or 1TiB");
  if (s[0] == '-') return invalid(fmt::format("size '{}' is negative; sizes must be >= 0", text));
  size_t pos = 0;
  double value = 0;
  if (!read_number(s, pos, value))
    return invalid(fmt::format(
        "size '{}' is not a number with a unit; write it like 512MiB, 16GiB or 1TiB", text));
  std::string unit = s.substr(pos);
  const bool bare = unit.empty();
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();  // GB, GiB, MB -> g, gi, m
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  double factor = 0;
  if (bare || unit == "m")
    factor = 1;
  else if (unit == "k")
    factor = 1.0 / 1024;
  else if (unit == "g")
    factor = 1024;
  else if (unit == "t")
    factor = 1024.0 * 1024;
  else if (unit == "p")
    factor = 1024.0 * 1024 * 1024;
  else
    return invalid(fmt::format("size '{}' has unknown unit '{}'; use KiB, MiB, GiB, TiB or PiB",
                               text, s.substr(pos)));
  double mib = value * factor;
  if (mib > 1024.0 * 1024 * 1024) return invalid(fmt::format("size '{}' is above 1 PiB", text));
  return static_cast<int64_t>(std::ceil(mib));
}

std::string format_size_mib(int64_t mib) {
  constexpr int64_t kTiB = 1024 * 1024;
  if (mib >= kTiB && mib % kTiB == 0) return fmt::format("{}TiB", mib / kTiB);
  if (mib >= kTiB) return fmt::format("{:.1f}TiB", static_cast<double>(mib) / kTiB);
  if (mib >= 1024 && mib % 1024 == 0) return fmt::format("{}GiB", mib / 1024);
  if (mib >= 1024) return fmt::format("{:.1f}GiB", mib / 1024.0);
  return fmt::format("{}MiB", mib);
}

}  // namespace gpucloud
