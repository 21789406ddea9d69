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
  // A MIG device ("A100-80GB/1g.10gb") is matched only by a constraint that names its profile.
  size_t slash = model.find('/');
  if (constraint.empty()) return slash == std::string_view::npos;
  // Case-insensitive, without allocating: the scheduler asks this for every GPU it considers.
  auto same = [](char a, char b) {  // ASCII case folding: model names are ASCII
    auto fold = [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; };
    return fold(a) == fold(b);
  };
  auto equal_ci = [&](std::string_view x, std::string_view y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!same(x[i], y[i])) return false;
    return true;
  };
  size_t start = 0;
  while (start <= constraint.size()) {
    size_t bar = constraint.find('|', start);
    if (bar == std::string_view::npos) bar = constraint.size();
    std::string_view alt = constraint.substr(start, bar - start);
    start = bar + 1;
    if (alt.empty()) continue;
    if (equal_ci(alt, model)) return true;
    size_t alt_slash = alt.find('/');
    if ((alt_slash == std::string_view::npos) != (slash == std::string_view::npos)) continue;
    if (alt_slash != std::string_view::npos) {
      // "A100-80GB/1g.10gb" matches "A100/1g.10gb": the profile implies the GPU's memory.
      std::string_view alt_parent = alt.substr(0, alt_slash), parent = model.substr(0, slash);
      if (!equal_ci(alt.substr(alt_slash + 1), model.substr(slash + 1))) continue;
      if (equal_ci(alt_parent, parent)) return true;
      if (alt_parent.size() > parent.size() + 3 && alt_parent[parent.size()] == '-' &&
          equal_ci(alt_parent.substr(0, parent.size()), parent) && same(alt_parent.back(), 'B') &&
          same(alt_parent[alt_parent.size() - 2], 'G')) {
        std::string_view digits =
            alt_parent.substr(parent.size() + 1, alt_parent.size() - parent.size() - 3);
        bool all_digits = digits.size() <= 5;
        for (char c : digits) all_digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
        if (all_digits) return true;
      }
      continue;
    }
    // MODEL-NGB
    if (alt.size() > model.size() + 3 && equal_ci(alt.substr(0, model.size()), model) &&
        alt[model.size()] == '-' && same(alt[alt.size() - 2], 'G') && same(alt.back(), 'B')) {
      std::string_view digits = alt.substr(model.size() + 1, alt.size() - model.size() - 3);
      if (digits.empty() || digits.size() > 5) continue;
      double want_gib = 0;
      bool all_digits = true;
      for (char c : digits) {
        all_digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
        want_gib = want_gib * 10 + (c - '0');
      }
      if (!all_digits) continue;
      double have_gib = memory_mib / 1024.0;
      if (std::fabs(have_gib - want_gib) <= std::max(1.0, want_gib * 0.07)) return true;
    }
  }
  return false;
}

}  // namespace gpucloud
