#include "sim/pod_variant.h"

#include <fmt/format.h>

#include <cmath>
#include <ostream>

#include "sched/policies/seeded_rng.h"
#include "sim/pod_variant_input.h"
#include "sim/trace.h"

namespace gpucloud::sim {

namespace {

double percent_of(double part, double total) {
  return total > 0 ? 100.0 * part / total : 0;
}

/// The output rows: copies of the input rows `source`, renamed openb-pod-0000, -0001, ... in
/// output order (drawn copies of one pod would otherwise share its name).
std::vector<std::vector<std::string>> renamed_rows(const VariantInput& in,
                                                   const std::vector<size_t>& source) {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    rows.push_back(in.row(source[i]));
    rows.back()[static_cast<size_t>(in.name_column)] = fmt::format("openb-pod-{:04d}", i);
  }
  return rows;
}

Result<PodVariant> gpushare_variant(const VariantInput& in, double target, sched::SeededRng& rng) {
  std::vector<size_t> cpu, share, other;
  for (size_t r = 0; r < in.size(); ++r)
    (in.is_cpu_only(r) ? cpu : in.is_share(r) ? share : other).push_back(r);
  size_t g = share.size() + other.size();
  if (g == 0) return invalid(fmt::format("{}: no GPU pods to resample", in.file()));
  if (target > 0 && share.empty())
    return invalid(
        fmt::format("{}: no GPU-sharing pods (num_gpu 1, gpu_milli < 1000) to draw "
                    "from; only --percent 0 is possible",
                    in.file()));
  if (target < 1 && other.empty())
    return invalid(
        fmt::format("{}: every GPU pod shares a GPU, so there are no whole-GPU pods to draw; only "
                    "--percent 100 is possible",
                    in.file()));
  // g draws from each group; the first k sharing and g - k whole-GPU draws are kept, with k
  // chosen so that the sharing pods' part of the GPU requests is closest to the target.
  std::vector<size_t> share_draws, other_draws;
  for (size_t i = 0; i < g && !share.empty(); ++i)
    share_draws.push_back(share[rng.below(share.size())]);
  for (size_t i = 0; i < g && !other.empty(); ++i)
    other_draws.push_back(other[rng.below(other.size())]);
  std::vector<int64_t> share_sum(g + 1, 0), other_sum(g + 1, 0);
  for (size_t i = 0; i < g; ++i) {
    share_sum[i + 1] = share_sum[i] + (share.empty() ? 0 : in.gpu_milli(share_draws[i]));
    other_sum[i + 1] = other_sum[i] + (other.empty() ? 0 : in.gpu_milli(other_draws[i]));
  }
  size_t lo = share.empty() ? 0 : other.empty() ? g : 0, hi = share.empty() ? 0 : g;
  size_t best = lo;
  double best_error = INFINITY;
  for (size_t k = lo; k <= hi; ++k) {
    double s = static_cast<double>(share_sum[k]), w = static_cast<double>(other_sum[g - k]);
    double error = std::fabs(s / (s + w) - target);
    if (error < best_error) best = k, best_error = error;
  }
  std::vector<size_t> out = cpu;
  out.insert(out.end(), share_draws.begin(), share_draws.begin() + static_cast<long>(best));
  out.insert(out.end(), other_draws.begin(), other_draws.begin() + static_cast<long>(g - best));
  double s = static_cast<double>(share_sum[best]);
  return PodVariant{in.header(), renamed_rows(in, out),
                    percent_of(s, s + static_cast<double>(other_sum[g - best])),
                    "of GPU requests (milli) from GPU-sharing pods"};
}

Result<PodVariant> multigpu_variant(const VariantInput& in, double target, sched::SeededRng& rng) {
  std::vector<size_t> multi;
  int64_t m = 0, total = 0;
  for (size_t r = 0; r < in.size(); ++r) {
    total += in.gpu_milli(r);
    if (in.is_multi(r)) multi.push_back(r), m += in.gpu_milli(r);
  }
  if (total == 0) return invalid(fmt::format("{}: no GPU pods", in.file()));
  if (target > 0 && multi.empty())
    return invalid(fmt::format(
        "{}: no multi-GPU pods (num_gpu > 1) to draw from; only --percent 0 is possible",
        in.file()));
  if (target >= 1 && m < total)
    return invalid(fmt::format(
        "--percent 100: multigpu adds or removes multi-GPU pods only, and the single-GPU pods "
        "of {} stay; use at most 99.9",
        in.file()));
  if (target < 1 && m == total)
    return invalid(fmt::format(
        "{}: every GPU pod asks for several GPUs, so multi-GPU pods stay at 100 %", in.file()));
  auto share = [&](int64_t part, int64_t all) {
    return static_cast<double>(part) / static_cast<double>(all);
  };
  std::vector<bool> removed(in.size(), false);
  std::vector<size_t> added;
  if (share(m, total) < target) {
    // Append copies drawn with replacement until the target is reached; keep the last one
    // only if that is closer.
    int64_t last = 0;
    while (share(m, total) < target) {
      if (in.size() + added.size() >= CsvLimits{}.max_records)
        return invalid(fmt::format("--percent {}: the variant would have more than {} pods",
                                   target * 100, CsvLimits{}.max_records));
      size_t pick = multi[rng.below(multi.size())];
      added.push_back(pick);
      last = in.gpu_milli(pick);
      m += last, total += last;
    }
    if (std::fabs(share(m - last, total - last) - target) < std::fabs(share(m, total) - target))
      added.pop_back(), m -= last, total -= last;
  } else {
    // Remove multi-GPU pods in a random order until the target is reached; put the last back
    // if that is closer.
    rng.shuffle(multi);
    size_t next = 0;
    int64_t last = 0;
    while (share(m, total) > target && next < multi.size()) {
      removed[multi[next]] = true;
      last = in.gpu_milli(multi[next++]);
      m -= last, total -= last;
    }
    if (next > 0 &&
        std::fabs(share(m + last, total + last) - target) < std::fabs(share(m, total) - target))
      removed[multi[--next]] = false, m += last, total += last;
  }
  std::vector<size_t> out;
  for (size_t r = 0; r < in.size(); ++r)
    if (!removed[r]) out.push_back(r);
  out.insert(out.end(), added.begin(), added.end());
  return PodVariant{in.header(), renamed_rows(in, out), percent_of(m, total),
                    "of GPU requests (milli) from multi-GPU pods"};
}

Result<PodVariant> cpu_variant(const VariantInput& in, double target, sched::SeededRng& rng) {
  std::vector<size_t> cpu, gpu;
  for (size_t r = 0; r < in.size(); ++r) (in.is_cpu_only(r) ? cpu : gpu).push_back(r);
  if (gpu.empty())
    return invalid(
        fmt::format("{}: no GPU pods, so CPU-only pods are 100 % of any variant", in.file()));
  if (target >= 1)
    return invalid(fmt::format(
        "--percent 100: the {} GPU pods stay, so CPU-only pods cannot be all pods; use at most "
        "99.9",
        gpu.size()));
  double wanted = std::round(target * static_cast<double>(gpu.size()) / (1 - target));
  if (wanted + static_cast<double>(gpu.size()) > static_cast<double>(CsvLimits{}.max_records))
    return invalid(fmt::format("--percent {}: the variant would have more than {} pods",
                               target * 100, CsvLimits{}.max_records));
  size_t count = static_cast<size_t>(wanted);
  if (count > 0 && cpu.empty())
    return invalid(fmt::format(
        "{}: no CPU-only pods (num_gpu 0) to draw from; only --percent 0 is possible", in.file()));
  std::vector<size_t> chosen = cpu;
  if (count <= cpu.size()) {
    rng.shuffle(chosen);  // a random subset, without replacement
    chosen.resize(count);
  } else {
    while (chosen.size() < count) chosen.push_back(cpu[rng.below(cpu.size())]);
  }
  std::vector<size_t> out = chosen;
  out.insert(out.end(), gpu.begin(), gpu.end());
  return PodVariant{in.header(), renamed_rows(in, out),
                    percent_of(static_cast<double>(count), static_cast<double>(out.size())),
                    "of pods are CPU-only"};
}

}  // namespace

