/* A fake libnvidia-ml.so.1 for tests: the NVML C functions gpucloud uses, over canned devices.
 *
 * Default machine: 4 "NVIDIA A100-SXM4-80GB" GPUs, NVLink pairs 0-1 and 2-3, NUMA nodes
 * 0,0,1,1, MIG on for GPU 1 with two 3g.40gb devices, driver 550.54.15, CUDA 12.4.
 * Environment variables, read at every call:
 *   FAKE_NVML_DEVICES=N         N GPUs (0..64); pairs and NUMA halves follow the same rule
 *   FAKE_NVML_FAIL=nvmlXxx      that function fails ...
 *   FAKE_NVML_FAIL_CODE=C       ... with return code C (default 15, NVML_ERROR_GPU_IS_LOST) ...
 *   FAKE_NVML_FAIL_INDEX=I      ... for GPU I only (default: every GPU)
 *   FAKE_NVML_NVSWITCH=1        every GPU's links go to NVSwitches instead of a peer GPU
 *   FAKE_NVML_MIG=I             GPU I has MIG on (default 1; -1: none)
 *   FAKE_NVML_XID=I:X           GPU I reports critical XID X, once per event set
 *   FAKE_NVML_ECC=I:N           GPU I has N uncorrectable volatile ECC errors
 *   FAKE_NVML_PERSISTENCE=0     persistence mode is off on every GPU
 *   FAKE_NVML_RETIRED_PENDING=I GPU I has pages waiting to be retired at the next reboot
 *   FAKE_NVML_REMAP_FAILURE=I   a row remapping failed on GPU I
 * SM clocks read 1410 MHz less 10 per GPU index.
 * Built with FAKE_NVML_MINIMAL it exports only what old drivers have: no NUMA, NVLink, MIG,
 * clock or event calls, and nvmlSystemGetCudaDriverVersion without _v2.
 * Calls other than nvmlInit_v2 and nvmlErrorString fail with NVML_ERROR_UNINITIALIZED unless
 * the library is initialised, as the real one does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlPciInfo_st {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

#define MAX_DEVICES 64
#define MAX_MIG 7
#define MIG_DEVICES 2
#define LINKS 12 /* an A100 has 12 NVLinks */
#define PEER_LINKS 6
#define MIB (1024ull * 1024ull)

struct nvmlDevice_st {
  int index; /* of the physical GPU */
  int mig;   /* -1 for the physical GPU, else the MIG device's index */
};
typedef struct nvmlDevice_st* nvmlDevice_t;

static struct nvmlDevice_st g_gpus[MAX_DEVICES];
static struct nvmlDevice_st g_migs[MAX_DEVICES][MAX_MIG];
static int g_init_count;

static int env_int(const char* name, int fallback) {
  const char* value = getenv(name);
  return value && *value ? atoi(value) : fallback;
}

static int device_count(void) {
  int n = env_int("FAKE_NVML_DEVICES", 4);
  return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
}

__attribute__((unused)) static int mig_gpu(void) {
  return env_int("FAKE_NVML_MIG", 1);
}

/* Whether the call `fn` on GPU `index` (-1: not a GPU call) is set to fail. */
static int failing(const char* fn, int index) {
  const char* which = getenv("FAKE_NVML_FAIL");
  if (!which || strcmp(which, fn) != 0) return 0;
  int only = env_int("FAKE_NVML_FAIL_INDEX", -1);
  return only < 0 || index < 0 || only == index;
}

#define FAKE_CALL(fn, index)                                                               \
  do {                                                                                     \
    if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;                                \
    if (failing(fn, index)) return env_int("FAKE_NVML_FAIL_CODE", NVML_ERROR_GPU_IS_LOST); \
  } while (0)

/* The device behind a handle, or NULL when it is not one of ours. */
static nvmlDevice_t check(nvmlDevice_t d) {
  if (d == NULL || d->index < 0 || d->index >= device_count()) return NULL;
  return d;
}

static nvmlReturn_t copy_string(const char* text, char* out, unsigned int length) {
  if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(out, text, strlen(text) + 1);
  return NVML_SUCCESS;
}

static const unsigned kBus[8] = {0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD};

static void pci_of(unsigned domain, unsigned bus, unsigned pci_device_id, nvmlPciInfo_t* pci) {
  memset(pci, 0, sizeof *pci);
  pci->domain = domain;
  pci->bus = bus;
  pci->device = 0;
  pci->pciDeviceId = pci_device_id;
  pci->pciSubSystemId = 0x145f10de;
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:00.0", domain, bus);
  snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:00.0", domain, bus);
}

API const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

