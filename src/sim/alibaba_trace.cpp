#include "sim/alibaba_trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpucloud::sim {

int TraceCluster::model_index(std::string_view model) const {
  for (size_t i = 0; i < models.size(); ++i)
    if (models[i] == model) return static_cast<int>(i);
  return -1;
}

Result<TraceCluster> load_alibaba_nodes(const CsvTable& t) {
  auto sn = t.column("sn"), cpu = t.column("cpu_milli"), mem = t.column("memory_mib"),
       gpu = t.column("gpu"), model = t.column("model");
  for (const auto* c : {&sn, &cpu, &mem, &gpu, &model})
    if (!c->ok()) return c->error();
  TraceCluster cluster;
  for (size_t r = 0; r < t.size(); ++r) {
    auto c = t.non_negative(r, *cpu), m = t.non_negative(r, *mem), g = t.non_negative(r, *gpu);
    for (const auto* v : {&c, &m, &g})
      if (!v->ok()) return v->error();
    if (*g > sched::kMaxNodeGpus)
      return invalid(fmt::format("{}column 'gpu': {} GPUs on one node; at most {} are supported",
                                 t.where(r, *gpu), *g, sched::kMaxNodeGpus));
    std::string_view name = t.text(r, *model);
    int index = -1;
    if (*g > 0) {
      if (name.empty())
        return invalid(fmt::format("{}column 'model': a node with {} GPUs needs a GPU model",
                                   t.where(r, *model), *g));
      index = cluster.model_index(name);
      if (index < 0) {
        if (cluster.models.size() == 64)
          return invalid(
              fmt::format("{}column 'model': more than 64 GPU models", t.where(r, *model)));
        index = static_cast<int>(cluster.models.size());
        cluster.models.emplace_back(name);
      }
    }
    cluster.nodes.push_back(
        sched::ShareNode::make(std::string(t.text(r, *sn)), index, static_cast<int>(*g), *c, *m));
    cluster.gpus += *g;
  }
  if (cluster.nodes.empty()) return invalid(fmt::format("{}: no nodes", t.file()));
  return cluster;
}

Result<TraceCluster> load_alibaba_nodes(const std::string& path) {
  auto table = CsvTable::read_file(path);
  if (!table.ok()) return table.error();
  return load_alibaba_nodes(*table);
}

namespace {

Result<uint64_t> model_mask(const CsvTable& t, size_t r, int c, const TraceCluster& cluster) {
  if (c < 0) return uint64_t{0};  // no gpu_spec column: any model
  std::string_view spec = t.text(r, c);
  uint64_t mask = 0;
  while (!spec.empty()) {
    size_t bar = spec.find('|');
    std::string_view one = spec.substr(0, bar);
    int index = cluster.model_index(one);
    if (index >= 0) mask |= uint64_t{1} << index;
    spec = bar == std::string_view::npos ? std::string_view{} : spec.substr(bar + 1);
  }
  if (mask == 0 && !t.text(r, c).empty())
    return invalid(fmt::format("{}column 'gpu_spec': no node has a GPU model in '{}' (models: {})",
                               t.where(r, c), t.text(r, c), fmt::join(cluster.models, ", ")));
  return mask;
}

}  // namespace

Result<std::vector<TracePod>> load_alibaba_pods(const CsvTable& t, const TraceCluster& cluster) {
  auto name = t.column("name"), cpu = t.column("cpu_milli"), mem = t.column("memory_mib"),
       num = t.column("num_gpu"), milli = t.column("gpu_milli");
  for (const auto* c : {&name, &cpu, &mem, &num, &milli})
    if (!c->ok()) return c->error();
  auto spec_column = t.column("gpu_spec");  // optional: some files of the release lack it
  int spec = spec_column.ok() ? *spec_column : -1;
  std::vector<TracePod> pods;
  pods.reserve(t.size());
  for (size_t r = 0; r < t.size(); ++r) {
    auto c = t.non_negative(r, *cpu), m = t.non_negative(r, *mem), n = t.non_negative(r, *num),
         g = t.non_negative(r, *milli);
    for (const auto* v : {&c, &m, &n, &g})
      if (!v->ok()) return v->error();
    if (*n > 0 && (*g < 1 || *g > sched::kMilliPerGpu))
      return invalid(fmt::format("{}column 'gpu_milli': {} for a GPU pod; it must be 1..1000",
                                 t.where(r, *milli), *g));
    if (*n > 1 && *g != sched::kMilliPerGpu)
      return invalid(fmt::format(
          "{}column 'gpu_milli': {} with num_gpu {}; only single-GPU pods may share a GPU",
          t.where(r, *milli), *g, *n));
    auto mask = model_mask(t, r, spec, cluster);
    if (!mask.ok()) return mask.error();
    TracePod pod;
    pod.name = std::string(t.text(r, *name));
    pod.request = {*c, *m, static_cast<int>(*n), *n > 0 ? static_cast<int>(*g) : 0, *mask};
    if (spec >= 0) pod.gpu_spec = std::string(t.text(r, spec));
    pod.line = t.line(r);
    pods.push_back(std::move(pod));
  }
  return pods;
}

Result<std::vector<TracePod>> load_alibaba_pods(const std::string& path,
                                                const TraceCluster& cluster) {
  auto table = CsvTable::read_file(path);
  if (!table.ok()) return table.error();
  return load_alibaba_pods(*table, cluster);
}

}  // namespace gpucloud::sim
