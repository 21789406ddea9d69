// What a node costs per hour as the server prices it (docs/cost.md, "Node prices").
#pragma once

#include <string>

namespace gpucloud {

/// A node's resolved price: the agent's --price-per-hour, else its catalog row, else its owned
/// hardware profile. -1 = unknown (its jobs cost nothing in the ledger).
struct NodePrice {
  double usd_per_hour = -1;            // what the node is charged at
  double on_demand_usd_per_hour = -1;  // the same capacity at on-demand (savings); -1 = unknown
  std::string source;                  // "agent" | "catalog" | "owned:<profile>" | ""
};

}  // namespace gpucloud
