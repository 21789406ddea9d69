// The NVIDIA driver's user-space files a container needs to use its GPUs (docs/containers.md,
// "GPUs"): images built for NVIDIA's container toolkit do not carry them, since they must match
// the node's kernel driver.
#pragma once

#include <string>
#include <vector>

namespace gpucloud::agent {

/// Where the driver's files are looked for.
struct DriverSearch {
  std::vector<std::string> lib_dirs = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                       "/usr/lib64", "/usr/lib"};
  std::vector<std::string> bin_dirs = {"/usr/bin", "/usr/local/bin"};
};

/// The files of the running driver that the NVIDIA container toolkit mounts into a GPU
/// container, each as an absolute host path: the compute and utility libraries (libcuda,
/// libnvidia-ml, libnvidia-ptxjitcompiler, libnvidia-nvvm, ...) of exactly this driver version
/// (NAME.so.VERSION) with their soname links (NAME.so.1), and the tools (nvidia-smi,
/// nvidia-debugdump, nvidia-persistenced, nvidia-cuda-mps-control, nvidia-cuda-mps-server).
/// Only files that exist; each library from the first directory that has it. Empty without a
/// driver version.
std::vector<std::string> find_driver_files(const std::string& driver_version,
                                           const DriverSearch& search = {});

}  // namespace gpucloud::agent
