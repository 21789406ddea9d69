// Variants of an Alibaba v2023 pod list, as the FGD paper (Weng et al., ATC'23, Sec. 6) builds
// its openb_pod_list_gpuspec*, multigpu*, gpushare* and cpu* traces from the default one: more
// or fewer pods with a GPU-model limit, multi-GPU pods, GPU-sharing pods or CPU-only pods.
// docs/sim.md ("sim variant") says exactly what each kind changes; the output is the same for
// the same input, options and seed on every platform.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sim/alibaba_trace.h"
#include "sim/csv_table.h"

namespace gpucloud::sim {

/// What a variant changes.
enum class VariantKind {
  kGpuSpec,   // N % of GPU requests come from pods limited to one GPU model
  kMultiGpu,  // multi-GPU pods make N % of GPU requests (pods added or removed)
  kGpuShare,  // GPU-sharing pods make N % of GPU requests (GPU pods resampled)
  kCpu,       // CPU-only pods are N % of all pods (CPU-only pods resampled)
};

/// "gpuspec", "multigpu", "gpushare" or "cpu", or nothing.
std::optional<VariantKind> parse_variant_kind(std::string_view name);
/// The kind's name, as parse_variant_kind reads it.
std::string_view variant_kind_name(VariantKind kind);

/// What to build.
struct VariantOptions {
  VariantKind kind = VariantKind::kGpuShare;
  double percent = 0;  // 0..100
  uint64_t seed = 42;
};

/// An error if percent is not a number within 0..100.
Status validate_variant_options(const VariantOptions& options);

/// A variant pod list: the input's columns (plus gpu_spec for kGpuSpec if it had none) and the
/// rows to write, with what the variant achieved.
struct PodVariant {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  double achieved_percent = 0;  // the measure of the kind, on the output (e.g. 40.02)
  std::string measure;          // what achieved_percent is, e.g. "of GPU requests (milli)"
};

/// Builds a variant of a pod list (any format load_alibaba_pod_trace reads). `cluster` is
/// needed by kGpuSpec when the pod list names no GPU model (models are then drawn in proportion
/// to the cluster's GPUs, among the models whose nodes could hold the pod); it is ignored by
/// the other kinds. Fails, saying why, when the input cannot give the percentage asked for
/// (e.g. no GPU-sharing pods to draw from).
Result<PodVariant> make_pod_variant(const CsvTable& pods, const VariantOptions& options,
                                    const TraceCluster* cluster);

/// Writes the variant as CSV (header line, then one line per pod).
void write_pod_variant(std::ostream& out, const PodVariant& variant);

}  // namespace gpucloud::sim
