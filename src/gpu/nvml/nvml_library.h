// NvmlLibrary: libnvidia-ml loaded with dlopen, initialised, with its functions resolved.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "gpu/nvml/nvml_api.h"

namespace gpucloud::gpu::nvml {

/// The resolved NVML functions. Required ones are never null; optional ones (newer drivers
/// only, or features a machine may lack) are null when the library does not export them.
struct NvmlFunctions {
  // Required.
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  ErrorStringFn error_string = nullptr;
  GetDriverVersionFn get_driver_version = nullptr;
  GetCountFn get_count = nullptr;
  GetHandleByIndexFn get_handle_by_index = nullptr;
  GetStringFn get_name = nullptr;
  GetStringFn get_uuid = nullptr;
  GetMemoryInfoFn get_memory_info = nullptr;
  GetPciInfoFn get_pci_info = nullptr;
  GetUtilizationRatesFn get_utilization_rates = nullptr;
  GetTemperatureFn get_temperature = nullptr;
  GetUintFn get_power_usage = nullptr;
  // Optional.
  GetCudaDriverVersionFn get_cuda_driver_version = nullptr;  // _v2, else the first version
  GetUintFn get_numa_node_id = nullptr;
  GetNvLinkStateFn get_nvlink_state = nullptr;  // NVLink: both state and remote PCI, or neither
  GetNvLinkRemotePciInfoFn get_nvlink_remote_pci_info = nullptr;
  GetNvLinkRemoteDeviceTypeFn get_nvlink_remote_device_type = nullptr;
  GetMigModeFn get_mig_mode = nullptr;  // MIG: all three, or none
  GetUintFn get_max_mig_device_count = nullptr;
  GetMigDeviceHandleByIndexFn get_mig_device_handle_by_index = nullptr;
  GetUintFn get_gpu_instance_id = nullptr;  // of a MIG device: each optional
  GetUintFn get_compute_instance_id = nullptr;
  GetClockInfoFn get_clock_info = nullptr;      // SM clock; null: reads as 0
  EventSetCreateFn event_set_create = nullptr;  // XID events: all three, or none
  RegisterEventsFn register_events = nullptr;
  EventSetWaitFn event_set_wait = nullptr;
  GetEnableStateFn get_persistence_mode = nullptr;  // health: each on its own
  GetTotalEccErrorsFn get_total_ecc_errors = nullptr;
  GetEnableStateFn get_retired_pages_pending_status = nullptr;
  GetRemappedRowsFn get_remapped_rows = nullptr;  // Ampere and newer
};

/// An initialised NVML. Loaded once per library path and process, and never unloaded (as Mesos
/// does): NVML is reference-counted and cheap to keep.
class NvmlLibrary {
 public:
  /// The library at `path` (a name searched like dlopen does, or a path), loaded and initialised
  /// on first use. The first failure for a path is remembered: later calls return the same error
  /// without trying again, so a broken driver is reported once, the same way, every time.
  static Result<std::shared_ptr<const NvmlLibrary>> open(const std::string& path);

  /// The resolved functions.
  const NvmlFunctions& fn() const { return fn_; }
  /// The path this library was opened with.
  const std::string& path() const { return path_; }
  /// NVML's description of a return code, e.g. "GPU is lost".
  std::string error_string(nvmlReturn_t rc) const;
  /// The error for a failed call: "<call> failed: <NVML's error string>".
  Error failure(const std::string& call, nvmlReturn_t rc) const;

  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

 private:
  NvmlLibrary(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}
  static Result<std::shared_ptr<const NvmlLibrary>> load(const std::string& path);

  std::string path_;
  void* handle_ = nullptr;
  NvmlFunctions fn_;
};

}  // namespace gpucloud::gpu::nvml
