// Runs the real `gpucloud sim variant` binary: output to stdout or --out, the summary line, and
// the exit codes of bad flags (2) and bad files (1).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_run.h"

namespace {

using gpucloud::testing::run_gpucloud;

const std::string kData = TEST_DATA_DIR;
const std::string kPods = "--pods " + kData + "/openb_pod_list_default.csv";

TEST(CliSimVariantTest, WritesToStdoutOrOutWithASummary) {
  auto out = std::filesystem::temp_directory_path() / "gpucloud_cli_sim_variant_test.csv";
  auto to_file = run_gpucloud("sim variant " + kPods +
                              " --kind gpushare --percent 40 --seed 3 --out " + out.string());
  ASSERT_EQ(to_file.status, 0) << to_file.text;
  EXPECT_NE(to_file.text.find("8152 pods written to " + out.string()), std::string::npos)
      << to_file.text;
  EXPECT_NE(to_file.text.find("% of GPU requests (milli) from GPU-sharing pods (asked for 40 %)"),
            std::string::npos)
      << to_file.text;
  auto to_stdout = run_gpucloud("sim variant " + kPods + " --kind gpushare --percent 40 --seed 3",
                                "2>/dev/null");
  ASSERT_EQ(to_stdout.status, 0);
  std::ifstream in(out);
  EXPECT_EQ(to_stdout.text, std::string(std::istreambuf_iterator<char>(in), {}));
  // The file is a pod list that sim fgd reads.
  auto fgd = run_gpucloud("sim fgd --nodes " + kData + "/openb_node_list_gpu_node.csv --pods " +
                          out.string() + " --policy fgd --seeds 1 --json");
  EXPECT_EQ(fgd.status, 0) << fgd.text;
  std::filesystem::remove(out);
}

TEST(CliSimVariantTest, BadFlagsAreUsageErrorsAndBadFilesErrors) {
  auto r = run_gpucloud("sim variant " + kPods + " --kind gpu-share --percent 40");
  EXPECT_EQ(r.status, 2) << r.text;
  EXPECT_NE(r.text.find("--kind: unknown kind 'gpu-share'; use gpuspec, multigpu, gpushare or cpu"),
            std::string::npos)
      << r.text;
  r = run_gpucloud("sim variant " + kPods + " --kind cpu --percent 101");
  EXPECT_EQ(r.status, 2) << r.text;
  EXPECT_NE(r.text.find("--percent: 101 is outside 0..100"), std::string::npos) << r.text;
  r = run_gpucloud("sim variant " + kPods + " --kind cpu --percent -5");
  EXPECT_EQ(r.status, 2) << r.text;
  r = run_gpucloud("sim variant " + kPods + " --kind cpu");
  EXPECT_EQ(r.status, 2) << r.text;  // --percent is required
  r = run_gpucloud("sim variant --pods /nonexistent/pods.csv --kind cpu --percent 5");
  EXPECT_EQ(r.status, 1) << r.text;
  EXPECT_NE(r.text.find("/nonexistent/pods.csv: cannot open the file"), std::string::npos)
      << r.text;
  r = run_gpucloud("sim variant --pods " + kData +
                   "/alibaba_pods_small.csv --kind gpuspec --percent 10");
  EXPECT_EQ(r.status, 1) << r.text;
  EXPECT_NE(r.text.find("--nodes"), std::string::npos) << r.text;
}

}  // namespace
