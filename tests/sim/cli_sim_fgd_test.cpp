// Runs the real `gpucloud sim fgd` binary on tests/data and checks its output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace {

using Output = gpucloud::testing::CliOutput;

Output run(const std::string& args) {
  return gpucloud::testing::run_gpucloud("sim fgd " + args);
}

const std::string kData = TEST_DATA_DIR;
const std::string kInputs =
    "--nodes " + kData + "/alibaba_nodes_small.csv --pods " + kData + "/alibaba_pods_small.csv";

TEST(CliSimFgdTest, JsonHasOneResultPerPolicyWithAllLoads) {
  Output out = run(kInputs + " --policy all --seeds 42-44 --json");
  ASSERT_EQ(out.status, 0) << out.text;
  auto j = nlohmann::json::parse(out.text);
  ASSERT_EQ(j["results"].size(), 7u);
  std::vector<std::string> names;
  for (const auto& r : j["results"]) {
    names.push_back(r["policy"]);
    for (const char* k : {"95", "100", "130"}) EXPECT_TRUE(r["unallocated_pct"][k].is_number());
    for (const char* k : {"0", "95", "100", "130"}) {
      EXPECT_TRUE(r["frag_ratio_pct"][k].is_number());
      EXPECT_TRUE(r["frag_milli_pct"][k].is_number());
    }
    EXPECT_GE(r["seconds"].get<double>(), 0);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"random", "dot-product", "clustering", "packing",
                                             "best-fit", "fgd", "default"}));
  Output again = run(kInputs + " --policy all --seeds 42-44 --json");
  auto k = nlohmann::json::parse(again.text);
  for (size_t i = 0; i < 7; ++i)
    EXPECT_EQ(j["results"][i]["unallocated_pct"], k["results"][i]["unallocated_pct"]);
}

TEST(CliSimFgdTest, TableAndPlot) {
  auto svg = std::filesystem::temp_directory_path() / "gpucloud_sim_fgd_test.svg";
  Output out = run(kInputs + " --policy fgd --seeds 1-2 --plot " + svg.string());
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("ours"), std::string::npos);
  EXPECT_NE(out.text.find("No published figures exist for this input"), std::string::npos);
  std::ifstream in(svg);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("arrival load"), std::string::npos);
  EXPECT_NE(text.find("fgd"), std::string::npos);
  std::filesystem::remove(svg);
}

TEST(CliSimFgdTest, BadInputSaysWhereAndFails) {
  auto bad = std::filesystem::temp_directory_path() / "gpucloud_sim_fgd_bad_pods.csv";
  {
    std::ofstream out(bad);
    out << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,1000,10,1,x5,\n";
  }
  Output out = run("--nodes " + kData + "/alibaba_nodes_small.csv --pods " + bad.string());
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find(bad.string() + ":2:14: column 'gpu_milli': 'x5' is not a whole number"),
            std::string::npos)
      << out.text;
  EXPECT_NE(run(kInputs + " --policy nope").status, 0);
  EXPECT_NE(run(kInputs + " --seeds 5-1").status, 0);
  std::filesystem::remove(bad);
}

}  // namespace

namespace {

TEST(CliSimFgdTest, BadFlagsAreUsageErrors) {
  std::string files =
      "--nodes " + kData + "/alibaba_nodes_small.csv --pods " + kData + "/alibaba_pods_small.csv";
  Output out = run(files + " --policy bogus");
  EXPECT_EQ(out.status, 2) << out.text;
  EXPECT_NE(out.text.find("unknown policy 'bogus'"), std::string::npos) << out.text;
  out = run(files + " --inflation -1");
  EXPECT_EQ(out.status, 2) << out.text;
  out = run(files + " --seeds abc");
  EXPECT_EQ(out.status, 2) << out.text;
}

}  // namespace
