// The cluster YAML format (declared in sim/cluster.h); yaml-cpp's exceptions stop here.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <limits>
#include <set>

#include "model/yaml_json.h"
#include "sim/cluster.h"

namespace gpucloud::sim {

namespace {

std::string where(const std::string& file, const YAML::Node& node) {
  YAML::Mark m = node.Mark();
  return fmt::format("{}:{}:{}: ", file, m.line + 1, m.column + 1);
}

Result<int64_t> whole(const std::string& file, const YAML::Node& map, const char* key,
                      int64_t fallback, bool required) {
  YAML::Node v = map[key];
  if (!v) {
    if (required) return invalid(fmt::format("{}node: missing '{}'", where(file, map), key));
    return fallback;
  }
  int64_t n = 0;
  if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, n))
    return invalid(fmt::format("{}{}: '{}' is not a whole number", where(file, v), key,
                               v.IsScalar() ? v.Scalar() : "(not a scalar)"));
  if (n < 0)
    return invalid(
        fmt::format("{}{}: {} is negative; it must be 0 or more", where(file, v), key, n));
  if (n > kMaxCsvNumber)
    return invalid(fmt::format("{}{}: {} is out of range; the largest allowed is {}",
                               where(file, v), key, n, kMaxCsvNumber));
  return n;
}

Result<sched::NodeState> read_node(const std::string& file, const YAML::Node& item) {
  if (!item.IsMap())
    return invalid(
        fmt::format("{}nodes: each entry must be a map with name, gpus, ...", where(file, item)));
  static const std::set<std::string> kKeys{"name",      "gpus",       "gpu_model", "gpu_memory_mib",
                                           "cpu_milli", "memory_mib", "labels",    "count"};
  for (const auto& kv : item)
    if (!kKeys.count(kv.first.Scalar()))
      return invalid(
          fmt::format("{}unknown field '{}'; a node has name, gpus, gpu_model, "
                      "gpu_memory_mib, cpu_milli, memory_mib, labels, count",
                      where(file, kv.first), kv.first.Scalar()));
  YAML::Node name = item["name"];
  if (!name || !name.IsScalar() || name.Scalar().empty())
    return invalid(fmt::format("{}node: missing 'name'", where(file, item)));
  auto gpus = whole(file, item, "gpus", 0, true),
       gpu_mem = whole(file, item, "gpu_memory_mib", 0, false),
       cpu = whole(file, item, "cpu_milli", 0, true),
       mem = whole(file, item, "memory_mib", 0, false);
  for (const auto* v : {&gpus, &gpu_mem, &cpu, &mem})
    if (!v->ok()) return v->error();
  std::string model =
      item["gpu_model"] && item["gpu_model"].IsScalar() ? item["gpu_model"].Scalar() : "";
  if (*gpus > kMaxSimNodeGpus)
    return invalid(fmt::format("{}gpus: {} on one node; the simulator supports at most {}",
                               where(file, item["gpus"]), *gpus, kMaxSimNodeGpus));
  if (*gpus > 0 && model.empty())
    return invalid(fmt::format("{}gpu_model: a node with {} GPUs needs a GPU model (e.g. A100)",
                               where(file, item), *gpus));
  sched::NodeState node =
      make_node(name.Scalar(), static_cast<int>(*gpus), model, *gpu_mem, *cpu, *mem);
  if (YAML::Node labels = item["labels"]) {
    if (!labels.IsMap())
      return invalid(
          fmt::format("{}labels: must be a map, e.g. {{zone: a, pool: x}}", where(file, labels)));
    for (const auto& kv : labels) node.labels[kv.first.Scalar()] = kv.second.Scalar();
  }
  return node;
}

}  // namespace

Result<SimCluster> load_cluster_yaml(const std::string& text, const std::string& file) {
  GPUCLOUD_TRY(check_yaml_text(text, file));
  try {
    YAML::Node root = YAML::Load(text);
    YAML::Node list = root.IsMap() ? root["nodes"] : YAML::Node();
    if (!list || !list.IsSequence())
      return invalid(fmt::format("{}:1:1: expected a map with 'nodes:', a list of nodes", file));
    SimCluster cluster{file, {}};
    std::set<std::string> names;
    for (const YAML::Node& item : list) {
      auto node = read_node(file, item);
      if (!node.ok()) return node.error();
      auto count = whole(file, item, "count", 1, false);
      if (!count.ok()) return count.error();
      if (*count > 100000)
        return invalid(fmt::format("{}count: {} is above the limit of 100000",
                                   where(file, item["count"]), *count));
      for (int64_t i = 0; i < *count; ++i) {
        sched::NodeState copy = *node;
        if (item["count"]) {
          copy = make_node(fmt::format("{}-{}", node->name, i), static_cast<int>(node->gpus.size()),
                           node->gpus.empty() ? "" : node->gpus[0].model,
                           node->gpus.empty() ? 0 : node->gpus[0].memory_mib, node->cpu_milli,
                           node->memory_mib);
          copy.labels = node->labels;
        }
        if (cluster.nodes.size() >= kMaxSimNodes)
          return invalid(fmt::format("{}count: the cluster has more than {} nodes",
                                     where(file, item), kMaxSimNodes));
        if (!names.insert(copy.name).second)
          return invalid(fmt::format("{}name: '{}' is used by another node",
                                     where(file, item["name"]), copy.name));
        cluster.nodes.push_back(std::move(copy));
      }
    }
    if (cluster.nodes.empty()) return invalid(fmt::format("{}: no nodes", file));
    return cluster;
  } catch (const YAML::Exception& e) {
    return invalid(fmt::format("{}:{}:{}: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

}  // namespace gpucloud::sim
