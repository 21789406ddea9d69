// The pod list a variant is built from (internal to pod_variant*.cpp): each row checked as
// load_alibaba_pod_trace checks it, and classified by what it asks for.
#pragma once

#include <string>
#include <vector>

#include "sched/policies/seeded_rng.h"
#include "sim/pod_variant.h"
#include "sim/trace.h"

namespace gpucloud::sim {

/// A checked pod list and its rows as text.
class VariantInput {
 public:
  /// Checks every row (an error names file:line:column) and keeps the table's text.
  static Result<VariantInput> read(const CsvTable& table);

  size_t size() const { return jobs_.size(); }
  const TraceJob& pod(size_t r) const { return jobs_[r]; }
  /// num_gpu 0.
  bool is_cpu_only(size_t r) const { return jobs_[r].gpus == 0; }
  /// num_gpu 1 with gpu_milli < 1000.
  bool is_share(size_t r) const { return jobs_[r].gpu_milli > 0; }
  /// num_gpu > 1.
  bool is_multi(size_t r) const { return jobs_[r].gpus > 1; }
  /// The GPU milli the pod requests: num_gpu × gpu_milli.
  int64_t gpu_milli(size_t r) const {
    return jobs_[r].gpus == 0 ? 0 : jobs_[r].gpu_milli_per_replica();
  }
  /// The cells of row r, as written.
  std::vector<std::string> row(size_t r) const;
  const std::vector<std::string>& header() const { return table_->headers(); }
  const std::string& file() const { return table_->file(); }

  int name_column = 0;
  int spec_column = -1;  // -1: the file has no gpu_spec column

 private:
  const CsvTable* table_ = nullptr;
  std::vector<TraceJob> jobs_;
};

/// The gpuspec variant (pod_variant_spec.cpp).
Result<PodVariant> gpuspec_variant(const VariantInput& in, double target,
                                   const TraceCluster* cluster, sched::SeededRng& rng);

}  // namespace gpucloud::sim
