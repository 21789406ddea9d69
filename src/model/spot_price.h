// Prices of nodes and the most a job pays (docs/jobspec.md, "max_price"): the limits every
// reader of a price (agent flags, registration, job specs) checks.
#pragma once

#include <cmath>

namespace gpucloud {

/// The most a node's hourly price (the whole node, USD) may be.
inline constexpr double kMaxNodePricePerHour = 100'000;
/// The most a job's max_price (USD per GPU-hour) may be.
inline constexpr double kMaxPricePerGpuHour = 1000;

/// A node's hourly price: finite, from 0 (owned hardware) to kMaxNodePricePerHour.
inline bool valid_node_price_per_hour(double usd) {
  return std::isfinite(usd) && usd >= 0 && usd <= kMaxNodePricePerHour;
}

/// A job's max_price: finite, above 0, at most kMaxPricePerGpuHour.
inline bool valid_max_price(double usd_per_gpu_hour) {
  return std::isfinite(usd_per_gpu_hour) && usd_per_gpu_hour > 0 &&
         usd_per_gpu_hour <= kMaxPricePerGpuHour;
}

}  // namespace gpucloud
