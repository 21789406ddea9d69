// Memory cgroups for jobs: finding the memory controller (cgroup v2 or v1), creating one
// cgroup per job with a memory limit, reading its use, and removing it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpucloud::exec {

enum class CgroupVersion { kV1, kV2 };

/// Where the memory controller is mounted.
struct MemoryCgroupRoot {
  CgroupVersion version = CgroupVersion::kV2;
  std::string path;  // e.g. /sys/fs/cgroup (v2) or /sys/fs/cgroup/memory (v1)
};

/// Finds the memory controller in a mount table (proc(5) format): a cgroup2 mount whose
/// cgroup.controllers lists "memory" is preferred, else a cgroup (v1) mount with the memory
/// option. Does not check whether it is writable. nullopt when there is none.
std::optional<MemoryCgroupRoot> find_memory_cgroup_root(
    const std::string& mounts_path = "/proc/self/mounts");

/// Turns a job key into a safe cgroup directory name: [A-Za-z0-9._-] kept, the rest '_'.
std::string cgroup_name_for_key(const std::string& key);

/// Creates `<root>/<parent>/<cgroup_name_for_key(key)>` with a memory limit of `limit_mib`
/// (memory.max on v2, memory.limit_in_bytes on v1; swap is limited too where the kernel
/// allows). Returns its absolute path. kPermissionDenied when the hierarchy is not writable.
Result<std::string> create_memory_cgroup(const MemoryCgroupRoot& root, const std::string& parent,
                                         const std::string& key, int64_t limit_mib);

/// The NVIDIA driver's character device major number (/dev/nvidiaN is 195:N).
inline constexpr int kNvidiaDeviceMajor = 195;
/// Minors of the NVIDIA driver's control nodes, which every GPU job needs: nvidiactl and
/// nvidia-modeset.
inline constexpr int kNvidiaControlMinors[] = {255, 254};
/// The highest character major Linux hands out (dynamic majors are 234-254 and 384-511).
inline constexpr int kLastCharMajor = 511;

/// What a job may open of the NVIDIA driver's devices (docs/security.md, "GPU devices"): its GPUs
/// (/dev/nvidiaN is 195:N) and the control nodes, and of the driver's MIG capability devices
/// (/dev/nvidia-caps/*, a major of their own) those of its MIG devices only.
struct GpuDeviceAccess {
  std::vector<int> gpu_minors;
  int caps_major = -1;  // -1: the host has no MIG capability devices
  std::vector<int> caps_minors;
};

/// Where the cgroup v1 devices controller is mounted (proc(5) mount table), or nullopt.
std::optional<std::string> find_devices_cgroup_root(
    const std::string& mounts_path = "/proc/self/mounts");

/// Creates `<root>/<parent>/<cgroup_name_for_key(key)>` in the v1 devices hierarchy, where of
/// the NVIDIA driver's devices only what `access` lists may be opened (others get EPERM); every
/// other device stays as the parent allows. Returns its absolute path. kPermissionDenied when
/// the hierarchy is not writable.
Result<std::string> create_gpu_devices_cgroup(const std::string& root, const std::string& parent,
                                              const std::string& key,
                                              const GpuDeviceAccess& access);

/// Creates `<root>/<parent>/<cgroup_name_for_key(key)>` in the cgroup v2 hierarchy `root` (it
/// may already exist: on a v2 host it is also the job's memory cgroup) and attaches a BPF
/// device program to it that lets the job open, of the NVIDIA driver's devices, only what
/// `access` lists (bpf_devices.h). Returns its absolute path. kPermissionDenied when the
/// hierarchy is not writable or BPF is not allowed.
Result<std::string> create_gpu_devices_bpf_cgroup(const std::string& root,
                                                  const std::string& parent, const std::string& key,
                                                  const GpuDeviceAccess& access);

/// Memory charged to the cgroup (memory.current or memory.usage_in_bytes), in bytes.
Result<int64_t> cgroup_memory_bytes(const std::string& cgroup);

/// The cgroup's memory limit in bytes; nullopt when unlimited or unreadable.
std::optional<int64_t> cgroup_memory_limit_bytes(const std::string& cgroup);

/// How many processes the kernel OOM killer has killed in the cgroup (0 if unknown).
int64_t cgroup_oom_kills(const std::string& cgroup);

/// The pids in the cgroup (cgroup.procs).
std::vector<int> cgroup_pids(const std::string& cgroup);

/// SIGKILLs whatever is left in the cgroup and removes its directory. Returns true when the
/// directory is gone (or never existed); false when it is still busy (retry later).
bool remove_cgroup(const std::string& cgroup);

}  // namespace gpucloud::exec
