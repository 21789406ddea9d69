#include "gpu/gpu_backend.h"

#include <spdlog/spdlog.h>

#include <array>
#include <string_view>

#include "gpu/nvml/nvml_backend.h"
#include "gpu/simulated/simulated_backend.h"

namespace gpucloud::gpu {
namespace {

using Factory = Result<std::unique_ptr<GpuBackend>> (*)(const GpuBackendConfig&);

Result<std::unique_ptr<GpuBackend>> create_simulated(const GpuBackendConfig& config) {
  auto backend = SimulatedBackend::create(config);
  if (!backend.ok()) return backend.error();
  return std::unique_ptr<GpuBackend>(std::move(backend).value());
}

Result<std::unique_ptr<GpuBackend>> create_nvml(const GpuBackendConfig& config) {
  auto backend = NvmlBackend::create(config);
  if (!backend.ok()) {
    return Error{backend.error().code,
                 "NVML not available (" + backend.error().message +
                     "); install and load the NVIDIA driver, or use simulated GPUs (--sim-gpus)"};
  }
  return std::unique_ptr<GpuBackend>(std::move(backend).value());
}

// NVML when it loads and reports at least one GPU, else simulated (with a warning saying why).
Result<std::unique_ptr<GpuBackend>> create_auto(const GpuBackendConfig& config) {
  if (config.sim_spec.empty()) {
    std::string why;
    auto nvml = NvmlBackend::create(config);
    if (nvml.ok()) {
      auto count = (*nvml)->device_count();
      if (count.ok() && *count > 0) {
        spdlog::info("GPU backend: nvml ({} GPUs, driver {}, CUDA {})", *count,
                     (*nvml)->driver_version(), (*nvml)->cuda_version());
        return std::unique_ptr<GpuBackend>(std::move(nvml).value());
      }
      why = count.ok() ? "NVML reports no GPUs (driver " + (*nvml)->driver_version() + ")"
                       : "NVML not available (" + count.error().message + ")";
    } else {
      why = "NVML not available (" + nvml.error().message + ")";
    }
    auto sim = SimulatedBackend::create(config);
    if (!sim.ok()) return sim.error();
    spdlog::warn("{}; using simulated GPUs {}; pass --sim-gpus to choose", why, (*sim)->spec());
    return std::unique_ptr<GpuBackend>(std::move(sim).value());
  }
  auto sim = SimulatedBackend::create(config);
  if (!sim.ok()) return sim.error();
  spdlog::info("GPU backend: simulated GPUs {}", (*sim)->spec());
  return std::unique_ptr<GpuBackend>(std::move(sim).value());
}

struct Entry {
  std::string_view name;
  Factory create;
};

// The one table of GPU backends.
constexpr std::array<Entry, 3> kBackends{{
    {"auto", create_auto},
    {"nvml", create_nvml},
    {"simulated", create_simulated},
}};

}  // namespace

Result<std::unique_ptr<GpuBackend>> create_gpu_backend(const GpuBackendConfig& config) {
  std::string names;
  for (const auto& entry : kBackends) {
    if (entry.name == config.kind) return entry.create(config);
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  }
  return invalid("GPU backend \"" + config.kind + "\" is not known; choose one of: " + names);
}

}  // namespace gpucloud::gpu
