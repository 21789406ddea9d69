// sim variant: each kind reaches the percentage asked for (within one pod), keeps what it
// should, reads back with the Alibaba loaders, and gives the same file for the same seed.
#include "sim/pod_variant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/trace.h"

namespace gpucloud::sim {
namespace {

const std::string kData = TEST_DATA_DIR;

const CsvTable& default_pods() {
  static const CsvTable table = *CsvTable::read_file(kData + "/openb_pod_list_default.csv");
  return table;
}

const TraceCluster& gpu_nodes() {
  static const TraceCluster cluster = *load_alibaba_nodes(kData + "/openb_node_list_gpu_node.csv");
  return cluster;
}

std::string build(VariantKind kind, double percent, uint64_t seed,
                  const CsvTable& pods = default_pods()) {
  auto v = make_pod_variant(pods, {kind, percent, seed}, &gpu_nodes());
  EXPECT_TRUE(v.ok()) << v.error().message;
  if (!v.ok()) return "";
  std::ostringstream out;
  write_pod_variant(out, *v);
  return out.str();
}

/// What a variant file holds, measured from its pods as the loader reads them.
struct Measured {
  size_t pods = 0, cpu_only = 0;
  int64_t gpu_milli = 0, share = 0, multi = 0, limited = 0, largest = 0;
  double pct(int64_t part) const { return 100.0 * static_cast<double>(part) / gpu_milli; }
};

Measured measure(const std::string& text) {
  auto table = CsvTable::parse(text, "variant.csv");
  EXPECT_TRUE(table.ok()) << table.error().message;
  auto pods = load_alibaba_pods(*table, gpu_nodes());  // gpu_spec must name cluster models
  EXPECT_TRUE(pods.ok()) << pods.error().message;
  auto trace = load_alibaba_pod_trace(*table);  // names must be unique
  EXPECT_TRUE(trace.ok()) << trace.error().message;
  Measured m;
  for (const TracePod& p : *pods) {
    int64_t milli = p.request.total_gpu_milli();
    ++m.pods;
    m.cpu_only += p.request.num_gpu == 0;
    m.gpu_milli += milli;
    m.share += p.request.num_gpu == 1 && p.request.gpu_milli < 1000 ? milli : 0;
    m.multi += p.request.num_gpu > 1 ? milli : 0;
    m.limited += p.gpu_spec.empty() ? 0 : milli;
    m.largest = std::max(m.largest, milli);
  }
  return m;
}

/// The rows of a pod list's text that ask for GPUs (or none), without their names, counted.
std::map<std::string, int> rows_without_names(const std::string& text, bool with_gpus) {
  std::map<std::string, int> rows;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    if ((cells.at(3) != "0") == with_gpus) ++rows[line.substr(line.find(','))];
  }
  return rows;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(PodVariantTest, GpuShareReachesThePercentageOfGpuRequests) {
  for (double pct : {0.0, 20.0, 40.0, 60.0, 100.0}) {
    Measured m = measure(build(VariantKind::kGpuShare, pct, 42));
    EXPECT_NEAR(m.pct(m.share), pct, m.pct(m.largest)) << pct;
    EXPECT_EQ(m.pods, 8152u);      // the GPU pods are resampled, their number kept
    EXPECT_EQ(m.cpu_only, 1088u);  // the CPU-only pods stay
  }
  // The CPU-only pods are the original ones, unchanged but for their names.
  std::string original = file_text(kData + "/openb_pod_list_default.csv");
  EXPECT_EQ(rows_without_names(build(VariantKind::kGpuShare, 40, 42), false),
            rows_without_names(original, false));
}

TEST(PodVariantTest, MultiGpuAddsOrRemovesMultiGpuPods) {
  Measured base = measure(build(VariantKind::kGpuSpec, 0, 1));
  ASSERT_NEAR(base.pct(base.multi), 7.29, 0.01);
  for (double pct : {5.0, 20.0, 50.0}) {
    Measured m = measure(build(VariantKind::kMultiGpu, pct, 42));
    EXPECT_NEAR(m.pct(m.multi), pct, m.pct(m.largest)) << pct;
    // Only multi-GPU pods were added (or removed): the others are all still there.
    EXPECT_EQ(m.gpu_milli - m.multi, base.gpu_milli - base.multi) << pct;
    EXPECT_EQ(m.cpu_only, base.cpu_only) << pct;
  }
  // Adding: every original pod is still there, unchanged but for its name.
  std::string original = file_text(kData + "/openb_pod_list_default.csv");
  auto added = rows_without_names(build(VariantKind::kMultiGpu, 20, 42), true);
  for (const auto& [row, count] : rows_without_names(original, true))
    EXPECT_GE(added[row], count) << row;
  // 20 %: appended copies, as in the release's openb_pod_list_multigpu20.csv (8,324 pods).
  EXPECT_GT(measure(build(VariantKind::kMultiGpu, 20, 42)).pods, 8152u);
  EXPECT_LT(measure(build(VariantKind::kMultiGpu, 5, 42)).pods, 8152u);
}

TEST(PodVariantTest, CpuMakesThePercentageOfPodsCpuOnly) {
  for (double pct : {0.0, 5.0, 13.35, 25.0, 30.0}) {
    Measured m = measure(build(VariantKind::kCpu, pct, 42));
    size_t gpu_pods = m.pods - m.cpu_only;
    EXPECT_EQ(gpu_pods, 7064u) << pct;  // every GPU pod stays
    EXPECT_NEAR(100.0 * static_cast<double>(m.cpu_only) / static_cast<double>(m.pods), pct,
                100.0 / static_cast<double>(m.pods))
        << pct;
  }
  // 5 % of 7,064 GPU pods plus the CPU pods: 372 CPU-only pods, 7,436 in all, as in the
  // release's openb_pod_list_cpu050.csv.
  EXPECT_EQ(measure(build(VariantKind::kCpu, 5, 42)).pods, 7436u);
}

TEST(PodVariantTest, GpuSpecLimitsThePercentageOfGpuRequestsToClusterModels) {
  for (double pct : {10.0, 33.0, 100.0}) {
    std::string text = build(VariantKind::kGpuSpec, pct, 42);
    Measured m = measure(text);  // every limit names a model of the cluster
    EXPECT_LE(m.pct(m.limited), pct + 1e-9) << pct;
    EXPECT_NEAR(m.pct(m.limited), pct, 0.05) << pct;
    EXPECT_EQ(m.pods, 8152u);
  }
  // Everything but gpu_spec is the input's, names included, in the same order.
  std::string text = build(VariantKind::kGpuSpec, 33, 42);
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  for (size_t r = 0; r < default_pods().size() && std::getline(in, line); ++r) {
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    cells.resize(default_pods().headers().size());
    for (int c = 0; c < static_cast<int>(cells.size()); ++c)
      if (default_pods().header(c) != "gpu_spec") {
        ASSERT_EQ(cells[static_cast<size_t>(c)], default_pods().text(r, c)) << line;
      }
  }
}

TEST(PodVariantTest, SameSeedSameFileOtherSeedOtherFile) {
  for (VariantKind kind :
       {VariantKind::kGpuSpec, VariantKind::kMultiGpu, VariantKind::kGpuShare, VariantKind::kCpu}) {
    std::string a = build(kind, 20, 7);
    EXPECT_EQ(a, build(kind, 20, 7)) << variant_kind_name(kind);
    EXPECT_NE(a, build(kind, 20, 8)) << variant_kind_name(kind);
  }
}

TEST(PodVariantTest, FiveColumnInputGetsAGpuSpecColumn) {
  auto table = CsvTable::read_file(kData + "/alibaba_pods_short.csv");
  ASSERT_TRUE(table.ok());
  std::string text = build(VariantKind::kGpuSpec, 50, 1, *table);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec");
  Measured m = measure(text);
  EXPECT_EQ(m.pods, 40u);
  EXPECT_LE(m.pct(m.limited), 50.0);
  EXPECT_GE(m.pct(m.limited), 50.0 - m.pct(m.largest));
}

TEST(PodVariantTest, BadOptionsAndImpossibleTargetsSayWhy) {
  EXPECT_FALSE(parse_variant_kind("gpu-share"));
  EXPECT_EQ(parse_variant_kind("gpushare"), VariantKind::kGpuShare);
  for (double bad : {-1.0, 100.5, std::nan("")}) {
    auto s = validate_variant_options({VariantKind::kCpu, bad, 1});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message.find("outside 0..100"), std::string::npos) << s.error().message;
  }
  // alibaba_pods_small.csv has no multi-GPU pods.
  auto small = CsvTable::read_file(kData + "/alibaba_pods_small.csv");
  ASSERT_TRUE(small.ok());
  auto v = make_pod_variant(*small, {VariantKind::kMultiGpu, 20, 1}, nullptr);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("no multi-GPU pods"), std::string::npos) << v.error().message;
  // gpuspec needs models: from --nodes, or from gpu_spec values in the pod list.
  v = make_pod_variant(*small, {VariantKind::kGpuSpec, 20, 1}, nullptr);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("--nodes"), std::string::npos) << v.error().message;
  auto spec = CsvTable::read_file(kData + "/alibaba_pods_spec.csv");
  ASSERT_TRUE(spec.ok());
  v = make_pod_variant(*spec, {VariantKind::kGpuSpec, 20, 1}, nullptr);
  ASSERT_TRUE(v.ok()) << v.error().message;
  v = make_pod_variant(default_pods(), {VariantKind::kMultiGpu, 100, 1}, nullptr);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("at most 99.9"), std::string::npos) << v.error().message;
  v = make_pod_variant(default_pods(), {VariantKind::kCpu, 100, 1}, nullptr);
  ASSERT_FALSE(v.ok());
  // A bad row is refused with its place, as the loaders do.
  auto bad = CsvTable::parse("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n", "b.csv");
  ASSERT_TRUE(bad.ok());
  v = make_pod_variant(*bad, {VariantKind::kGpuShare, 20, 1}, nullptr);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("b.csv:2:"), std::string::npos) << v.error().message;
}

}  // namespace
}  // namespace gpucloud::sim
