// The devices a node offers to the scheduler: its GPUs, with every GPU in MIG mode replaced by
// its MIG devices (docs/containers.md, "MIG").
#pragma once

#include <vector>

#include "model/gpu.h"

namespace gpucloud::agent {

/// Index of the first MIG device: MIG device k of GPU p is kMigIndexBase + 8 * p + k (NVML
/// indexes of physical GPUs stay below 64, and a GPU has at most 7 MIG devices).
inline constexpr int kMigIndexBase = 64;

/// The schedulable devices of a node: each GPU without MIG devices as it is; a GPU with MIG on
/// becomes its MIG devices, each with model "MODEL/PROFILE" (e.g. "A100/1g.10gb"), its own uuid
/// and memory, the GPU's NUMA node, no NVLink peers and mig_parent = the GPU's index. A GPU in
/// MIG mode cannot run whole-GPU work, so it is not offered itself.
std::vector<Gpu> offered_devices(const std::vector<Gpu>& gpus);

/// The index of the physical GPU behind an offered device (its own index, or its MIG parent's).
inline int physical_index(const Gpu& device) {
  return device.mig_parent >= 0 ? device.mig_parent : device.index;
}

}  // namespace gpucloud::agent
