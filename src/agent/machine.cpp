#include "agent/machine.h"

#include <hwloc.h>
#include <unistd.h>

#include <fstream>
#include <set>

namespace gpucloud::agent {

MachineInfo probe_machine() {
  MachineInfo m;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) m.hostname = host;
  m.cpu_count = static_cast<int>(std::max<long>(1, ::sysconf(_SC_NPROCESSORS_ONLN)));
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemTotal:") {
      m.memory_mib = kib / 1024;
      break;
    }
    meminfo.ignore(256, '\n');
  }
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) == 0 && hwloc_topology_load(topology) == 0) {
    int nodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < nodes; ++i) {
      hwloc_obj_t node = hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, i);
      std::vector<int> cpus;
      unsigned id;
      hwloc_bitmap_foreach_begin(id, node->cpuset) cpus.push_back(static_cast<int>(id));
      hwloc_bitmap_foreach_end();
      size_t os_index = node->os_index;
      if (m.numa_cpus.size() <= os_index) m.numa_cpus.resize(os_index + 1);
      m.numa_cpus[os_index] = std::move(cpus);
    }
    hwloc_topology_destroy(topology);
  }
  return m;
}

std::vector<int> cpus_for_gpus(const MachineInfo& machine, const std::vector<int>& gpu_numa_nodes) {
  std::set<int> nodes(gpu_numa_nodes.begin(), gpu_numa_nodes.end());
  if (nodes.size() != 1) return {};
  int node = *nodes.begin();
  if (node < 0 || node >= static_cast<int>(machine.numa_cpus.size())) return {};
  return machine.numa_cpus[node];
}

}  // namespace gpucloud::agent
