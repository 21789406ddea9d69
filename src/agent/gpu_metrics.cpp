#include "agent/gpu_metrics.h"

#include <algorithm>
#include <functional>
#include <map>

#include "metrics/gauge_set.h"

namespace gpucloud::agent {

namespace {

struct Field {
  const char* name;
  const char* help;
  std::function<double(const gpu::GpuTelemetry&)> value;
};

const std::vector<Field>& fields() {
  static const std::vector<Field> kFields = {
      {"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).",
       [](const gpu::GpuTelemetry& t) { return t.utilization_pct; }},
      {"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).",
       [](const gpu::GpuTelemetry& t) { return static_cast<double>(t.memory_used_mib); }},
      {"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).",
       [](const gpu::GpuTelemetry& t) { return static_cast<double>(t.memory_free_mib); }},
      {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).",
       [](const gpu::GpuTelemetry& t) { return t.temperature_c; }},
      {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).",
       [](const gpu::GpuTelemetry& t) { return t.power_w; }},
      {"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).",
       [](const gpu::GpuTelemetry& t) { return t.sm_clock_mhz; }},
      {"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.",
       [](const gpu::GpuTelemetry& t) { return static_cast<double>(t.last_xid); }},
  };
  return kFields;
}

}  // namespace

std::vector<prometheus::MetricFamily> gpu_metric_families(
    const NodeInfo& node, const std::vector<gpu::GpuTelemetry>& readings,
    const std::vector<GpuHolder>& holders) {
  std::map<int, const Gpu*> gpus;
  for (const auto& g : node.gpus) gpus[g.index] = &g;
  std::multimap<int, const GpuHolder*> held;
  for (const auto& h : holders) held.emplace(h.gpu_index, &h);

  std::vector<metrics::GaugeSet> sets;
  for (const auto& f : fields()) sets.emplace_back(f.name, f.help);
  for (const auto& t : readings) {
    auto gpu = gpus.find(t.index);
    if (gpu == gpus.end()) continue;
    prometheus::Labels base = {
        {"gpu", std::to_string(t.index)},        {"UUID", gpu->second->uuid},
        {"pci_bus_id", gpu->second->pci_bus_id}, {"device", "nvidia" + std::to_string(t.index)},
        {"modelName", gpu->second->name},        {"Hostname", node.name}};
    std::vector<prometheus::Labels> series;
    auto [first, last] = held.equal_range(t.index);
    for (auto it = first; it != last; ++it) {
      prometheus::Labels labels = base;
      labels["namespace"] = it->second->tenant;
      labels["pod"] = it->second->job_id;
      labels["hpc_job"] = it->second->job_id;
      labels["tenant"] = it->second->tenant;
      if (std::find(series.begin(), series.end(), labels) == series.end()) series.push_back(labels);
    }
    if (series.empty()) series.push_back(base);
    for (size_t i = 0; i < sets.size(); ++i)
      for (const auto& labels : series) sets[i].add(labels, fields()[i].value(t));
  }
  std::vector<prometheus::MetricFamily> out;
  for (const auto& s : sets) out.push_back(s.family());
  return out;
}

}  // namespace gpucloud::agent
