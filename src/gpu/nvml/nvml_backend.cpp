#include "gpu/nvml/nvml_backend.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <tuple>

#include "model/gpu_model.h"

namespace gpucloud::gpu {
namespace {

using nvml::NVML_SUCCESS;
using nvml::nvmlDevice_t;
using nvml::nvmlReturn_t;

constexpr unsigned kStringBuffer = 256;  // NVML's largest name/uuid/version buffer is 96
constexpr int64_t kMiB = 1024 * 1024;

std::string at(int index) {
  return "(index " + std::to_string(index) + ")";
}

// "00000000:07:00.0" (NVML) -> "0000:07:00.0" (sysfs: lower case, domain as %04x).
std::string sysfs_pci_name(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) {
    return "";
  }
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain, bus, device, function);
  return out;
}

bool unsupported(nvmlReturn_t rc) {
  return rc == nvml::NVML_ERROR_NOT_SUPPORTED;
}

// "NVIDIA A100-SXM4-80GB MIG 3g.40gb" -> "3g.40gb".
std::string mig_profile(const std::string& name) {
  auto pos = name.rfind("MIG ");
  return pos == std::string::npos ? name : name.substr(pos + 4);
}

}  // namespace

Result<std::unique_ptr<NvmlBackend>> NvmlBackend::create(const GpuBackendConfig& config,
                                                         NvmlOptions options) {
  auto lib = nvml::NvmlLibrary::open(config.nvml_library);
  if (!lib.ok()) return lib.error();
  std::unique_ptr<NvmlBackend> backend(new NvmlBackend(std::move(lib).value(), std::move(options)));
  const auto& fn = backend->lib_->fn();
  char version[kStringBuffer] = {};
  nvmlReturn_t rc = fn.get_driver_version(version, sizeof version);
  if (rc != NVML_SUCCESS) return backend->lib_->failure("nvmlSystemGetDriverVersion", rc);
  backend->driver_version_ = version;
  int cuda = 0;
  if (fn.get_cuda_driver_version != nullptr && fn.get_cuda_driver_version(&cuda) == NVML_SUCCESS &&
      cuda > 0) {
    backend->cuda_version_ = std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10);
  }
  return backend;
}

Result<int> NvmlBackend::device_count() const {
  unsigned count = 0;
  nvmlReturn_t rc = lib_->fn().get_count(&count);
  if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetCount_v2", rc);
  return static_cast<int>(count);
}

Result<nvmlDevice_t> NvmlBackend::handle(int index) const {
  nvmlDevice_t device = nullptr;
  nvmlReturn_t rc = lib_->fn().get_handle_by_index(static_cast<unsigned>(index), &device);
  if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetHandleByIndex_v2" + at(index), rc);
  return device;
}

Result<std::vector<Gpu>> NvmlBackend::discover() {
  auto count = device_count();
  if (!count.ok()) return count.error();
  std::vector<Gpu> gpus;
  std::vector<nvmlDevice_t> devices;
  for (int i = 0; i < *count; ++i) {
    auto device = handle(i);
    if (!device.ok()) return device.error();
    auto gpu = describe(i, *device);
    if (!gpu.ok()) return gpu.error();
    devices.push_back(*device);
    gpus.push_back(std::move(gpu).value());
  }
  add_nvlink_peers(devices, gpus);
  return gpus;
}

Result<Gpu> NvmlBackend::describe(int index, nvmlDevice_t device) const {
  const auto& fn = lib_->fn();
  Gpu gpu;
  gpu.index = index;
  char text[kStringBuffer] = {};
  nvmlReturn_t rc = fn.get_name(device, text, sizeof text);
  if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetName" + at(index), rc);
  gpu.name = text;
  gpu.model = canonical_gpu_model(gpu.name);
  rc = fn.get_uuid(device, text, sizeof text);
  if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetUUID" + at(index), rc);
  gpu.uuid = text;
  nvml::nvmlMemory_t memory{};
  rc = fn.get_memory_info(device, &memory);
  if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetMemoryInfo" + at(index), rc);
  gpu.memory_mib = static_cast<int64_t>(memory.total / kMiB);
  nvml::nvmlPciInfo_t pci{};
  rc = fn.get_pci_info(device, &pci);
  if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetPciInfo_v3" + at(index), rc);
  gpu.pci_bus_id = std::string(pci.busId, strnlen(pci.busId, sizeof pci.busId));
  gpu.numa_node = numa_node(device, gpu.pci_bus_id);
  auto mig = mig_devices(index, device);
  if (!mig.ok()) return mig.error();
  gpu.mig = std::move(mig).value();
  return gpu;
}

