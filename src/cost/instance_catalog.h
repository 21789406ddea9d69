// The instance price catalog (docs/cost.md, "Price catalog"): one row per cloud, instance type
// and region with the whole instance's on-demand and spot prices in USD per hour, in the CSV
// format of deploy/catalog/gpu-prices.csv. Loaded by the server (--catalog) to price nodes
// from their labels.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "common/result.h"

namespace gpucloud::cost {

/// One instance type in one region.
struct InstanceOffer {
  std::string cloud;
  std::string instance_type;
  std::string region;
  std::string gpu_model;  // e.g. "A100-40GB"
  int gpus = 0;
  double on_demand_usd_per_hour = 0;
  double spot_usd_per_hour = -1;  // -1: the source has no spot price
  int line = 0;                   // where it came from, for messages
};

/// What a catalog file may hold at most; above any of them loading fails with the limit.
struct CatalogLimits {
  size_t max_bytes = 16u << 20;  // the whole file
  size_t max_rows = 200'000;
  size_t max_field_bytes = 256;  // any one field
};

/// Prices by (cloud, instance type, region).
class InstanceCatalog {
 public:
  /// Reads and validates a catalog file. Errors name file:line:column, the column and the fix.
  static Result<InstanceCatalog> load(const std::string& path, const CatalogLimits& limits = {});
  /// Validates CSV text already in memory; `file` names it in messages.
  static Result<InstanceCatalog> parse(std::string text, const std::string& file,
                                       const CatalogLimits& limits = {});

  /// The offer of an instance type in a region, or nothing when the catalog has none.
  const InstanceOffer* find(const std::string& cloud, const std::string& instance_type,
                            const std::string& region) const;
  size_t size() const { return offers_.size(); }
  const std::string& file() const { return file_; }

  /// (cloud, instance_type, region).
  using Key = std::tuple<std::string, std::string, std::string>;

 private:
  std::string file_;
  std::map<Key, InstanceOffer> offers_;
};

}  // namespace gpucloud::cost
