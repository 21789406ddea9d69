// The price catalog of `gpucloud sim replay --prices` (docs/sim.md, "Price catalog"): dollars
// per GPU-hour per GPU model, as CSV (gpu_model,usd_per_gpu_hour) or YAML
// (usd_per_gpu_hour: {A100: 1.8, T4: 0.35}). The model `*` prices every model not listed.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpucloud::sim {

/// Dollars per GPU-hour by GPU model.
class PriceCatalog {
 public:
  /// Reads a catalog file (.yaml/.yml as YAML, anything else as CSV).
  static Result<PriceCatalog> load(const std::string& path);
  /// Reads CSV text; `file` names it in messages.
  static Result<PriceCatalog> parse_csv(std::string text, const std::string& file);
  /// Reads YAML text; `file` names it in messages.
  static Result<PriceCatalog> parse_yaml(const std::string& text, const std::string& file);

  /// The price of one GPU-hour of `model`, or nothing when neither it nor `*` is listed.
  std::optional<double> usd_per_gpu_hour(const std::string& model) const;
  /// Error naming the first of `models` without a price and how to add one.
  Status check_covers(const std::vector<std::string>& models) const;

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::map<std::string, double> prices_;
};

}  // namespace gpucloud::sim
