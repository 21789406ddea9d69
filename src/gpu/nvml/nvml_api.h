// The few NVML C types, constants and function signatures gpucloud uses, declared here so that
// the build needs neither nvml.h nor the driver. Layouts and values match NVML's C ABI (nvml.h
// of CUDA 12); the fake library in tests/fakes/ declares the same ones on its side.
#pragma once

namespace gpucloud::gpu::nvml {

using nvmlReturn_t = int;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
using nvmlEnableState_t = int;
using nvmlTemperatureSensors_t = int;
using nvmlIntNvLinkDeviceType_t = int;
using nvmlClockType_t = int;
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;

inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlEnableState_t NVML_FEATURE_ENABLED = 1;
inline constexpr nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU = 0;
inline constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_SWITCH = 2;
inline constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;
inline constexpr unsigned NVML_DEVICE_MIG_ENABLE = 1;
inline constexpr nvmlClockType_t NVML_CLOCK_SM = 1;
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;
using nvmlMemoryErrorType_t = int;
using nvmlEccCounterType_t = int;
inline constexpr nvmlMemoryErrorType_t NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;
inline constexpr nvmlEccCounterType_t NVML_VOLATILE_ECC = 0;

/// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3 and nvmlDeviceGetNvLinkRemotePciInfo_v2.
struct nvmlPciInfo_t {
  char busIdLegacy[16];  // "0000:07:00.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // "00000000:07:00.0"
};

/// nvmlMemory_t: bytes.
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

/// nvmlUtilization_t: percent over the last sample period.
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

/// nvmlEventData_t as filled by nvmlEventSetWait_v2: for an XID event, eventData is the XID.
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// Function signatures, named after the NVML symbol they are resolved from.
using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using GetDriverVersionFn = nvmlReturn_t (*)(char*, unsigned int);
using GetCudaDriverVersionFn = nvmlReturn_t (*)(int*);
using GetCountFn = nvmlReturn_t (*)(unsigned int*);
using GetHandleByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using GetStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using GetMemoryInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using GetPciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using GetUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using GetNvLinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlEnableState_t*);
using GetNvLinkRemotePciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);
using GetNvLinkRemoteDeviceTypeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                     nvmlIntNvLinkDeviceType_t*);
using GetMigModeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using GetMigDeviceHandleByIndexFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlDevice_t*);
using GetUtilizationRatesFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using GetClockInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlClockType_t, unsigned int*);
using EventSetCreateFn = nvmlReturn_t (*)(nvmlEventSet_t*);
using RegisterEventsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
using EventSetWaitFn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using GetEnableStateFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlEnableState_t*);
using GetTotalEccErrorsFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemoryErrorType_t,
                                             nvmlEccCounterType_t, unsigned long long*);
using GetRemappedRowsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*,
                                           unsigned int*, unsigned int*);
using GetTemperatureFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int*);

}  // namespace gpucloud::gpu::nvml
