// Prices of nodes and of a job's share of a node (docs/cost.md): pure functions, no clock.
#pragma once

#include <cstdint>

#include "cost/cost_settings.h"
#include "cost/instance_catalog.h"
#include "model/gpu.h"
#include "model/node_price.h"

namespace gpucloud::cost {

/// A node's price: the agent's price_per_hour when set; else the catalog row its labels
/// cloud, instance-type and region name (the spot column when capacity-class=spot and the row
/// has one); else the owned-hardware profile its label owned-profile names, or "default".
/// The on-demand price (for savings) is the catalog's on-demand column when the labels match a
/// row, else the price itself. catalog may be null.
NodePrice price_node(const NodeInfo& node, const InstanceCatalog* catalog,
                     const CostSettings& settings);

/// What a replica holds of its node.
struct ResourceUse {
  int64_t gpu_milli = 0;  // summed over its GPUs (1000 = one whole GPU)
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
};

/// The fraction (0..1) of the node's price a replica pays: its GPU share (gpu_milli / (1000 ×
/// the node's GPUs)) under the default weights; with cpu and memory weights, the weighted mean
/// of the three shares. A node without GPUs or a replica without GPUs pays by its CPU and
/// memory shares alone (CPU only when both of those weights are 0).
double share_of_node(const ResourceUse& use, const NodeInfo& node, const ShareWeights& weights);

/// USD for holding `usd_per_hour` from `from_ms` to `to_ms` (0 when to_ms <= from_ms).
double cost_usd(double usd_per_hour, int64_t from_ms, int64_t to_ms);

}  // namespace gpucloud::cost