int NvmlBackend::numa_node(nvmlDevice_t device, const std::string& pci_bus_id) const {
  std::string name = sysfs_pci_name(pci_bus_id);
  if (!name.empty()) {
    std::ifstream in(options_.sysfs_root + "/bus/pci/devices/" + name + "/numa_node");
    int node = -1;
    if (in >> node && node >= 0) return node;
  }
  unsigned node = 0;
  const auto& fn = lib_->fn();
  if (fn.get_numa_node_id != nullptr && fn.get_numa_node_id(device, &node) == NVML_SUCCESS) {
    return static_cast<int>(node);
  }
  return -1;
}

Result<std::vector<MigDevice>> NvmlBackend::mig_devices(int index, nvmlDevice_t device) const {
  const auto& fn = lib_->fn();
  std::vector<MigDevice> out;
  if (fn.get_mig_mode == nullptr) return out;
  unsigned current = 0, pending = 0;
  nvmlReturn_t rc = fn.get_mig_mode(device, &current, &pending);
  if (unsupported(rc)) return out;
  if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetMigMode" + at(index), rc);
  if (current != nvml::NVML_DEVICE_MIG_ENABLE) return out;
  unsigned max = 0;
  rc = fn.get_max_mig_device_count(device, &max);
  if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetMaxMigDeviceCount" + at(index), rc);
  for (unsigned k = 0; k < max; ++k) {
    std::string where = "(index " + std::to_string(index) + ", MIG " + std::to_string(k) + ")";
    nvmlDevice_t mig = nullptr;
    rc = fn.get_mig_device_handle_by_index(device, k, &mig);
    if (rc == nvml::NVML_ERROR_NOT_FOUND || rc == nvml::NVML_ERROR_INVALID_ARGUMENT) continue;
    if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetMigDeviceHandleByIndex" + where, rc);
    MigDevice dev;
    char text[kStringBuffer] = {};
    rc = fn.get_uuid(mig, text, sizeof text);
    if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetUUID" + where, rc);
    dev.uuid = text;
    rc = fn.get_name(mig, text, sizeof text);
    if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetName" + where, rc);
    dev.profile = mig_profile(text);
    nvml::nvmlMemory_t memory{};
    rc = fn.get_memory_info(mig, &memory);
    if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetMemoryInfo" + where, rc);
    dev.memory_mib = static_cast<int64_t>(memory.total / kMiB);
    // Which capability device nodes give access to it (docs/security.md, "MIG devices").
    unsigned id = 0;
    if (fn.get_gpu_instance_id && fn.get_gpu_instance_id(mig, &id) == NVML_SUCCESS)
      dev.gpu_instance = static_cast<int>(id);
    if (fn.get_compute_instance_id && fn.get_compute_instance_id(mig, &id) == NVML_SUCCESS)
      dev.compute_instance = static_cast<int>(id);
    out.push_back(std::move(dev));
  }
  return out;
}

