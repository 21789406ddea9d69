#include "gpu/nvml/nvml_library.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <variant>

namespace gpucloud::gpu::nvml {
namespace {

template <typename Fn>
Fn symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

// Resolves a required symbol, or says which one is missing.
template <typename Fn>
Status require(void* handle, const std::string& path, const char* name, Fn& out) {
  out = symbol<Fn>(handle, name);
  if (out != nullptr) return {};
  return Error{ErrorCode::kUnavailable,
               path + " does not export " + name +
                   "; the NVIDIA driver is too old or this is not libnvidia-ml"};
}

}  // namespace

Result<std::shared_ptr<const NvmlLibrary>> NvmlLibrary::open(const std::string& path) {
  using Entry = std::variant<std::shared_ptr<const NvmlLibrary>, Error>;
  static std::mutex mu;
  static std::map<std::string, Entry> loaded;  // never shrinks: the first outcome is final
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(path);
  if (it == loaded.end()) {
    auto result = load(path);
    Entry entry = result.ok() ? Entry(result.value()) : Entry(result.error());
    it = loaded.emplace(path, std::move(entry)).first;
  }
  if (const auto* error = std::get_if<Error>(&it->second)) return *error;
  return std::get<std::shared_ptr<const NvmlLibrary>>(it->second);
}

Result<std::shared_ptr<const NvmlLibrary>> NvmlLibrary::load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Error{ErrorCode::kUnavailable, "dlopen " + path + ": " + (why ? why : "unknown error")};
  }
  std::shared_ptr<NvmlLibrary> lib(new NvmlLibrary(path, handle));
  NvmlFunctions& f = lib->fn_;
  for (auto status : {
           require(handle, path, "nvmlInit_v2", f.init),
           require(handle, path, "nvmlShutdown", f.shutdown),
           require(handle, path, "nvmlErrorString", f.error_string),
           require(handle, path, "nvmlSystemGetDriverVersion", f.get_driver_version),
           require(handle, path, "nvmlDeviceGetCount_v2", f.get_count),
           require(handle, path, "nvmlDeviceGetHandleByIndex_v2", f.get_handle_by_index),
           require(handle, path, "nvmlDeviceGetName", f.get_name),
           require(handle, path, "nvmlDeviceGetUUID", f.get_uuid),
           require(handle, path, "nvmlDeviceGetMemoryInfo", f.get_memory_info),
           require(handle, path, "nvmlDeviceGetPciInfo_v3", f.get_pci_info),
           require(handle, path, "nvmlDeviceGetUtilizationRates", f.get_utilization_rates),
           require(handle, path, "nvmlDeviceGetTemperature", f.get_temperature),
           require(handle, path, "nvmlDeviceGetPowerUsage", f.get_power_usage),
       }) {
    if (!status.ok()) {
      dlclose(handle);
      return status.error();
    }
  }
  f.get_cuda_driver_version =
      symbol<GetCudaDriverVersionFn>(handle, "nvmlSystemGetCudaDriverVersion_v2");
  if (f.get_cuda_driver_version == nullptr) {
    f.get_cuda_driver_version =
        symbol<GetCudaDriverVersionFn>(handle, "nvmlSystemGetCudaDriverVersion");
  }
  f.get_numa_node_id = symbol<GetUintFn>(handle, "nvmlDeviceGetNumaNodeId");
  f.get_nvlink_state = symbol<GetNvLinkStateFn>(handle, "nvmlDeviceGetNvLinkState");
  f.get_nvlink_remote_pci_info =
      symbol<GetNvLinkRemotePciInfoFn>(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  if (f.get_nvlink_state == nullptr || f.get_nvlink_remote_pci_info == nullptr) {
    f.get_nvlink_state = nullptr;
    f.get_nvlink_remote_pci_info = nullptr;
  }
  f.get_nvlink_remote_device_type =
      symbol<GetNvLinkRemoteDeviceTypeFn>(handle, "nvmlDeviceGetNvLinkRemoteDeviceType");
  f.get_mig_mode = symbol<GetMigModeFn>(handle, "nvmlDeviceGetMigMode");
  f.get_max_mig_device_count = symbol<GetUintFn>(handle, "nvmlDeviceGetMaxMigDeviceCount");
  f.get_mig_device_handle_by_index =
      symbol<GetMigDeviceHandleByIndexFn>(handle, "nvmlDeviceGetMigDeviceHandleByIndex");
  if (!f.get_mig_mode || !f.get_max_mig_device_count || !f.get_mig_device_handle_by_index) {
    f.get_mig_mode = nullptr;
    f.get_max_mig_device_count = nullptr;
    f.get_mig_device_handle_by_index = nullptr;
  }
  f.get_clock_info = symbol<GetClockInfoFn>(handle, "nvmlDeviceGetClockInfo");
  f.get_gpu_instance_id = symbol<GetUintFn>(handle, "nvmlDeviceGetGpuInstanceId");
  f.get_compute_instance_id = symbol<GetUintFn>(handle, "nvmlDeviceGetComputeInstanceId");
  f.get_persistence_mode = symbol<GetEnableStateFn>(handle, "nvmlDeviceGetPersistenceMode");
  f.get_total_ecc_errors = symbol<GetTotalEccErrorsFn>(handle, "nvmlDeviceGetTotalEccErrors");
  f.get_retired_pages_pending_status =
      symbol<GetEnableStateFn>(handle, "nvmlDeviceGetRetiredPagesPendingStatus");
  f.get_remapped_rows = symbol<GetRemappedRowsFn>(handle, "nvmlDeviceGetRemappedRows");
  f.event_set_create = symbol<EventSetCreateFn>(handle, "nvmlEventSetCreate");
  f.register_events = symbol<RegisterEventsFn>(handle, "nvmlDeviceRegisterEvents");
  f.event_set_wait = symbol<EventSetWaitFn>(handle, "nvmlEventSetWait_v2");
  if (!f.event_set_create || !f.register_events || !f.event_set_wait) {
    f.event_set_create = nullptr;
    f.register_events = nullptr;
    f.event_set_wait = nullptr;
  }
  nvmlReturn_t rc = f.init();
  if (rc != NVML_SUCCESS) {
    Error error = lib->failure("nvmlInit_v2", rc);
    error.code = ErrorCode::kUnavailable;
    dlclose(handle);
    return error;
  }
  return std::shared_ptr<const NvmlLibrary>(std::move(lib));
}

std::string NvmlLibrary::error_string(nvmlReturn_t rc) const {
  const char* text = fn_.error_string(rc);
  if (text == nullptr || *text == '\0') return "NVML error " + std::to_string(rc);
  return text;
}

Error NvmlLibrary::failure(const std::string& call, nvmlReturn_t rc) const {
  return internal(call + " failed: " + error_string(rc));
}

}  // namespace gpucloud::gpu::nvml
