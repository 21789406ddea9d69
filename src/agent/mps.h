// CUDA MPS for GPU shares (docs/containers.md, "Fractional GPUs"): the agent starts and owns one
// MPS control daemon per GPU, and each share's process gets that GPU's pipe directory and its
// limits (active thread percentage from gpu_milli, pinned device memory from gpu_memory).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/gpu.h"

namespace gpucloud::agent {

/// Where one GPU's MPS control daemon talks and logs.
struct MpsGpu {
  std::string pipe_dir;  // CUDA_MPS_PIPE_DIRECTORY
  std::string log_dir;   // CUDA_MPS_LOG_DIRECTORY
};

/// Starts `control -d` for each whole GPU (MIG devices are skipped: MIG already fences them)
/// with CUDA_VISIBLE_DEVICES set to the GPU's uuid and the pipe and log directories
/// <root>/<index>/{pipe,log}. A daemon already running from an earlier agent (its control pipe
/// exists) is kept. Fails, naming the GPU, the command and its exit, when one cannot be started;
/// the daemons already started then keep running and are found again at the next start.
/// Returns the GPUs' directories by index.
Result<std::map<int, MpsGpu>> start_mps_daemons(const std::string& control, const std::string& root,
                                                const std::vector<Gpu>& gpus);

/// The environment a share's process gets on an MPS GPU: the GPU's pipe and log directories,
/// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (milli / 10, rounded up, 1..100) and, when
/// gpu_memory_mib > 0, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT "0=<N>M" (the process sees its GPU as
/// device 0).
std::map<std::string, std::string> mps_client_env(const MpsGpu& gpu, int milli,
                                                  int64_t gpu_memory_mib);

}  // namespace gpucloud::agent
