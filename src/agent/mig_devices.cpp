#include "agent/mig_devices.h"

#include <algorithm>
#include <set>

namespace gpucloud::agent {

std::vector<Gpu> offered_devices(const std::vector<Gpu>& gpus) {
  std::set<int> split;
  for (const auto& g : gpus)
    if (!g.mig.empty()) split.insert(g.index);
  std::vector<Gpu> out;
  for (const auto& g : gpus) {
    if (g.mig.empty()) {
      Gpu whole = g;
      // A peer in MIG mode is no longer a device to pair with.
      std::erase_if(whole.nvlink_peers, [&](int peer) { return split.count(peer) > 0; });
      out.push_back(std::move(whole));
      continue;
    }
    for (size_t k = 0; k < g.mig.size() && k < 8; ++k) {
      const MigDevice& m = g.mig[k];
      Gpu device;
      device.index = kMigIndexBase + 8 * g.index + static_cast<int>(k);
      device.uuid = m.uuid;
      device.name = g.name + " MIG " + m.profile;
      device.model = g.model + "/" + m.profile;
      device.memory_mib = m.memory_mib;
      device.pci_bus_id = g.pci_bus_id;
      device.numa_node = g.numa_node;
      device.mig_parent = g.index;
      out.push_back(std::move(device));
    }
  }
  return out;
}

}  // namespace gpucloud::agent