std::optional<VariantKind> parse_variant_kind(std::string_view name) {
  for (VariantKind k :
       {VariantKind::kGpuSpec, VariantKind::kMultiGpu, VariantKind::kGpuShare, VariantKind::kCpu})
    if (variant_kind_name(k) == name) return k;
  return std::nullopt;
}

std::string_view variant_kind_name(VariantKind kind) {
  switch (kind) {
    case VariantKind::kGpuSpec:
      return "gpuspec";
    case VariantKind::kMultiGpu:
      return "multigpu";
    case VariantKind::kGpuShare:
      return "gpushare";
    case VariantKind::kCpu:
      return "cpu";
  }
  return "?";
}

Status validate_variant_options(const VariantOptions& o) {
  if (!(o.percent >= 0 && o.percent <= 100))
    return invalid(fmt::format("--percent: {} is outside 0..100", o.percent));
  return Status{};
}

Result<PodVariant> make_pod_variant(const CsvTable& pods, const VariantOptions& o,
                                    const TraceCluster* cluster) {
  if (Status s = validate_variant_options(o); !s.ok()) return s.error();
  auto input = VariantInput::read(pods);
  if (!input.ok()) return input.error();
  sched::SeededRng rng(o.seed);
  double target = o.percent / 100;
  switch (o.kind) {
    case VariantKind::kGpuSpec:
      return gpuspec_variant(*input, target, cluster, rng);
    case VariantKind::kMultiGpu:
      return multigpu_variant(*input, target, rng);
    case VariantKind::kGpuShare:
      return gpushare_variant(*input, target, rng);
    case VariantKind::kCpu:
      return cpu_variant(*input, target, rng);
  }
  return invalid("unknown variant kind");
}

void write_pod_variant(std::ostream& out, const PodVariant& v) {
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << cells[i];
    out << '\n';
  };
  line(v.header);
  for (const auto& row : v.rows) line(row);
}

}  // namespace gpucloud::sim
