// `gpucloud sim replay --cluster x.csv`: the CSV table within limits, then the canonical
// cluster or the Alibaba node list.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "sim/cluster.h"

using namespace gpucloud;
using namespace gpucloud::sim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto table = CsvTable::parse(std::string(reinterpret_cast<const char*>(data), size), "c.csv");
  if (!table) {
    fuzz::require_user_error(table.error(), "CsvTable::parse");
    return 0;
  }
  auto cluster =
      table->column("sn").ok() ? load_alibaba_node_cluster(*table) : load_canonical_cluster(*table);
  if (!cluster) {
    fuzz::require_user_error(cluster.error(), "load cluster");
    return 0;
  }
  fuzz::require(!cluster->nodes.empty(), "an accepted cluster has nodes");
  return 0;
}
