#include "model/gpu_model.h"

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

namespace gpucloud {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && upper(s.substr(0, prefix.size())) == upper(prefix);
}

}  // namespace

std::string canonical_gpu_model(std::string_view name) {
  std::string_view rest = name;
  bool nvidia = false;
  for (std::string_view prefix : {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "}) {
    if (starts_with_ci(rest, prefix)) {
      rest.remove_prefix(prefix.size());
      nvidia = true;
    }
  }
  // "RTX 4090", "RTX A6000": join the family word with the number.
  std::string joined;
  if (starts_with_ci(rest, "RTX ")) {
    joined = "RTX";
    rest.remove_prefix(4);
    nvidia = true;
  }
  size_t end = 0;
  while (end < rest.size() && rest[end] != ' ' && rest[end] != '-' && rest[end] != '_') ++end;
  std::string token = upper(rest.substr(0, end));
  if (!nvidia || token.empty()) return std::string(name);
  return joined + token;
}

bool gpu_model_matches(std::string_view constraint, std::string_view model, int64_t memory_mib) {
  if (constraint.empty()) return true;
  std::string model_upper = upper(model);
  size_t start = 0;
  while (start <= constraint.size()) {
    size_t bar = constraint.find('|', start);
    if (bar == std::string_view::npos) bar = constraint.size();
    std::string alt = upper(constraint.substr(start, bar - start));
    start = bar + 1;
    if (alt.empty()) continue;
    if (alt == model_upper) return true;
    // MODEL-NGB
    if (alt.size() > model_upper.size() + 3 &&
        alt.compare(0, model_upper.size(), model_upper) == 0 && alt[model_upper.size()] == '-' &&
        alt.ends_with("GB")) {
      std::string digits = alt.substr(model_upper.size() + 1, alt.size() - model_upper.size() - 3);
      if (digits.empty() || digits.size() > 5) continue;
      bool all_digits = true;
      for (char c : digits) all_digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
      if (!all_digits) continue;
      double want_gib = std::stod(digits);
      double have_gib = memory_mib / 1024.0;
      if (std::fabs(have_gib - want_gib) <= std::max(1.0, want_gib * 0.07)) return true;
    }
  }
  return false;
}

}  // namespace gpucloud
