// GPU device isolation on cgroup v2 (docs/security.md, "GPU devices"): a BPF device program,
// attached to a job's cgroup, that lets the job open only its own GPUs' device nodes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "exec/process/cgroup.h"

namespace gpucloud::exec {

/// One BPF instruction, laid out as the kernel's struct bpf_insn.
struct BpfInstruction {
  uint8_t code = 0;
  uint8_t registers = 0;  // dst in the low 4 bits, src in the high 4
  int16_t offset = 0;
  int32_t imm = 0;
};

/// The device program: of the NVIDIA driver's character devices (major 195) only the job's GPUs
/// and the control nodes (nvidiactl 255, nvidia-modeset 254) may be opened or made, and of its
/// MIG capability devices (access.caps_major) only access.caps_minors; every other device is
/// allowed (left to what the parent cgroups allow).
std::vector<BpfInstruction> gpu_device_program(const GpuDeviceAccess& access);

/// Loads gpu_device_program(access) and attaches it to the cgroup v2 directory `cgroup` with
/// BPF_F_ALLOW_MULTI (the programs of parent cgroups, e.g. systemd's, still apply). The program
/// stays attached until the cgroup is removed. Fails with the kernel's reason and the
/// verifier's log; kPermissionDenied when the host does not allow it (not root, no cgroup BPF,
/// a parent's exclusive program).
Status attach_gpu_device_program(const std::string& cgroup, const GpuDeviceAccess& access);

/// Whether this process may load a cgroup device program (root, a kernel with cgroup BPF).
bool gpu_device_programs_allowed();

/// The cgroup v2 hierarchy in a mount table (proc(5) format): /sys/fs/cgroup on a v2 host,
/// /sys/fs/cgroup/unified on a hybrid one; nullopt when none is mounted.
std::optional<std::string> find_unified_cgroup_root(
    const std::string& mounts_path = "/proc/self/mounts");

}  // namespace gpucloud::exec
