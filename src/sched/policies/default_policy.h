// gpucloud's own placement policy for GPU-sharing nodes (`default`). It gets exactly what `fgd`
// gets — the node's state, the pod and the workload profile of typical pod types — and scores a
// placement, in GPU milli, as
//
//   ΔF − Δstranded
//
// ΔF = F(node) − F(node after the placement): FGD's fragmentation gradient, on its full
// precision instead of FGD's truncated 100·sigmoid(ΔF/1000) (whose integer steps of about
// 40 milli make most nodes tie).
// stranded(node) = max(0, free GPU milli − r · free CPU milli), with r the GPU milli per CPU
// milli that the profile's GPU pod types ask for on average: the free GPU milli that the
// node's free CPUs cannot feed at the workload's usual CPU-to-GPU ratio. F only notices CPU when
// a typical pod no longer fits at all; a pod that takes much CPU from a node with many free
// GPUs (a CPU-only pod, or a GPU pod with a high CPU-to-GPU ratio) slowly strands those GPUs,
// and Δstranded charges it for that before it happens.
// A share goes to the GPU that scores best, ties to the GPU with the least free milli.
//
// Scarce hosts. F weighs every node alike, so the last few nodes that can host a pod limited to
// one GPU model, or a rare large pod (8 GPUs with 120 cores fit only the few nodes with that much
// CPU), are filled by pods that could have gone anywhere, and those pods are then dropped. Where
// the placer knows every pod type of the workload (SharePlacer::guard_scarce_types), the score
// also subtracts, for each such guarded type t the placement leaves unable to fit the node,
//
//   freq(t) · GPU milli of t · (nodes in the cluster / nodes t still fits)
//
// a cost that grows as t's hosts run out.
#pragma once

#include "sched/policies/fragmentation.h"
#include "sched/policies/share_node.h"

namespace gpucloud::sched {

/// GPU milli per CPU milli that the profile's GPU pod types ask for, weighted by frequency
/// (Σ freq·gpu milli / Σ freq·cpu milli over the types that request GPUs); 0 if none do.
double gpu_milli_per_cpu_milli(const WorkloadProfile& profile);

/// The node's free GPU milli beyond what its free CPU can feed at `gpu_per_cpu` GPU milli per
/// CPU milli: max(0, free GPU milli − gpu_per_cpu · free CPU milli).
double stranded_gpu_milli(const NodeShape& node, double gpu_per_cpu);

/// The cost of taking away one of the `hosts_left` nodes that the guarded type still fits, in
/// a cluster of `nodes` nodes: freq · GPU milli of the type · nodes / max(1, hosts_left).
double scarce_host_cost(const TypicalPod& type, int hosts_left, double nodes);

/// The default policy's score of placing the pod on a node in state `node` (higher is better):
/// ΔF − Δstranded in milli, where `f_before` is F(node) under `profile` and `gpu_per_cpu` is
/// gpu_milli_per_cpu_milli(profile). A share is tried on every GPU that fits and the best is
/// returned. The pod must fit the node. With a cache, F of the node after the placement is
/// taken from it (it must be for `profile`).
double default_score(const NodeShape& node, const PodRequest& pod, const WorkloadProfile& profile,
                     double f_before, double gpu_per_cpu, FragmentationCache* cache = nullptr);

/// The score of a share placed on GPU position `gpu` of the shape, or -infinity if it does not
/// fit there.
double default_share_gpu_score(const NodeShape& node, int gpu, const PodRequest& pod,
                               const WorkloadProfile& profile, double f_before, double gpu_per_cpu,
                               FragmentationCache* cache = nullptr);

/// The GPU (index into the node's own GPU order) that a share takes under the default policy:
/// the best score, ties to the least free milli, then the lowest index; -1 if none fits.
int default_share_gpu(const ShareNode& node, const PodRequest& pod, const WorkloadProfile& profile,
                      double f_before, double gpu_per_cpu);

}  // namespace gpucloud::sched
