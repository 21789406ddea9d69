// Runs the real `gpucloud sim gen` binary and reads its output back as a trace.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cli_run.h"
#include "sim/trace.h"

namespace {

using Output = gpucloud::testing::CliOutput;

Output run(const std::string& args, const std::string& redirect = "2>&1") {
  return gpucloud::testing::run_gpucloud("sim gen " + args, redirect);
}

const std::string kPods = std::string(TEST_DATA_DIR) + "/alibaba_pods_small.csv";

TEST(CliSimGenTest, WritesACanonicalTraceThatReadsBack) {
  auto file = std::filesystem::temp_directory_path() / "gpucloud_sim_gen_test.csv";
  Output out = run("--trace-like " + kPods + " --jobs 300 --rate 2 --seed 5 --tenants 4",
                   "> " + file.string() + " 2>&1");
  ASSERT_EQ(out.status, 0) << out.text;
  auto trace = gpucloud::sim::load_trace(file.string());
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 300u);
  std::set<std::string> tenants;
  for (const auto& j : trace->jobs) tenants.insert(j.tenant);
  EXPECT_EQ(tenants.size(), 4u);
  EXPECT_NEAR(300.0 / (static_cast<double>(trace->jobs.back().submit_ms) / 1000), 2, 0.4);
  Output same = run("--trace-like " + kPods + " --jobs 300 --rate 2 --seed 5 --tenants 4");
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(same.text, text);
  std::filesystem::remove(file);
}

TEST(CliSimGenTest, RuntimeEstimatesAreWrittenOnlyWhenAskedAndExactAtSigmaZero) {
  auto file = std::filesystem::temp_directory_path() / "gpucloud_sim_gen_estimates.csv";
  auto jobs = [&](const std::string& flags) {
    Output out = run("--trace-like " + kPods + " --jobs 200 --seed 3 " + flags,
                     "> " + file.string() + " 2>&1");
    EXPECT_EQ(out.status, 0) << out.text;
    auto trace = gpucloud::sim::load_trace(file.string());
    EXPECT_TRUE(trace.ok()) << trace.error().message;
    return trace->jobs;
  };
  for (const auto& j : jobs("")) EXPECT_EQ(j.expected_runtime_ms, 0) << j.id;
  for (const auto& j : jobs("--runtime-estimates 0"))
    EXPECT_NEAR(j.expected_runtime_ms, j.duration_ms, 1) << j.id;
  int off = 0;
  for (const auto& j : jobs("--runtime-estimates 1")) {
    EXPECT_GT(j.expected_runtime_ms, 0);
    off += j.expected_runtime_ms > 2 * j.duration_ms || 2 * j.expected_runtime_ms < j.duration_ms;
  }
  EXPECT_GT(off, 20) << "sigma 1 puts about half of the estimates off by more than 2x";
  std::filesystem::remove(file);
  Output bad = run("--trace-like " + kPods + " --runtime-estimates 9");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.text.find("--runtime-estimates: sigma 9 must be 0..5"), std::string::npos)
      << bad.text;
}

TEST(CliSimGenTest, BadFlagsAndFilesFailClearly) {
  Output rate = run("--trace-like " + kPods + " --rate -1");
  EXPECT_EQ(rate.status, 2);
  EXPECT_NE(rate.text.find("--rate: -1 jobs/s must be above 0"), std::string::npos) << rate.text;
  Output missing = run("--trace-like /nonexistent/pods.csv");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.text.find("/nonexistent/pods.csv: cannot open the file"), std::string::npos)
      << missing.text;
}

const std::string kNodes = std::string(TEST_DATA_DIR) + "/alibaba_nodes_small.csv";

TEST(CliSimGenTest, BurstsAndLoad) {
  auto file = std::filesystem::temp_directory_path() / "gpucloud_sim_gen_bursts.csv";
  Output out = run("--trace-like " + kPods + " --jobs 250 --burst-size 100 --burst-interval 1m",
                   "> " + file.string() + " 2>&1");
  ASSERT_EQ(out.status, 0) << out.text;
  auto trace = gpucloud::sim::load_trace(file.string());
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  std::map<int64_t, int> per_instant;
  for (const auto& j : trace->jobs) ++per_instant[j.submit_ms];
  EXPECT_EQ(per_instant, (std::map<int64_t, int>{{0, 100}, {60'000, 100}, {120'000, 50}}));
  // --load says the rate it chose on stderr and writes the trace on stdout.
  Output load = run("--trace-like " + kPods + " --jobs 10 --load 0.9 --cluster " + kNodes,
                    "2>&1 >" + file.string());
  ASSERT_EQ(load.status, 0) << load.text;
  EXPECT_NE(load.text.find("sim gen: --load 0.9 on " + kNodes + ": "), std::string::npos)
      << load.text;
  EXPECT_NE(load.text.find(" jobs/s ("), std::string::npos) << load.text;
  trace = gpucloud::sim::load_trace(file.string());
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->jobs.size(), 10u);
  std::filesystem::remove(file);
}

TEST(CliSimGenTest, ConflictingOrBadPaceFlagsAreUsageErrors) {
  std::string base = "--trace-like " + kPods + " --jobs 10 ";
  std::vector<std::pair<std::string, std::string>> cases = {
      {"--rate 2 --load 0.5 --cluster " + kNodes, "--rate and --load both set the arrival rate"},
      {"--load 0.5", "--load needs --cluster"},
      {"--cluster " + kNodes, "--cluster is only used with --load"},
      {"--load -1 --cluster " + kNodes, "--load: -1 must be above 0"},
      {"--load 0 --cluster " + kNodes, "--load: 0 must be above 0"},
      {"--load 1e9 --cluster " + kNodes, "--load: 1000000000 must be above 0 and at most 100"},
      {"--burst-size 0 --burst-interval 60", "--burst-size: 0 must be 1..100000000"},
      {"--burst-size 10", "--burst-size needs --burst-interval"},
      {"--burst-interval 60", "--burst-interval needs --burst-size"},
      {"--burst-size 10 --burst-interval soon", "--burst-interval: duration 'soon'"},
      {"--burst-size 10 --burst-interval 0", "--burst-interval: 0 ms must be at least 1 ms"},
      {"--burst-size 10 --burst-interval 60 --rate 3", "--rate is for Poisson arrivals"},
      {"--burst-size 10 --burst-interval 60 --load 0.5 --cluster " + kNodes,
       "--burst-interval and --load both set the pace"},
  };
  for (const auto& [flags, message] : cases) {
    Output out = run(base + flags);
    EXPECT_EQ(out.status, 2) << flags << ": " << out.text;
    EXPECT_NE(out.text.find(message), std::string::npos) << flags << ": " << out.text;
  }
}

}  // namespace
