// FGD's fragmentation measure: how much of a node's free GPU milli the typical pods of the
// workload cannot use (Weng et al., ATC'23; shared/fgd-experiment.md, "Metrics").
#pragma once

#include <vector>

#include "sched/policies/share_node.h"

namespace gpucloud::sched {

/// One typical pod type of the workload and its (renormalised) frequency.
struct TypicalPod {
  int64_t cpu_milli = 0;
  int num_gpu = 0;
  int gpu_milli = 0;
  uint64_t model_mask = 0;  // 0: any model
  double freq = 0;
  int count = 0;  // pods of this type in the trace the profile was learned from
};

/// The workload profile FGD needs: the typical pod types and their frequencies.
struct WorkloadProfile {
  std::vector<TypicalPod> types;

  /// The (cpu, gpu_milli, num_gpu, model) combinations of `pods` taken by descending frequency
  /// (ties: ascending cpu, num_gpu, gpu_milli, mask) until they cover `coverage` of the pods,
  /// with frequencies renormalised to sum to 1.
  static WorkloadProfile from_pods(const std::vector<PodRequest>& pods, double coverage = 0.95);
};

/// frag_p(node) in milli: all the node's free GPU milli if the type asks for no GPU or cannot
/// fit (CPU, GPU model, too few GPUs with enough free milli), else the free milli of the GPUs
/// that have less free than the type needs per GPU.
int64_t type_fragmentation(const NodeShape& node, const TypicalPod& type);

/// Whether a pod of the type fits a node in this state (CPU, GPU model, enough GPUs with enough
/// free milli); a CPU-only type needs only the CPU.
bool type_fits(const NodeShape& node, const TypicalPod& type);

/// F(node) = Σ freq(p) × frag_p(node) over the profile's types, in milli.
double node_fragmentation(const NodeShape& node, const WorkloadProfile& profile);

/// node_fragmentation's answers kept per node shape, for one profile: the shapes a cluster's
/// nodes are in, and those a placement would leave, recur (in a deep queue nearly every one is
/// asked about again). Direct-mapped: a shape has one slot (by its hash) and takes it over from
/// another, so the memory is fixed (kSlots entries, allocated at the first question) and nothing
/// is allocated per shape. The owner empties it when the profile changes.
class FragmentationCache {
 public:
  static constexpr size_t kSlots = 1 << 14;
  /// node_fragmentation(node, profile).
  double of(const NodeShape& node, const WorkloadProfile& profile);
  void clear() { slots_.clear(); }

 private:
  struct Slot {
    bool used = false;
    NodeShape shape;
    double fragmentation = 0;
  };
  std::vector<Slot> slots_;
};

}  // namespace gpucloud::sched
