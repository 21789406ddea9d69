// The `cost:` section of the server's config file (docs/cost.md): how a job's share of a node
// is weighed and what owned hardware costs per hour.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/result.h"

namespace gpucloud::cost {

/// How much each resource counts in a job's share of its node (weights 0..1000). With the
/// default a job pays its share of the node's GPUs only.
struct ShareWeights {
  double gpu = 1;
  double cpu = 0;
  double memory = 0;
};

/// What owned hardware costs, in one of two forms (docs/cost.md, "Owned hardware"):
/// amortised per node: (purchase_usd / (years * 8760) + power_watts / 1000 * usd_per_kwh) *
/// overhead; or a fleet's fixed yearly cost charged per use: annual_usd / (fleet_gpus * 8760 *
/// utilisation) per GPU-hour, times the node's GPUs.
struct OwnedProfile {
  double purchase_usd = 0;
  double years = 0;
  double power_watts = 0;
  double usd_per_kwh = 0;
  double overhead = 1;
  double annual_usd = 0;  // > 0: the fleet form
  double fleet_gpus = 0;
  double utilisation = 1;
  /// The node's price per hour under this profile.
  double usd_per_hour(int node_gpus) const;
};

/// The config file's cost section.
struct CostSettings {
  ShareWeights weights;
  // Profiles by name; a node names its profile with the label owned-profile=NAME, and a node
  // without a price, catalog row or label uses the profile "default" when there is one.
  std::map<std::string, OwnedProfile> owned;
};

/// Reads the `cost` mapping (the file's YAML as JSON); `where` prefixes messages, e.g.
/// "gpucloud.yaml: cost".
Result<CostSettings> cost_settings_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace gpucloud::cost
