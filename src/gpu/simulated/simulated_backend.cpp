#include "gpu/simulated/simulated_backend.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>

namespace gpucloud::gpu {
namespace {

// Deterministic on every platform, unlike std::hash.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string sim_uuid(const std::string& node, int index) {
  uint64_t a = splitmix(fnv1a(node + "/gpu/" + std::to_string(index)));
  uint64_t b = splitmix(a);
  char out[48];
  std::snprintf(out, sizeof out, "GPU-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffull));
  return out;
}

// Bus numbers of the 8 GPUs of a DGX A100; further boards get the next PCI domain.
std::string sim_pci_bus_id(int index) {
  constexpr std::array<unsigned, 8> kBus{0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD};
  char out[32];
  std::snprintf(out, sizeof out, "%08X:%02X:00.0", static_cast<unsigned>(index / 8),
                kBus[index % 8]);
  return out;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// Links GPUs [first, first + count) of one spec part as its model's boards are linked.
void link_group(std::vector<Gpu>& gpus, int first, int count, SimLinks links) {
  int size = links == SimLinks::kBoardOf8 ? 8 : links == SimLinks::kPairs ? 2 : 1;
  for (int i = 0; i < count; ++i) {
    int board = i / size * size;
    for (int j = board; j < std::min(board + size, count); ++j) {
      if (j != i) gpus[first + i].nvlink_peers.push_back(first + j);
    }
  }
}

}  // namespace

Result<std::unique_ptr<SimulatedBackend>> SimulatedBackend::create(const GpuBackendConfig& config) {
  auto groups = parse_sim_spec(config.sim_spec);
  if (!groups.ok()) return groups.error();
  std::unique_ptr<SimulatedBackend> backend(new SimulatedBackend());
  backend->spec_ = format_sim_spec(*groups);
  backend->node_name_ = config.sim_node_name.empty() ? host_name() : config.sim_node_name;
  int total = 0;
  for (const auto& group : *groups) total += group.count;
  auto& gpus = backend->gpus_;
  for (const auto& group : *groups) {
    int first = static_cast<int>(gpus.size());
    for (int k = 0; k < group.count; ++k) {
      Gpu gpu;
      gpu.index = static_cast<int>(gpus.size());
      gpu.uuid = sim_uuid(backend->node_name_, gpu.index);
      gpu.name = group.product_name;
      gpu.model = group.model;
      gpu.memory_mib = group.memory_mib;
      gpu.pci_bus_id = sim_pci_bus_id(gpu.index);
      gpu.numa_node = gpu.index * 2 / total;
      for (size_t m = 0; m < group.mig_profiles.size(); ++m) {
        // "MIG-" and the GPU's UUID body with the device's place, as unique as the GPU's.
        std::string uuid = "MIG-" + gpu.uuid.substr(4, 24) + std::to_string(100000000000 + m);
        gpu.mig.push_back(
            {uuid, group.mig_profiles[m], mig_profile_memory_mib(group.mig_profiles[m])});
      }
      gpus.push_back(std::move(gpu));
      backend->idle_power_w_.push_back(group.idle_power_w);
    }
    link_group(gpus, first, group.count, group.links);
  }
  return backend;
}

Result<std::vector<GpuTelemetry>> SimulatedBackend::telemetry() {
  std::vector<GpuTelemetry> out;
  for (const auto& gpu : gpus_) {
    GpuTelemetry t;
    t.index = gpu.index;
    auto load = load_pct_.find(gpu.index);
    t.utilization_pct = load == load_pct_.end() ? 0 : std::clamp(load->second, 0, 100);
    // A plausible rise with load: up to 40 C more and three times the idle power at 100 %.
    t.temperature_c = 30 + t.utilization_pct * 40 / 100;
    t.power_w = idle_power_w_[gpu.index] * (100 + 2 * t.utilization_pct) / 100;
    t.memory_free_mib = gpu.memory_mib - t.memory_used_mib;
    // An idle clock of 210 MHz rising to a boost clock of 1410 MHz at full load.
    t.sm_clock_mhz = 210 + t.utilization_pct * 12;
    out.push_back(t);
  }
  return out;
}

void SimulatedBackend::set_process_load(const std::map<int, int>& load_pct_by_index) {
  load_pct_ = load_pct_by_index;
}

}  // namespace gpucloud::gpu
