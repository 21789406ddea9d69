#include "cost/pricing.h"

#include <algorithm>

namespace gpucloud::cost {

namespace {

std::string label(const NodeInfo& node, const char* key) {
  auto it = node.labels.find(key);
  return it == node.labels.end() ? std::string() : it->second;
}

double fraction(int64_t part, int64_t whole) {
  if (whole <= 0 || part <= 0) return 0;
  return std::min(1.0, static_cast<double>(part) / static_cast<double>(whole));
}

}  // namespace

NodePrice price_node(const NodeInfo& node, const InstanceCatalog* catalog,
                     const CostSettings& settings) {
  NodePrice p;
  const InstanceOffer* offer =
      catalog
          ? catalog->find(label(node, "cloud"), label(node, "instance-type"), label(node, "region"))
          : nullptr;
  bool spot = label(node, "capacity-class") == "spot";
  if (node.price_per_hour >= 0) {
    p.usd_per_hour = node.price_per_hour;
    p.source = "agent";
  } else if (offer) {
    bool has_spot = spot && offer->spot_usd_per_hour >= 0;
    p.usd_per_hour = has_spot ? offer->spot_usd_per_hour : offer->on_demand_usd_per_hour;
    p.source = has_spot ? "catalog (spot)" : "catalog (on-demand)";
  } else {
    std::string name = label(node, "owned-profile");
    auto it = settings.owned.find(name.empty() ? "default" : name);
    if (it != settings.owned.end()) {
      p.usd_per_hour = it->second.usd_per_hour(static_cast<int>(node.gpus.size()));
      p.source = "owned:" + it->first;
    }
  }
  if (p.usd_per_hour >= 0)
    p.on_demand_usd_per_hour = offer ? offer->on_demand_usd_per_hour : p.usd_per_hour;
  return p;
}

double share_of_node(const ResourceUse& use, const NodeInfo& node, const ShareWeights& weights) {
  double cpu = fraction(use.cpu_milli, node.cpu_milli);
  double memory = fraction(use.memory_mib, node.memory_mib);
  if (node.gpus.empty() || use.gpu_milli <= 0) {
    double total = weights.cpu + weights.memory;
    if (total <= 0) return cpu;
    return (weights.cpu * cpu + weights.memory * memory) / total;
  }
  double gpu = fraction(use.gpu_milli, 1000 * static_cast<int64_t>(node.gpus.size()));
  double total = weights.gpu + weights.cpu + weights.memory;
  if (total <= 0) return gpu;
  return (weights.gpu * gpu + weights.cpu * cpu + weights.memory * memory) / total;
}

double cost_usd(double usd_per_hour, int64_t from_ms, int64_t to_ms) {
  if (usd_per_hour <= 0 || to_ms <= from_ms) return 0;
  return usd_per_hour * static_cast<double>(to_ms - from_ms) / 3'600'000.0;
}

}  // namespace gpucloud::cost
