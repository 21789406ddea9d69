#include "sim/cluster.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

namespace gpucloud::sim {

int64_t SimCluster::gpus() const {
  int64_t n = 0;
  for (const sched::NodeState& node : nodes) n += static_cast<int64_t>(node.gpus.size());
  return n;
}

std::vector<std::string> SimCluster::models() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const sched::NodeState& node : nodes)
    for (const sched::GpuState& g : node.gpus)
      if (seen.insert(g.model).second) out.push_back(g.model);
  return out;
}

sched::NodeState make_node(const std::string& name, int gpus, const std::string& gpu_model,
                           int64_t gpu_memory_mib, int64_t cpu_milli, int64_t memory_mib) {
  sched::NodeState node;
  node.id = name;
  node.name = name;
  node.cpu_milli = cpu_milli;
  node.memory_mib = memory_mib;
  for (int i = 0; i < gpus; ++i) {
    sched::GpuState g;
    g.index = i;
    g.uuid = fmt::format("{}-gpu{}", name, i);
    g.model = gpu_model;
    g.memory_mib = gpu_memory_mib;
    node.gpus.push_back(std::move(g));
  }
  return node;
}

namespace {

/// Checks a node's GPU count and model; `where_gpus`/`where_model` prefix the messages.
Status check_gpus(int64_t gpus, std::string_view model, const std::string& where_gpus,
                  const std::string& where_model) {
  if (gpus > kMaxSimNodeGpus)
    return invalid(fmt::format("{}gpus: {} on one node; the simulator supports at most {}",
                               where_gpus, gpus, kMaxSimNodeGpus));
  if (gpus > 0 && model.empty())
    return invalid(fmt::format("{}gpu_model: a node with {} GPUs needs a GPU model (e.g. A100)",
                               where_model, gpus));
  return {};
}

Result<std::map<std::string, std::string>> parse_labels(const CsvTable& t, size_t r, int c) {
  std::map<std::string, std::string> labels;
  std::string_view rest = t.text(r, c);
  while (!rest.empty()) {
    size_t semi = rest.find(';');
    std::string_view pair = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return invalid(
          fmt::format("{}column 'labels': '{}' is not key=value (write e.g. "
                      "zone=a;pool=x)",
                      t.where(r, c), pair));
    labels[std::string(pair.substr(0, eq))] = std::string(pair.substr(eq + 1));
  }
  return labels;
}

Status check_unique(std::set<std::string>& names, const std::string& name,
                    const std::string& where) {
  if (name.empty()) return invalid(fmt::format("{}name: empty; every node needs a name", where));
  if (!names.insert(name).second)
    return invalid(fmt::format("{}name: '{}' is used by another node", where, name));
  return {};
}

}  // namespace

Result<SimCluster> load_canonical_cluster(const CsvTable& t) {
  std::vector<int> cols;
  for (const char* name :
       {"name", "gpus", "gpu_model", "gpu_memory_mib", "cpu_milli", "memory_mib", "labels"}) {
    auto c = t.column(name);
    if (!c.ok()) return c.error();
    cols.push_back(*c);
  }
  enum { kName, kGpus, kModel, kGpuMemory, kCpu, kMemory, kLabels };
  SimCluster cluster{t.file(), {}};
  std::set<std::string> names;
  for (size_t r = 0; r < t.size(); ++r) {
    int64_t v[7] = {};
    for (int i : {kGpus, kGpuMemory, kCpu, kMemory}) {
      int c = cols[static_cast<size_t>(i)];
      if ((i == kGpuMemory || i == kMemory) && t.text(r, c).empty()) continue;
      auto n = t.non_negative(r, c);
      if (!n.ok()) return n.error();
      v[i] = *n;
    }
    std::string name(t.text(r, cols[kName]));
    if (auto s = check_unique(names, name, t.where(r, cols[kName])); !s.ok()) return s.error();
    std::string model(t.text(r, cols[kModel]));
    if (auto s = check_gpus(v[kGpus], model, t.where(r, cols[kGpus]), t.where(r, cols[kModel]));
        !s.ok())
      return s.error();
    auto labels = parse_labels(t, r, cols[kLabels]);
    if (!labels.ok()) return labels.error();
    sched::NodeState node =
        make_node(name, static_cast<int>(v[kGpus]), model, v[kGpuMemory], v[kCpu], v[kMemory]);
    node.labels = std::move(*labels);
    cluster.nodes.push_back(std::move(node));
  }
  if (cluster.nodes.empty()) return invalid(fmt::format("{}: no nodes", t.file()));
  return cluster;
}

Result<SimCluster> load_alibaba_node_cluster(const CsvTable& t) {
  std::vector<int> cols;
  for (const char* name : {"sn", "cpu_milli", "memory_mib", "gpu", "model"}) {
    auto c = t.column(name);
    if (!c.ok()) return c.error();
    cols.push_back(*c);
  }
  SimCluster cluster{t.file(), {}};
  std::set<std::string> names;
  for (size_t r = 0; r < t.size(); ++r) {
    auto cpu = t.non_negative(r, cols[1]), mem = t.non_negative(r, cols[2]),
         gpus = t.non_negative(r, cols[3]);
    for (const auto* v : {&cpu, &mem, &gpus})
      if (!v->ok()) return v->error();
    std::string name(t.text(r, cols[0]));
    if (auto s = check_unique(names, name, t.where(r, cols[0])); !s.ok()) return s.error();
    std::string model(t.text(r, cols[4]));
    if (auto s = check_gpus(*gpus, model, t.where(r, cols[3]), t.where(r, cols[4])); !s.ok())
      return s.error();
    cluster.nodes.push_back(make_node(name, static_cast<int>(*gpus), model, 0, *cpu, *mem));
    // The trace's best-effort (BE → spot) pods ran on every node, beside the others.
    cluster.nodes.back().labels["capacity-class"] = "spot";
  }
  if (cluster.nodes.empty()) return invalid(fmt::format("{}: no nodes", t.file()));
  return cluster;
}

Result<SimCluster> load_cluster(const std::string& path) {
  auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".yaml") || ends_with(".yml")) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return invalid(fmt::format("{}: cannot open the file; check the path", path));
    std::ostringstream buf;
    buf << in.rdbuf();
    return load_cluster_yaml(buf.str(), path);
  }
  auto table = CsvTable::read_file(path);
  if (!table.ok()) return table.error();
  if (table->column("sn").ok()) return load_alibaba_node_cluster(*table);
  return load_canonical_cluster(*table);
}

}  // namespace gpucloud::sim