API nvmlReturn_t nvmlInit_v2(void) {
  if (failing("nvmlInit_v2", -1)) return env_int("FAKE_NVML_FAIL_CODE", NVML_ERROR_GPU_IS_LOST);
  for (int i = 0; i < MAX_DEVICES; ++i) {
    g_gpus[i].index = i;
    g_gpus[i].mig = -1;
    for (int k = 0; k < MAX_MIG; ++k) {
      g_migs[i][k].index = i;
      g_migs[i][k].mig = k;
    }
  }
  ++g_init_count;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlShutdown(void) {
  FAKE_CALL("nvmlShutdown", -1);
  --g_init_count;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  FAKE_CALL("nvmlSystemGetDriverVersion", -1);
  return copy_string("550.54.15", version, length);
}

static nvmlReturn_t cuda_version(const char* fn, int* version) {
  FAKE_CALL(fn, -1);
  if (version == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *version = 12040;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  return cuda_version("nvmlSystemGetCudaDriverVersion", version);
}

API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  FAKE_CALL("nvmlDeviceGetCount_v2", -1);
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = (unsigned)device_count();
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  FAKE_CALL("nvmlDeviceGetHandleByIndex_v2", (int)index);
  if (device == NULL || index >= (unsigned)device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_gpus[index];
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  nvmlDevice_t d = check(device);
  if (d == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetName", d->index);
  if (d->mig >= 0) return copy_string("NVIDIA A100-SXM4-80GB MIG 3g.40gb", name, length);
  return copy_string("NVIDIA A100-SXM4-80GB", name, length);
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  nvmlDevice_t d = check(device);
  if (d == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetUUID", d->index);
  char text[96];
  if (d->mig >= 0) {
    snprintf(text, sizeof text, "MIG-fa4e%04x-%04x-4000-8000-00000000cafe", d->index, d->mig);
  } else {
    snprintf(text, sizeof text, "GPU-fa4e%04x-0000-4000-8000-00000000beef", d->index);
  }
  return copy_string(text, uuid, length);
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  nvmlDevice_t d = check(device);
  if (d == NULL || memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetMemoryInfo", d->index);
  memory->total = (d->mig >= 0 ? 40192ull : 81920ull) * MIB;
  memory->used = d->mig >= 0 ? 0 : (unsigned long long)(d->index + 1) * 1024ull * MIB;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  nvmlDevice_t d = check(device);
  if (d == NULL || pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetPciInfo_v3", d->index);
  pci_of((unsigned)(d->index / 8), kBus[d->index % 8], 0x20b210de, pci);
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* util) {
  nvmlDevice_t d = check(device);
  if (d == NULL || util == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetUtilizationRates", d->index);
#ifndef FAKE_NVML_MINIMAL
  if (d->index == mig_gpu()) return NVML_ERROR_NOT_SUPPORTED; /* as with MIG on */
#endif
  util->gpu = (unsigned)(d->index * 10 % 100);
  util->memory = (unsigned)(d->index * 5 % 100);
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int* temp) {
  nvmlDevice_t d = check(device);
  if (d == NULL || temp == NULL || sensor != 0) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetTemperature", d->index);
  *temp = (unsigned)(30 + d->index);
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  nvmlDevice_t d = check(device);
  if (d == NULL || milliwatts == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetPowerUsage", d->index);
  *milliwatts = (unsigned)(60000 + d->index * 10000);
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_MINIMAL
/* ---- Calls that newer drivers have: CUDA version _v2, NUMA, NVLink, MIG. ---- */

API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return cuda_version("nvmlSystemGetCudaDriverVersion_v2", version);
}

API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* mhz) {
  nvmlDevice_t d = check(device);
  if (d == NULL || mhz == NULL || type != 1 /* NVML_CLOCK_SM */) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetClockInfo", d->index);
  *mhz = (unsigned)(1410 - 10 * d->index);
  return NVML_SUCCESS;
}

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

struct nvmlEventSet_st {
  unsigned long long registered[MAX_DEVICES]; /* event mask per GPU */
  int xid_delivered;
};
typedef struct nvmlEventSet_st* nvmlEventSet_t;

API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  FAKE_CALL("nvmlEventSetCreate", -1);
  if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *set = calloc(1, sizeof(struct nvmlEventSet_st));
  return *set ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                          nvmlEventSet_t set) {
  nvmlDevice_t d = check(device);
  if (d == NULL || set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceRegisterEvents", d->index);
  set->registered[d->index] |= types;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                     unsigned int timeout_ms) {
  (void)timeout_ms;
  if (set == NULL || data == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlEventSetWait_v2", -1);
  const char* xid = getenv("FAKE_NVML_XID");
  int index = -1;
  unsigned long long value = 0;
  if (set->xid_delivered || !xid || sscanf(xid, "%d:%llu", &index, &value) != 2 || index < 0 ||
      index >= device_count() || (set->registered[index] & 0x8ULL) == 0)
    return NVML_ERROR_TIMEOUT;
  set->xid_delivered = 1;
  memset(data, 0, sizeof *data);
  data->device = &g_gpus[index];
  data->eventType = 0x8ULL;
  data->eventData = value;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  nvmlDevice_t d = check(device);
  if (d == NULL || node == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetNumaNodeId", d->index);
  *node = (unsigned)(d->index * 2 / device_count());
  return NVML_SUCCESS;
}

static int nvswitch(void) {
  return env_int("FAKE_NVML_NVSWITCH", 0) != 0;
}

/* The GPU at the other end of a link in pair mode, or -1. */
static int link_peer(int index, unsigned link) {
  int peer = index ^ 1;
  return link < PEER_LINKS && peer < device_count() ? peer : -1;
}

API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int* active) {
  nvmlDevice_t d = check(device);
  if (d == NULL || active == NULL || link >= LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetNvLinkState", d->index);
  *active = nvswitch() || link_peer(d->index, link) >= 0;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                     nvmlPciInfo_t* pci) {
  nvmlDevice_t d = check(device);
  if (d == NULL || pci == NULL || link >= LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetNvLinkRemotePciInfo_v2", d->index);
  if (nvswitch()) {
    pci_of(0, 0xC0 + link % 6, 0x1af110de, pci); /* one of 6 NVSwitches */
    return NVML_SUCCESS;
  }
  int peer = link_peer(d->index, link);
  if (peer < 0) return NVML_ERROR_NOT_SUPPORTED;
  pci_of((unsigned)(peer / 8), kBus[peer % 8], 0x20b210de, pci);
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                     int* type) {
  nvmlDevice_t d = check(device);
  if (d == NULL || type == NULL || link >= LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetNvLinkRemoteDeviceType", d->index);
  if (!nvswitch() && link_peer(d->index, link) < 0) return NVML_ERROR_NOT_SUPPORTED;
  *type = nvswitch() ? 2 /* NVML_NVLINK_DEVICE_TYPE_SWITCH */ : 0 /* GPU */;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                      unsigned int* pending) {
  nvmlDevice_t d = check(device);
  if (d == NULL || d->mig >= 0 || current == NULL || pending == NULL) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  FAKE_CALL("nvmlDeviceGetMigMode", d->index);
  *current = *pending = d->index == mig_gpu();
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  nvmlDevice_t d = check(device);
  if (d == NULL || d->mig >= 0 || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetMaxMigDeviceCount", d->index);
  *count = MAX_MIG;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                     nvmlDevice_t* mig) {
  nvmlDevice_t d = check(device);
  if (d == NULL || d->mig >= 0 || mig == NULL || index >= MAX_MIG) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  FAKE_CALL("nvmlDeviceGetMigDeviceHandleByIndex", d->index);
  if (d->index != mig_gpu() || index >= MIG_DEVICES) return NVML_ERROR_NOT_FOUND;
  *mig = &g_migs[d->index][index];
  return NVML_SUCCESS;
}

/* A MIG device's GPU instance is 1 + its place on the GPU, its compute instance 0. */
API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  nvmlDevice_t d = check(device);
  if (d == NULL || d->mig < 0 || id == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetGpuInstanceId", d->index);
  *id = (unsigned)d->mig + 1;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  nvmlDevice_t d = check(device);
  if (d == NULL || d->mig < 0 || id == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetComputeInstanceId", d->index);
  *id = 0;
  return NVML_SUCCESS;
}

/* Health: FAKE_NVML_ECC=I:N gives GPU I N uncorrectable volatile ECC errors;
 * FAKE_NVML_PERSISTENCE=0 turns persistence mode off; FAKE_NVML_RETIRED_PENDING=I and
 * FAKE_NVML_REMAP_FAILURE=I mark GPU I. */
static int env_pair(const char* name, int index, int* value) {
  const char* text = getenv(name);
  int gpu = 0, n = 0;
  if (!text || sscanf(text, "%d:%d", &gpu, &n) != 2 || gpu != index) return 0;
  *value = n;
  return 1;
}

API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int* mode) {
  nvmlDevice_t d = check(device);
  if (d == NULL || d->mig >= 0 || mode == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetPersistenceMode", d->index);
  *mode = env_int("FAKE_NVML_PERSISTENCE", 1) != 0;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type, int counter_type,
                                             unsigned long long* count) {
  nvmlDevice_t d = check(device);
  if (d == NULL || d->mig >= 0 || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetTotalEccErrors", d->index);
  int n = 0;
  /* Only uncorrected (1) volatile (0) errors are ever non-zero here. */
  *count = error_type == 1 && counter_type == 0 && env_pair("FAKE_NVML_ECC", d->index, &n)
               ? (unsigned long long)n
               : 0;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int* pending) {
  nvmlDevice_t d = check(device);
  if (d == NULL || d->mig >= 0 || pending == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetRetiredPagesPendingStatus", d->index);
  *pending = env_int("FAKE_NVML_RETIRED_PENDING", -1) == d->index;
  return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrected,
                                           unsigned int* uncorrected, unsigned int* pending,
                                           unsigned int* failure) {
  nvmlDevice_t d = check(device);
  if (d == NULL || d->mig >= 0 || !corrected || !uncorrected || !pending || !failure)
    return NVML_ERROR_INVALID_ARGUMENT;
  FAKE_CALL("nvmlDeviceGetRemappedRows", d->index);
  int failed = env_int("FAKE_NVML_REMAP_FAILURE", -1) == d->index;
  *corrected = 0;
  *uncorrected = failed ? 1 : 0;
  *pending = 0;
  *failure = (unsigned)failed;
  return NVML_SUCCESS;
}
#endif /* FAKE_NVML_MINIMAL */
