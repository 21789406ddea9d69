#include "model/node_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

namespace gpucloud {

using json = nlohmann::json;

json gpu_to_json(const Gpu& g) {
  json mig = json::array();
  for (const auto& m : g.mig)
    mig.push_back({{"uuid", m.uuid}, {"profile", m.profile}, {"memory_mib", m.memory_mib}});
  return {{"index", g.index},
          {"uuid", g.uuid},
          {"name", g.name},
          {"model", g.model},
          {"memory_mib", g.memory_mib},
          {"pci_bus_id", g.pci_bus_id},
          {"numa_node", g.numa_node},
          {"nvlink_peers", g.nvlink_peers},
          {"mig", mig}};
}

json node_info_to_json(const NodeInfo& n) {
  json gpus = json::array();
  for (const auto& g : n.gpus) gpus.push_back(gpu_to_json(g));
  return {{"name", n.name},
          {"hostname", n.hostname},
          {"gpus", gpus},
          {"cpu_milli", n.cpu_milli},
          {"memory_mib", n.memory_mib},
          {"labels", n.labels},
          {"gpu_backend", n.gpu_backend},
          {"driver_version", n.driver_version},
          {"cuda_version", n.cuda_version},
          {"address", n.address}};
}

Result<NodeInfo> node_info_from_json(const json& j) {
  try {
    NodeInfo n;
    n.name = j.at("name").get<std::string>();
    if (n.name.empty() || n.name.size() > 253)
      return invalid("node name must be 1..253 characters");
    n.hostname = j.value("hostname", "");
    n.cpu_milli = j.at("cpu_milli").get<int64_t>();
    n.memory_mib = j.at("memory_mib").get<int64_t>();
    if (n.cpu_milli < 0 || n.memory_mib < 0)
      return invalid("node cpu_milli and memory_mib must be >= 0");
    if (j.contains("labels")) n.labels = j.at("labels").get<std::map<std::string, std::string>>();
    n.gpu_backend = j.value("gpu_backend", "");
    n.driver_version = j.value("driver_version", "");
    n.cuda_version = j.value("cuda_version", "");
    n.address = j.value("address", "");
    if (n.address.size() > 253) return invalid("node address must be at most 253 characters");
    std::set<int> indices;
    const auto& gpus = j.at("gpus");
    if (gpus.size() > 64)
      return invalid(fmt::format("node reports {} GPUs; at most 64 are supported", gpus.size()));
    for (const auto& gj : gpus) {
      Gpu g;
      g.index = gj.at("index").get<int>();
      if (!indices.insert(g.index).second)
        return invalid(fmt::format("GPU index {} reported twice", g.index));
      g.uuid = gj.at("uuid").get<std::string>();
      g.name = gj.value("name", "");
      g.model = gj.at("model").get<std::string>();
      g.memory_mib = gj.at("memory_mib").get<int64_t>();
      g.pci_bus_id = gj.value("pci_bus_id", "");
      g.numa_node = gj.value("numa_node", 0);
      if (gj.contains("nvlink_peers"))
        g.nvlink_peers = gj.at("nvlink_peers").get<std::vector<int>>();
      if (gj.contains("mig"))
        for (const auto& m : gj.at("mig"))
          g.mig.push_back({m.at("uuid").get<std::string>(), m.value("profile", ""),
                           m.value("memory_mib", int64_t{0})});
      n.gpus.push_back(std::move(g));
    }
    return n;
  } catch (const json::exception& e) {
    return invalid(std::string("malformed node description: ") + e.what());
  }
}

}  // namespace gpucloud
