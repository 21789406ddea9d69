#include "cost/cost_settings.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/json_fields.h"

namespace gpucloud::cost {

namespace {

using json = nlohmann::json;

constexpr double kHoursPerYear = 8760;
// A number field within lo..hi, into out (left as is when absent).
Status number(const json& j, const char* key, const std::string& where, double lo, double hi,
              double& out) {
  if (!j.contains(key)) return {};
  const json& v = j.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo ||
      v.get<double>() > hi)
    return invalid(fmt::format("{}.{}: expected a number from {} to {}", where, key, lo, hi));
  out = v.get<double>();
  return {};
}

Result<OwnedProfile> owned_profile(const json& j, const std::string& where) {
  GPUCLOUD_TRY(json_known_keys(j, where,
                               {"purchase_usd", "years", "power_watts", "usd_per_kwh", "overhead",
                                "annual_usd", "fleet_gpus", "utilisation"}));
  OwnedProfile p;
  GPUCLOUD_TRY(number(j, "purchase_usd", where, 0, 1e9, p.purchase_usd));
  GPUCLOUD_TRY(number(j, "years", where, 0.1, 50, p.years));
  GPUCLOUD_TRY(number(j, "power_watts", where, 0, 1e6, p.power_watts));
  GPUCLOUD_TRY(number(j, "usd_per_kwh", where, 0, 100, p.usd_per_kwh));
  GPUCLOUD_TRY(number(j, "overhead", where, 1, 10, p.overhead));
  GPUCLOUD_TRY(number(j, "annual_usd", where, 0, 1e10, p.annual_usd));
  GPUCLOUD_TRY(number(j, "fleet_gpus", where, 1, 1e7, p.fleet_gpus));
  GPUCLOUD_TRY(number(j, "utilisation", where, 0.01, 1, p.utilisation));
  bool fleet = j.contains("annual_usd");
  if (fleet && !j.contains("fleet_gpus"))
    return invalid(fmt::format(
        "{}: annual_usd needs fleet_gpus (the GPUs that yearly cost buys), e.g. fleet_gpus: 256",
        where));
  if (fleet && (j.contains("purchase_usd") || j.contains("power_watts")))
    return invalid(fmt::format(
        "{}: give either annual_usd and fleet_gpus (a fleet's yearly cost) or purchase_usd, "
        "years, power_watts and usd_per_kwh (one node), not both",
        where));
  if (!fleet && j.contains("purchase_usd") && !j.contains("years"))
    return invalid(fmt::format("{}: purchase_usd needs years (the write-off period)", where));
  return p;
}

}  // namespace

double OwnedProfile::usd_per_hour(int node_gpus) const {
  if (annual_usd > 0)
    return annual_usd / (fleet_gpus * kHoursPerYear * utilisation) * std::max(node_gpus, 0);
  double capital = years > 0 ? purchase_usd / (years * kHoursPerYear) : 0;
  double power = power_watts / 1000 * usd_per_kwh;
  return (capital + power) * overhead;
}

Result<CostSettings> cost_settings_from_json(const json& j, const std::string& where) {
  GPUCLOUD_TRY(json_known_keys(j, where, {"weights", "owned"}));
  CostSettings s;
  if (j.contains("weights")) {
    const json& w = j.at("weights");
    std::string at = where + ".weights";
    GPUCLOUD_TRY(json_known_keys(w, at, {"gpu", "cpu", "memory"}));
    GPUCLOUD_TRY(number(w, "gpu", at, 0, 1000, s.weights.gpu));
    GPUCLOUD_TRY(number(w, "cpu", at, 0, 1000, s.weights.cpu));
    GPUCLOUD_TRY(number(w, "memory", at, 0, 1000, s.weights.memory));
    if (s.weights.gpu + s.weights.cpu + s.weights.memory <= 0)
      return invalid(fmt::format("{}: every weight is 0; give at least one a value above 0", at));
  }
  if (j.contains("owned")) {
    const json& o = j.at("owned");
    if (!o.is_object())
      return invalid(
          fmt::format("{}.owned: expected a mapping of profile name to its costs", where));
    for (const auto& [name, profile] : o.items()) {
      auto p = owned_profile(profile, fmt::format("{}.owned.{}", where, name));
      if (!p.ok()) return p.error();
      s.owned[name] = *p;
    }
  }
  return s;
}

}  // namespace gpucloud::cost
