// Plain types that describe GPUs and nodes, as discovered by an agent and stored by the server.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpucloud {

/// A MIG (multi-instance GPU) device carved out of a physical GPU.
struct MigDevice {
  std::string uuid;     // "MIG-..." as NVML reports it
  std::string profile;  // e.g. "1g.10gb"
  int64_t memory_mib = 0;
  // Its GPU and compute instance ids (NVML), which name its capability device nodes; -1 unknown.
  int gpu_instance = -1;
  int compute_instance = -1;
};

/// One physical GPU of a node.
struct Gpu {
  int index = 0;                  // NVML index on its node
  std::string uuid;               // "GPU-..."; what CUDA_VISIBLE_DEVICES carries
  std::string name;               // full product name, e.g. "NVIDIA A100-SXM4-80GB"
  std::string model;              // canonical short model, e.g. "A100" (see gpu_model.h)
  int64_t memory_mib = 0;         // total memory
  std::string pci_bus_id;         // e.g. "00000000:07:00.0"
  int numa_node = 0;              // -1 when unknown
  std::vector<int> nvlink_peers;  // indices of GPUs on the same node linked to this one by NVLink
  std::vector<MigDevice> mig;     // empty unless MIG mode is on
  // For a MIG device offered as a schedulable device (docs/containers.md, "MIG"): the index of
  // the physical GPU it is carved out of; -1 for a physical GPU. Its model then reads
  // "A100-80GB/1g.10gb" and its uuid "MIG-...".
  int mig_parent = -1;
};

/// One verdict of `gpucloud doctor` as the agent reports it (docs/doctor.md).
struct NodeCheck {
  std::string name;    // e.g. "gpu driver"
  std::string status;  // ok | warn | fail
  std::string why;
  std::string fix;
};

/// What an agent reports about its machine when it registers.
struct NodeInfo {
  std::string name;  // unique in the cluster, e.g. the hostname or "dev-0"
  std::string hostname;
  std::vector<Gpu> gpus;
  int64_t cpu_milli = 0;   // schedulable CPU in thousandths of a core
  int64_t memory_mib = 0;  // schedulable memory
  std::map<std::string, std::string> labels;
  std::string gpu_backend;  // "nvml" or "simulated"
  std::string driver_version;
  std::string cuda_version;
  std::string address;  // where other nodes reach it (MASTER_ADDR of multi-node jobs)
  // What the whole node costs per hour in USD (the agent's --price-per-hour); -1 = unknown.
  // Jobs with max_price compare it, divided by the GPU count, with their limit.
  double price_per_hour = -1;
  // Where the agent serves GET /metrics: "HOST:PORT", or ":PORT" on the node's address; "" =
  // none (docs/metrics.md, "Agent metrics").
  std::string metrics_address;
  // The agent's `gpucloud doctor` at its start (docs/doctor.md); empty: not run (an older
  // agent). A node with a failed check is given no jobs.
  std::vector<NodeCheck> doctor;
  // How GPU shares (gpu_milli, gpu_memory) are enforced here: "mps" when the agent runs a CUDA
  // MPS control daemon per GPU, else "best-effort" (shares are not fenced from each other).
  std::string gpu_sharing = "best-effort";

  /// The first failed doctor check, or nullptr.
  const NodeCheck* failed_check() const {
    for (const auto& c : doctor)
      if (c.status == "fail") return &c;
    return nullptr;
  }
  /// The doctor's overall verdict: "fail" if a check failed, else "warn" if one warned, else
  /// "ok"; "" when it was not run.
  std::string doctor_status() const {
    std::string worst = doctor.empty() ? "" : "ok";
    for (const auto& c : doctor)
      if (c.status == "fail" || (c.status == "warn" && worst == "ok")) worst = c.status;
    return worst;
  }
};

}  // namespace gpucloud