void NvmlBackend::add_nvlink_peers(const std::vector<nvmlDevice_t>& devices,
                                   std::vector<Gpu>& gpus) const {
  const auto& fn = lib_->fn();
  if (fn.get_nvlink_state == nullptr) return;
  // Local GPUs by PCI address, to map a link's remote end back to a GPU index.
  std::map<std::tuple<unsigned, unsigned, unsigned>, int> by_pci;
  for (size_t i = 0; i < devices.size(); ++i) {
    nvml::nvmlPciInfo_t pci{};
    if (fn.get_pci_info(devices[i], &pci) == NVML_SUCCESS) {
      by_pci[{pci.domain, pci.bus, pci.device}] = static_cast<int>(i);
    }
  }
  std::vector<std::vector<bool>> linked(devices.size(), std::vector<bool>(devices.size()));
  std::vector<int> on_switch;
  for (size_t i = 0; i < devices.size(); ++i) {
    bool switched = false;
    for (unsigned link = 0; link < nvml::NVML_NVLINK_MAX_LINKS; ++link) {
      nvml::nvmlEnableState_t active = 0;
      if (fn.get_nvlink_state(devices[i], link, &active) != NVML_SUCCESS ||
          active != nvml::NVML_FEATURE_ENABLED) {
        continue;
      }
      nvml::nvmlIntNvLinkDeviceType_t type = 0;
      if (fn.get_nvlink_remote_device_type != nullptr &&
          fn.get_nvlink_remote_device_type(devices[i], link, &type) == NVML_SUCCESS &&
          type == nvml::NVML_NVLINK_DEVICE_TYPE_SWITCH) {
        switched = true;
        continue;
      }
      nvml::nvmlPciInfo_t remote{};
      if (fn.get_nvlink_remote_pci_info(devices[i], link, &remote) != NVML_SUCCESS) continue;
      auto it = by_pci.find({remote.domain, remote.bus, remote.device});
      if (it == by_pci.end() || it->second == static_cast<int>(i)) continue;
      linked[i][it->second] = linked[it->second][i] = true;
    }
    if (switched) on_switch.push_back(static_cast<int>(i));
  }
  for (int a : on_switch) {
    for (int b : on_switch) linked[a][b] = a != b;
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = 0; j < devices.size(); ++j) {
      if (linked[i][j]) gpus[i].nvlink_peers.push_back(static_cast<int>(j));
    }
  }
}

Result<std::vector<GpuTelemetry>> NvmlBackend::telemetry() {
  auto count = device_count();
  if (!count.ok()) return count.error();
  std::vector<nvml::nvmlDevice_t> devices;
  for (int i = 0; i < *count; ++i) {
    auto device = handle(i);
    if (!device.ok()) return device.error();
    devices.push_back(*device);
  }
  drain_xid_events(devices);
  std::vector<GpuTelemetry> out;
  for (int i = 0; i < *count; ++i) {
    auto reading = read_telemetry(i, devices[static_cast<size_t>(i)]);
    if (!reading.ok()) return reading.error();
    std::lock_guard lock(xid_mu_);
    reading->last_xid = xids_[i].last;
    reading->xid_count = xids_[i].count;
    out.push_back(*reading);
  }
  return out;
}

Result<std::vector<GpuHealth>> NvmlBackend::health() {
  const auto& fn = lib_->fn();
  auto count = device_count();
  if (!count.ok()) return count.error();
  std::vector<GpuHealth> out;
  for (int i = 0; i < *count; ++i) {
    auto device = handle(i);
    if (!device.ok()) return device.error();
    GpuHealth h;
    h.index = i;
    // Each reading is optional: a GPU or driver that does not support it leaves it unknown.
    nvml::nvmlEnableState_t state = 0;
    if (fn.get_persistence_mode && fn.get_persistence_mode(*device, &state) == NVML_SUCCESS)
      h.persistence_mode = state == nvml::NVML_FEATURE_ENABLED ? 1 : 0;
    unsigned long long ecc = 0;
    if (fn.get_total_ecc_errors &&
        fn.get_total_ecc_errors(*device, nvml::NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                nvml::NVML_VOLATILE_ECC, &ecc) == NVML_SUCCESS)
      h.ecc_uncorrected_volatile = static_cast<int64_t>(ecc);
    if (fn.get_retired_pages_pending_status &&
        fn.get_retired_pages_pending_status(*device, &state) == NVML_SUCCESS)
      h.retired_pages_pending = state == nvml::NVML_FEATURE_ENABLED ? 1 : 0;
    unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
    if (fn.get_remapped_rows && fn.get_remapped_rows(*device, &corrected, &uncorrected, &pending,
                                                     &failure) == NVML_SUCCESS) {
      h.remapped_rows_pending = pending ? 1 : 0;
      h.remapped_rows_failure = failure ? 1 : 0;
    }
    out.push_back(h);
  }
  return out;
}

