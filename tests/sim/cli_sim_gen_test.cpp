// Runs the real `gpucloud sim gen` binary and reads its output back as a trace.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

TEST(CliSimGenTest, BadFlagsAndFilesFailClearly) {
  Output rate = run("--trace-like " + kPods + " --rate -1");
  EXPECT_EQ(rate.status, 2);
  EXPECT_NE(rate.text.find("--rate: -1 jobs/s must be above 0"), std::string::npos) << rate.text;
  Output missing = run("--trace-like /nonexistent/pods.csv");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.text.find("/nonexistent/pods.csv: cannot open the file"), std::string::npos)
      << missing.text;
}

}  // namespace
