// `gpucloud sim variant`: a variant of an Alibaba pod list, as the FGD paper builds its traces.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "sim/pod_variant.h"

namespace gpucloud::cli {

int cmd_sim_variant(const SimVariantOptions& o) {
  auto kind = sim::parse_variant_kind(o.kind);
  if (!kind) {
    fail(fmt::format("--kind: unknown kind '{}'; use gpuspec, multigpu, gpushare or cpu", o.kind));
    return kExitUsage;
  }
  sim::VariantOptions options{*kind, o.percent, o.seed};
  if (Status s = sim::validate_variant_options(options); !s.ok()) {
    fail(s.error().message);
    return kExitUsage;
  }
  auto table = sim::CsvTable::read_file(o.pods);
  if (!table.ok()) return fail(table.error().message);
  std::unique_ptr<sim::TraceCluster> cluster;
  if (!o.nodes.empty()) {
    auto nodes = sim::load_alibaba_nodes(o.nodes);
    if (!nodes.ok()) return fail(nodes.error().message);
    cluster = std::make_unique<sim::TraceCluster>(std::move(*nodes));
  }
  auto variant = sim::make_pod_variant(*table, options, cluster.get());
  if (!variant.ok()) return fail(variant.error().message);
  if (o.out.empty()) {
    std::ios::sync_with_stdio(false);
    sim::write_pod_variant(std::cout, *variant);
    std::cout.flush();
    if (!std::cout.good()) return fail("cannot write the pod list to stdout");
  } else {
    std::ofstream out(o.out, std::ios::trunc);
    sim::write_pod_variant(out, *variant);
    out.close();
    if (!out.good()) return fail(fmt::format("--out: cannot write '{}'", o.out));
  }
  std::cerr << fmt::format("{} pods{}: {:.2f} % {} (asked for {} %)\n", variant->rows.size(),
                           o.out.empty() ? "" : " written to " + o.out, variant->achieved_percent,
                           variant->measure, o.percent);
  return 0;
}

}  // namespace gpucloud::cli
