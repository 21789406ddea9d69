// The GPU device nodes a container job gets (docs/containers.md, "GPUs"), and the CDI spec
// describing them for engines that read CDI.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace gpucloud::agent {

/// Where a node's GPU device nodes are: /dev for real GPUs; for simulated ones, fake nodes the
/// agent makes in a directory it owns (char major 195 as the NVIDIA driver's, minor = index,
/// nvidiactl 195:255), so a test can see which ones a container got.
struct GpuDevices {
  std::string dir;  // "" = none available (simulated GPUs on an agent that cannot mknod)
  // The driver's libraries and tools a GPU container gets, read-only at the same paths (real
  // GPUs only; see driver_files.h).
  std::vector<std::string> driver_files;
  /// "HOST:/dev/NAME" --device arguments for the GPUs with these indexes, plus the control nodes
  /// (nvidiactl, nvidia-uvm, nvidia-uvm-tools) that exist in dir.
  std::vector<std::string> device_args(const std::vector<int>& indexes) const;
};

/// For real GPUs: /dev, and the files of the driver of this version. For simulated GPUs: makes
/// <dir>/nvidiaN for each index and nvidiactl (needs root: mknod), replacing what is there.
Result<GpuDevices> prepare_gpu_devices(bool simulated, const std::string& dir,
                                       const std::vector<int>& indexes,
                                       const std::string& driver_version = "");

/// Writes <cdi_dir>/gpucloud-nvidia.json: a CDI spec (cdiVersion 0.5.0, kind nvidia.com/gpu)
/// with one device per GPU index (its device node), and as common edits the control nodes and
/// the driver's files (read-only bind mounts at the same paths).
Status write_cdi_spec(const GpuDevices& devices, const std::vector<int>& indexes,
                      const std::string& cdi_dir);

}  // namespace gpucloud::agent
