// The pod list a variant reads, and the gpuspec variant: pods limited to one GPU model.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "sim/pod_variant_input.h"

namespace gpucloud::sim {

Result<VariantInput> VariantInput::read(const CsvTable& table) {
  auto trace = load_alibaba_pod_trace(table);
  if (!trace.ok()) return trace.error();
  VariantInput in;
  in.table_ = &table;
  in.jobs_ = std::move(trace->jobs);
  in.name_column = *table.column("name");  // load_alibaba_pod_trace required it
  auto spec = table.column("gpu_spec");
  in.spec_column = spec.ok() ? *spec : -1;
  return in;
}

std::vector<std::string> VariantInput::row(size_t r) const {
  std::vector<std::string> cells;
  cells.reserve(header().size());
  for (size_t c = 0; c < header().size(); ++c)
    cells.emplace_back(table_->text(r, static_cast<int>(c)));
  return cells;
}

namespace {

/// Candidate limits for one pod and their weights; a pod with no candidate stays unlimited.
struct SpecChoices {
  std::vector<std::string> specs;
  std::vector<std::vector<int64_t>> weights;  // per pod, per spec
};

/// Models of the cluster, each weighted by the GPUs of its nodes that could hold the pod on
/// an empty cluster (enough GPUs, CPU and memory).
SpecChoices cluster_choices(const VariantInput& in, const TraceCluster& cluster) {
  SpecChoices c{cluster.models, {}};
  for (size_t r = 0; r < in.size(); ++r) {
    std::vector<int64_t> w(cluster.models.size(), 0);
    const TraceJob& p = in.pod(r);
    for (const sched::ShareNode& n : cluster.nodes)
      if (n.model >= 0 && n.num_gpus >= p.gpus && n.cpu_milli >= p.cpu_milli &&
          n.memory_mib >= p.memory_mib)
        w[static_cast<size_t>(n.model)] += n.num_gpus;
    c.weights.push_back(std::move(w));
  }
  return c;
}

/// The gpu_spec values the pod list already has, each weighted by the GPU milli of its pods.
SpecChoices trace_choices(const VariantInput& in) {
  SpecChoices c;
  std::vector<int64_t> w;
  for (size_t r = 0; r < in.size(); ++r) {
    const std::string& spec = in.pod(r).gpu_model;
    if (spec.empty() || in.is_cpu_only(r)) continue;
    size_t i = 0;
    while (i < c.specs.size() && c.specs[i] != spec) ++i;
    if (i == c.specs.size()) c.specs.push_back(spec), w.push_back(0);
    w[i] += in.gpu_milli(r);
  }
  c.weights.assign(in.size(), w);
  return c;
}

}  // namespace

Result<PodVariant> gpuspec_variant(const VariantInput& in, double target,
                                   const TraceCluster* cluster, sched::SeededRng& rng) {
  SpecChoices choices = cluster ? cluster_choices(in, *cluster) : trace_choices(in);
  if (choices.specs.empty())
    return invalid(fmt::format(
        "{}: no pod has a gpu_spec to draw GPU models from; give the cluster with --nodes "
        "NODES.csv (models are then drawn in proportion to its GPUs)",
        in.file()));
  int64_t total = 0, eligible = 0;
  std::vector<size_t> order;
  std::vector<int64_t> weight_sum(in.size(), 0);
  for (size_t r = 0; r < in.size(); ++r) {
    total += in.gpu_milli(r);
    for (int64_t w : choices.weights[r]) weight_sum[r] += w;
    if (!in.is_cpu_only(r) && weight_sum[r] > 0) order.push_back(r), eligible += in.gpu_milli(r);
  }
  if (total == 0) return invalid(fmt::format("{}: no GPU pods", in.file()));
  auto wanted = static_cast<int64_t>(std::llround(target * static_cast<double>(total)));
  if (eligible < wanted)
    return invalid(fmt::format(
        "--percent {}: only {:.2f} % of the GPU requests come from pods that a node of the "
        "given models could hold",
        target * 100, 100.0 * static_cast<double>(eligible) / static_cast<double>(total)));
  // Pods in a random order; each is limited if it does not take the sum past the target.
  rng.shuffle(order);
  std::vector<std::string> spec(in.size());
  int64_t limited = 0;
  for (size_t r : order) {
    if (limited + in.gpu_milli(r) > wanted) continue;
    limited += in.gpu_milli(r);
    auto pick = static_cast<int64_t>(rng.below(static_cast<uint64_t>(weight_sum[r])));
    size_t m = 0;
    while (pick >= choices.weights[r][m]) pick -= choices.weights[r][m++];
    spec[r] = choices.specs[m];
  }
  PodVariant v{in.header(),
               {},
               100.0 * static_cast<double>(limited) / static_cast<double>(total),
               "of GPU requests (milli) from pods limited to a GPU model"};
  size_t spec_column = in.spec_column >= 0 ? static_cast<size_t>(in.spec_column) : v.header.size();
  if (in.spec_column < 0) v.header.push_back("gpu_spec");
  for (size_t r = 0; r < in.size(); ++r) {
    v.rows.push_back(in.row(r));
    if (in.spec_column < 0) v.rows.back().emplace_back();
    v.rows.back()[spec_column] = spec[r];  // every other pod loses any limit it had
  }
  return v;
}

}  // namespace gpucloud::sim
