// GpuBackend: how an agent discovers its GPUs and reads their telemetry.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/gpu.h"

namespace gpucloud::gpu {

/// A point-in-time reading of one GPU.
struct GpuTelemetry {
  int index = 0;
  int utilization_pct = 0;  // 0..100, SM busy
  int64_t memory_used_mib = 0;
  int64_t memory_free_mib = 0;
  int temperature_c = 0;
  int power_w = 0;
  int sm_clock_mhz = 0;  // 0 when the GPU cannot say
  // The last XID error the GPU reported since the backend started (0: none), as
  // dcgm-exporter's DCGM_FI_DEV_XID_ERRORS shows it; xid_count counts them all.
  int64_t last_xid = 0;
  int64_t xid_count = 0;
};

/// One GPU's health as its driver reports it (the doctor's `gpu health`, docs/doctor.md). A
/// reading the GPU or driver does not support is -1.
struct GpuHealth {
  int index = 0;
  int persistence_mode = -1;              // 1 on, 0 off
  int64_t ecc_uncorrected_volatile = -1;  // uncorrectable ECC errors since the driver loaded
  int retired_pages_pending = -1;         // 1: retired pages wait for a reboot
  int remapped_rows_pending = -1;         // 1: remapped rows wait for a GPU reset
  int remapped_rows_failure = -1;         // 1: a row could not be remapped (needs service)
};

/// Discovery and telemetry for the GPUs of one machine.
class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  /// "nvml" or "simulated".
  virtual std::string kind() const = 0;
  /// The GPUs of this machine, with topology (NUMA node, NVLink peers) and MIG devices.
  virtual Result<std::vector<Gpu>> discover() = 0;
  /// Current utilisation, memory, temperature, power, SM clock and XID errors of each GPU.
  virtual Result<std::vector<GpuTelemetry>> telemetry() = 0;
  /// Persistence mode, ECC errors, retired pages and row remapping of each GPU; none for GPUs
  /// without a driver (simulated).
  virtual Result<std::vector<GpuHealth>> health() { return std::vector<GpuHealth>{}; }
  /// Driver version ("550.54.15"), or "" when there is no driver (simulated).
  virtual std::string driver_version() const = 0;
  /// CUDA driver API version ("12.4"), or "".
  virtual std::string cuda_version() const = 0;
  /// Whether utilisation readings come from the load of the processes bound to each GPU
  /// instead of from hardware (GPUs that do not exist): the agent then reports that load with
  /// set_process_load() before each telemetry().
  virtual bool utilization_from_processes() const { return false; }
  /// The load of each GPU's processes since the last report, by GPU index: CPU time as a
  /// percentage of the wall time, 0..100 (a busy loop is 100, `sleep` 0). Unlisted GPUs: 0.
  virtual void set_process_load(const std::map<int, int>& load_pct_by_index) {
    (void)load_pct_by_index;
  }
};

/// How to choose and configure a backend.
struct GpuBackendConfig {
  /// "auto" (NVML when libnvidia-ml loads and reports GPUs, else simulated), "nvml" or "simulated".
  std::string kind = "auto";
  /// For the simulated backend: e.g. "8xA100-80GB", "4xT4", "2xH100-80GB,2xL4".
  /// Empty means the default simulated machine (8xA100-80GB).
  std::string sim_spec;
  /// For the simulated backend: the name of the simulated node (e.g. the agent's node name).
  /// It seeds the GPU UUIDs, so two simulated nodes never share one. Empty means the hostname.
  std::string sim_node_name;
  /// The NVML library to dlopen; tests point this at a fake.
  std::string nvml_library = "libnvidia-ml.so.1";
};

/// Creates the backend named by config.kind (one explicit name->factory table, no
/// self-registration). With "auto", logs clearly which backend was chosen and why.
Result<std::unique_ptr<GpuBackend>> create_gpu_backend(const GpuBackendConfig& config);

}  // namespace gpucloud::gpu
