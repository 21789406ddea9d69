// The NVIDIA driver's MIG capability device nodes (/dev/nvidia-caps/nvidia-capN): a process
// uses a MIG device through the "access" capabilities of its GPU instance and of its compute
// instance (docs/security.md, "MIG devices").
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpucloud::agent {

/// The capability devices of this host.
struct MigCaps {
  int major = -1;  // the "nvidia-caps" character major; -1: none (no MIG on this host)
  std::map<std::string, int> minors;  // e.g. "gpu0/gi1/access" -> 21, "gpu0/gi1/ci0/access" -> 22

  /// The minors a job on the MIG device (GPU minor, GPU instance, compute instance) needs;
  /// empty when either is unknown.
  std::vector<int> for_device(int gpu_minor, int gpu_instance, int compute_instance) const;
};

/// Reads the major from proc_devices (/proc/devices) and the minors from mig_minors
/// (/proc/driver/nvidia-caps/mig-minors: lines "NAME MINOR"). Missing files: no caps.
MigCaps read_mig_caps(const std::string& proc_devices = "/proc/devices",
                      const std::string& mig_minors = "/proc/driver/nvidia-caps/mig-minors");

}  // namespace gpucloud::agent
