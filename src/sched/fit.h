// Fit checks and GPU choice inside one node, shared by the scheduling policies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/types.h"

namespace gpucloud::sched {

/// Whether the node could ever run the request ignoring current use: schedulable, labels,
/// capacity class, GPU model and memory, total GPU count, CPUs and memory. On false, `why`
/// (if given) says which check failed.
bool node_could_fit(const JobRequest& req, const NodeState& node, std::string* why = nullptr);

/// What one replica asks of its GPU model's quota, in GPU milli: a share's milli, or 1000 per
/// whole GPU (0 without GPUs).
inline int64_t replica_gpu_milli(const JobRequest& r) {
  return r.gpus == 0 ? 0 : r.gpu_milli > 0 ? r.gpu_milli : int64_t{r.gpus} * 1000;
}

/// Whether a GPU satisfies the request's model and memory constraints.
bool gpu_matches(const JobRequest& req, const GpuState& gpu);

/// A choice of GPUs on one node and how good its interconnect is.
struct GpuChoice {
  std::vector<int> positions;  // positions in NodeState::gpus
  int milli = 1000;            // per GPU
  int topology_score = 0;      // higher is better: NVLink pairs inside the set, one NUMA node
};

/// Picks free GPUs for one replica on the node as it is now (whole GPUs: the best-connected
/// set, smallest indices on ties; a share: the fitting GPU with the least free milli), or
/// nothing if they do not fit. Does not check CPUs or memory.
std::optional<GpuChoice> choose_gpus(const JobRequest& req, const NodeState& node);
/// The same, given which of the first 64 GPU positions match the request (bit p:
/// gpu_matches(req, gpus[p]); positions beyond are asked one by one).
std::optional<GpuChoice> choose_gpus(const JobRequest& req, const NodeState& node,
                                     uint64_t matching);
/// Which of the node's first 64 GPUs match the request (bit p: gpu_matches(req, gpus[p])).
uint64_t gpu_match_mask(const JobRequest& req, const NodeState& node);

/// Whether choose_gpus() would find GPUs, without choosing them (no allocation).
bool gpus_fit(const JobRequest& req, const NodeState& node);
/// The same, given which GPU positions match the request (bit p: gpu_matches(req, gpus[p])).
bool gpus_fit(const JobRequest& req, const NodeState& node, uint64_t matching);

/// Whether the node's free CPUs and memory take one replica.
bool cpu_memory_fit(const JobRequest& req, const NodeState& node);

/// Marks a choice as used on the node (GPUs, CPUs, memory).
void apply_choice(const JobRequest& req, const GpuChoice& choice, NodeState& node);

/// Adds (sign +1) or takes away (sign -1) what a placed replica uses on the node: its GPU
/// milli and GPU memory (a whole GPU's memory, or the share's gpu_memory_mib), CPUs, memory.
void apply_replica_use(NodeState& node, const JobRequest& req, const ReplicaPlacement& rp,
                       int sign);

/// The number of whole free GPUs on the node that match the request, given which of its first
/// 64 GPUs match (bit p: GPU p); GPUs beyond them are asked one by one (as gpus_fit with a
/// mask).
int free_matching_gpus(const NodeState& node, uint64_t match_mask, const JobRequest& req);

/// "2×A100", "1×GPU", "0.5×T4": the GPU part of a request, for messages.
std::string describe_gpus(const JobRequest& req);

}  // namespace gpucloud::sched
