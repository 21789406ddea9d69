#include "sim/fgd_experiment.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/fgd_report.h"

namespace gpucloud::sim {
namespace {

FgdSetup small_setup() {
  auto cluster = load_alibaba_nodes(std::string(TEST_DATA_DIR) + "/alibaba_nodes_small.csv");
  EXPECT_TRUE(cluster.ok()) << cluster.error().message;
  auto pods = load_alibaba_pods(std::string(TEST_DATA_DIR) + "/alibaba_pods_small.csv", *cluster);
  EXPECT_TRUE(pods.ok()) << pods.error().message;
  return FgdSetup::make(*cluster, *pods);
}

TEST(FgdExperimentTest, SmallTraceRunsDeterministically) {
  FgdSetup setup = small_setup();
  ASSERT_EQ(setup.cluster.nodes.size(), 40u);
  ASSERT_EQ(setup.cluster.gpus, 208);
  ASSERT_EQ(setup.pods.size(), 200u);
  EXPECT_TRUE(setup.never_fit.empty());
  for (sched::Policy policy : sched::fgd_experiment_policies()) {
    SeedRun a = run_fgd_seed(setup, policy, 42, 1.3);
    SeedRun b = run_fgd_seed(setup, policy, 42, 1.3);
    EXPECT_GT(a.arrived, 200);  // inflated
    EXPECT_EQ(a.placed + static_cast<int>(a.dropped.size()), a.arrived);
    EXPECT_EQ(a.dropped, b.dropped);
    ASSERT_EQ(a.alloc_pct.size(), b.alloc_pct.size());
    for (size_t k = 0; k < a.alloc_pct.size(); ++k) {
      if (std::isnan(a.alloc_pct[k])) {
        EXPECT_TRUE(std::isnan(b.alloc_pct[k]));
        continue;
      }
      EXPECT_EQ(a.alloc_pct[k], b.alloc_pct[k]) << sched::policy_name(policy) << " load " << k;
      EXPECT_EQ(a.frag_ratio_pct[k], b.frag_ratio_pct[k]);
      EXPECT_LE(a.alloc_pct[k], static_cast<double>(k) + 0.5 + 1e-9);  // never above the load
    }
    ASSERT_GT(a.alloc_pct.size(), 130u);
    EXPECT_FALSE(std::isnan(a.alloc_pct[130])) << "the run reaches 130 % load";
    EXPECT_GT(a.alloc_pct[130], 80);    // a small cluster of mostly whole GPUs fills up
    EXPECT_GT(a.frag_ratio_pct[0], 0);  // the empty cluster already counts for CPU-only types
  }
}

TEST(FgdExperimentTest, SummaryTakesMediansOverSeeds) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(median({NAN, 5}), 5);
  EXPECT_TRUE(std::isnan(median({})));
  FgdSetup setup = small_setup();
  std::vector<SeedRun> runs;
  for (uint64_t seed : {1, 2, 3})
    runs.push_back(run_fgd_seed(setup, sched::Policy::kFgd, seed, 1.3));
  PolicySummary s = summarize(sched::Policy::kFgd, runs);
  std::vector<double> at100;
  for (const SeedRun& r : runs) at100.push_back(100 - r.alloc_pct[100]);
  EXPECT_DOUBLE_EQ(s.unallocated_pct.at(100), median(at100));
  EXPECT_EQ(s.frag_ratio_pct.size(), 4u);
  std::string table = format_fgd_table(setup, {{1, 2, 3}, 1.3, "n", "p"}, {s});
  EXPECT_NE(table.find("fgd"), std::string::npos);
  EXPECT_NE(table.find("paper"), std::string::npos);
}

}  // namespace
}  // namespace gpucloud::sim
