// `gpucloud sim replay --cluster x.yaml`: YAML within limits (size, nesting), then the nodes
// list with `count` expansion bounded.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "sim/cluster.h"

using namespace gpucloud;
using namespace gpucloud::sim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto cluster =
      load_cluster_yaml(std::string(reinterpret_cast<const char*>(data), size), "c.yaml");
  if (!cluster) {
    fuzz::require_user_error(cluster.error(), "load_cluster_yaml");
    return 0;
  }
  fuzz::require(!cluster->nodes.empty(), "an accepted cluster has nodes");
  fuzz::require(cluster->nodes.size() <= kMaxSimNodes, "node limit");
  return 0;
}
