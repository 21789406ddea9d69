// NvmlBackend: discovery and telemetry of real NVIDIA GPUs through NVML.
//
// Limits and assumptions:
// - libnvidia-ml is loaded with dlopen at run time (no build-time dependency on the driver); the
//   first load or init failure of a library path is remembered for the life of the process, so a
//   driver installed later needs an agent restart (as in Mesos).
// - Required calls are those every driver since CUDA 10 has; NUMA (nvmlDeviceGetNumaNodeId),
//   NVLink and MIG calls are optional: a library without them yields numa_node -1 (unless sysfs
//   knows), no NVLink peers and no MIG devices.
// - NUMA node: sysfs's numa_node of the GPU's PCI device (the CPU side, what pinning needs)
//   first, then nvmlDeviceGetNumaNodeId (on coherent systems, the GPU memory's own node).
// - NVLink peers come from active links whose remote end is a local GPU; GPUs with links to an
//   NVSwitch are all peers of each other. A link that cannot be read is treated as absent.
// - MIG: only MIG devices that exist are reported (their profile is read from their name); it
//   does not create or destroy MIG instances.
// - Telemetry readings a GPU does not support (e.g. utilisation with MIG on) read as 0.
// - XID errors come from an NVML event set registered for critical XID events at the first
//   telemetry(); each telemetry() drains it without waiting. A driver without event sets (or a
//   GPU that refuses to register) reports no XIDs.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/nvml/nvml_library.h"

namespace gpucloud::gpu {

/// Options of the NVML backend that only tests change.
struct NvmlOptions {
  /// Where sysfs is mounted; the NUMA node of a GPU is read from
  /// <sysfs_root>/bus/pci/devices/<bus id>/numa_node.
  std::string sysfs_root = "/sys";
};

/// GpuBackend over NVML.
class NvmlBackend : public GpuBackend {
 public:
  /// Loads and initialises config.nvml_library, and reads the driver and CUDA versions.
  /// Fails (kUnavailable) when the library cannot be loaded or initialised.
  static Result<std::unique_ptr<NvmlBackend>> create(const GpuBackendConfig& config,
                                                     NvmlOptions options = {});

  /// "nvml".
  std::string kind() const override { return "nvml"; }
  /// Every GPU NVML reports, with NUMA node, NVLink peers and MIG devices.
  Result<std::vector<Gpu>> discover() override;
  /// Utilisation, memory used, temperature and power of every GPU.
  Result<std::vector<GpuTelemetry>> telemetry() override;
  /// Persistence mode, uncorrectable volatile ECC errors, pending page retirement and row
  /// remapping of every GPU (each optional: unsupported reads as -1).
  Result<std::vector<GpuHealth>> health() override;
  /// As nvmlSystemGetDriverVersion reports it, e.g. "550.54.15".
  std::string driver_version() const override { return driver_version_; }
  /// "12.4" from nvmlSystemGetCudaDriverVersion, or "" when the library cannot say.
  std::string cuda_version() const override { return cuda_version_; }

  /// How many GPUs NVML reports (nvmlDeviceGetCount_v2).
  Result<int> device_count() const;

 private:
  NvmlBackend(std::shared_ptr<const nvml::NvmlLibrary> lib, NvmlOptions options)
      : lib_(std::move(lib)), options_(std::move(options)) {}
  Result<nvml::nvmlDevice_t> handle(int index) const;
  Result<Gpu> describe(int index, nvml::nvmlDevice_t device) const;
  int numa_node(nvml::nvmlDevice_t device, const std::string& pci_bus_id) const;
  Result<std::vector<MigDevice>> mig_devices(int index, nvml::nvmlDevice_t device) const;
  void add_nvlink_peers(const std::vector<nvml::nvmlDevice_t>& devices,
                        std::vector<Gpu>& gpus) const;
  Result<GpuTelemetry> read_telemetry(int index, nvml::nvmlDevice_t device) const;
  /// Registers every device for XID events once, then takes the events that have arrived.
  void drain_xid_events(const std::vector<nvml::nvmlDevice_t>& devices);

  std::shared_ptr<const nvml::NvmlLibrary> lib_;
  NvmlOptions options_;
  std::string driver_version_;
  std::string cuda_version_;
  struct XidState {
    int64_t last = 0;
    int64_t count = 0;
  };
  std::mutex xid_mu_;
  bool xid_registered_ = false;
  nvml::nvmlEventSet_t xid_events_ = nullptr;  // null: none to read
  std::map<int, XidState> xids_;               // by GPU index
};

}  // namespace gpucloud::gpu
