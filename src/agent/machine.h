// What the agent learns about its machine: CPU cores per NUMA node, memory, hostname.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpucloud::agent {

struct MachineInfo {
  std::string hostname;
  int cpu_count = 1;
  int64_t memory_mib = 0;
  std::vector<std::vector<int>> numa_cpus;  // CPU ids of each NUMA node (hwloc), index = node
};

/// Reads the machine's topology with hwloc (falls back to sysconf when hwloc fails).
MachineInfo probe_machine();

/// The CPUs to pin a replica to: the cores of the GPUs' NUMA node when all its GPUs share one
/// that exists on this machine, else empty (no pinning).
std::vector<int> cpus_for_gpus(const MachineInfo& machine, const std::vector<int>& gpu_numa_nodes);

}  // namespace gpucloud::agent
