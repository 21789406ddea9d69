// Nodes and pods of the GPU-sharing placement model (the FGD experiment): a node offers CPU,
// memory and up to kMaxNodeGpus GPUs of 1000 milli each; a pod asks for CPU, memory and either
// nothing, a share of one GPU (gpu_milli < 1000) or n whole GPUs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace gpucloud::sched {

constexpr int kMilliPerGpu = 1000;
constexpr int kMaxNodeGpus = 16;

/// What a pod asks for. model_mask: bit i set = GPU model i is acceptable; 0 = any model.
struct PodRequest {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int gpu_milli = 0;  // per GPU: 1..999 for a share (num_gpu == 1), 1000 for whole GPUs
  uint64_t model_mask = 0;

  /// Total GPU milli the pod requests (gpu_milli × num_gpu).
  int64_t total_gpu_milli() const { return int64_t{gpu_milli} * num_gpu; }
};

/// The kind of a pod, as Clustering sees it.
enum class PodKind { kCpuOnly, kShare, kWholeGpus };

/// The kind of a request: no GPU, a share of one GPU, or whole GPUs.
PodKind pod_kind(const PodRequest& pod);

/// A node and what is in use on it.
struct ShareNode {
  std::string name;
  int model = -1;  // index into the model table; -1: no GPUs
  int num_gpus = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t cpu_used = 0;
  int64_t memory_used = 0;
  std::array<int16_t, kMaxNodeGpus> gpu_free{};  // free milli per GPU index
  int share_pods = 0;                            // GPU-sharing pods running here
  int whole_pods = 0;                            // whole-GPU pods running here

  /// A node with all of its resources free.
  static ShareNode make(std::string name, int model, int num_gpus, int64_t cpu_milli,
                        int64_t memory_mib);
  /// Free GPU milli summed over the GPUs.
  int64_t free_gpu_milli() const;
};

/// A node's state as the policies score it: model, free CPU, the kinds of GPU pods it runs and
/// the free milli of its GPUs in ascending order. Nodes in identical states score identically.
struct NodeShape {
  int16_t model = -1;
  int16_t num_gpus = 0;
  uint8_t kinds = 0;  // bit 0: runs GPU-sharing pods; bit 1: runs whole-GPU pods
  int64_t cpu_free = 0;
  std::array<int16_t, kMaxNodeGpus> gpu_free{};  // ascending; entries past num_gpus are 0

  static constexpr uint8_t kRunsShare = 1;
  static constexpr uint8_t kRunsWhole = 2;

  /// The shape of a node as it is now; sort = false keeps the node's GPU order (for choosing
  /// a GPU; shapes compare equal only when sorted).
  static NodeShape of(const ShareNode& node, bool sort = true);
  /// Free GPU milli summed over the GPUs.
  int64_t free_gpu_milli() const;
  bool operator==(const NodeShape&) const = default;
};

/// A hash of a NodeShape, for unordered containers.
struct NodeShapeHash {
  size_t operator()(const NodeShape& s) const;
};

/// Whether the node's GPUs (model and free milli) could take the pod now; ignores CPU, memory.
bool gpus_fit(const ShareNode& node, const PodRequest& pod);

/// Whether the pod fits the node now: CPU, memory, GPU model and free GPUs.
bool fits(const ShareNode& node, const PodRequest& pod);

/// The GPUs the pod would take under the default rule: a share takes the fitting GPU with the
/// least free milli (lowest index on ties), whole GPUs the lowest-index fully free ones.
/// Empty for a CPU-only pod or when they do not fit.
std::vector<int> default_gpu_choice(const ShareNode& node, const PodRequest& pod);

/// Marks the pod as running on the node with the given GPUs (from a *_gpu_choice function).
void place_pod(ShareNode& node, const PodRequest& pod, const std::vector<int>& gpus);

}  // namespace gpucloud::sched