void NvmlBackend::drain_xid_events(const std::vector<nvml::nvmlDevice_t>& devices) {
  const auto& fn = lib_->fn();
  if (!fn.event_set_create) return;
  std::lock_guard lock(xid_mu_);
  if (!xid_registered_) {
    xid_registered_ = true;
    if (fn.event_set_create(&xid_events_) != NVML_SUCCESS) {
      xid_events_ = nullptr;
      return;
    }
    for (size_t i = 0; i < devices.size(); ++i) {
      nvmlReturn_t rc =
          fn.register_events(devices[i], nvml::nvmlEventTypeXidCriticalError, xid_events_);
      if (rc != NVML_SUCCESS)
        spdlog::warn("nvml: GPU {} cannot report XID errors: {}", i, lib_->error_string(rc));
    }
  }
  if (!xid_events_) return;
  // Bounded: a storm of events is taken over several readings, never in one endless loop.
  for (int taken = 0; taken < 1024; ++taken) {
    nvml::nvmlEventData_t event{};
    if (fn.event_set_wait(xid_events_, &event, 0) != NVML_SUCCESS) break;
    if (event.eventType != nvml::nvmlEventTypeXidCriticalError) continue;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (devices[i] != event.device) continue;
      XidState& x = xids_[static_cast<int>(i)];
      x.last = static_cast<int64_t>(event.eventData);
      ++x.count;
    }
  }
}

Result<GpuTelemetry> NvmlBackend::read_telemetry(int index, nvmlDevice_t device) const {
  const auto& fn = lib_->fn();
  GpuTelemetry t;
  t.index = index;
  nvml::nvmlUtilization_t util{};
  nvmlReturn_t rc = fn.get_utilization_rates(device, &util);
  if (rc == NVML_SUCCESS) {
    t.utilization_pct = static_cast<int>(std::min(util.gpu, 100u));
  } else if (!unsupported(rc)) {
    return lib_->failure("nvmlDeviceGetUtilizationRates" + at(index), rc);
  }
  nvml::nvmlMemory_t memory{};
  rc = fn.get_memory_info(device, &memory);
  if (rc != NVML_SUCCESS) return lib_->failure("nvmlDeviceGetMemoryInfo" + at(index), rc);
  t.memory_used_mib = static_cast<int64_t>(memory.used / kMiB);
  t.memory_free_mib = static_cast<int64_t>(memory.free / kMiB);
  unsigned value = 0;
  rc = fn.get_temperature(device, nvml::NVML_TEMPERATURE_GPU, &value);
  if (rc == NVML_SUCCESS) {
    t.temperature_c = static_cast<int>(value);
  } else if (!unsupported(rc)) {
    return lib_->failure("nvmlDeviceGetTemperature" + at(index), rc);
  }
  rc = fn.get_power_usage(device, &value);  // milliwatts
  if (rc == NVML_SUCCESS) {
    t.power_w = static_cast<int>((value + 500) / 1000);
  } else if (!unsupported(rc)) {
    return lib_->failure("nvmlDeviceGetPowerUsage" + at(index), rc);
  }
  if (fn.get_clock_info) {
    rc = fn.get_clock_info(device, nvml::NVML_CLOCK_SM, &value);
    if (rc == NVML_SUCCESS) {
      t.sm_clock_mhz = static_cast<int>(value);
    } else if (!unsupported(rc)) {
      return lib_->failure("nvmlDeviceGetClockInfo" + at(index), rc);
    }
  }
  return t;
}

}  // namespace gpucloud::gpu
