// The paper's figures are shown only for the input they were published for, recognised by its
// content (sim/published.h), not by its file name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_run.h"
#include "sim/published.h"

namespace gpucloud::sim {
namespace {

const std::string kData = TEST_DATA_DIR;
const std::string kDefaultPods = kData + "/openb_pod_list_default.csv";
const std::string kGpuNodes = kData + "/openb_node_list_gpu_node.csv";

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// Writes lines to a file in a temporary directory of the running test and returns its path.
std::string write_file(const std::string& name, const std::vector<std::string>& lines) {
  auto dir = std::filesystem::temp_directory_path() /
             ("gpucloud_published_input_test_" +
              std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::trunc);
  for (const auto& l : lines) out << l << "\n";
  return (dir / name).string();
}

bool published(const std::string& nodes_file, const std::string& pods_file) {
  auto cluster = load_alibaba_nodes(nodes_file);
  EXPECT_TRUE(cluster.ok()) << cluster.error().message;
  auto pods = load_alibaba_pods(pods_file, *cluster);
  EXPECT_TRUE(pods.ok()) << pods.error().message;
  return is_published_input(*cluster, *pods);
}

TEST(PublishedInputTest, RecognisesTheDefaultTraceByContent) {
  EXPECT_TRUE(published(kGpuNodes, kDefaultPods));
  // The same pods in another row order, under another name, still are the published input.
  std::vector<std::string> lines = read_lines(kDefaultPods);
  std::reverse(lines.begin() + 1, lines.end());
  EXPECT_TRUE(published(kGpuNodes, write_file("reordered.csv", lines)));
}

TEST(PublishedInputTest, OtherContentIsNotPublishedWhateverItsName) {
  std::vector<std::string> lines = read_lines(kDefaultPods);
  // openb-pod-0000,12000,16384,1,1000,... with 2 GPUs instead of 1.
  ASSERT_EQ(lines[1].rfind("openb-pod-0000,12000,16384,1,1000,", 0), 0u);
  lines[1].replace(std::string("openb-pod-0000,12000,16384,").size(), 1, "2");
  EXPECT_FALSE(published(kGpuNodes, write_file("openb_pod_list_default.csv", lines)));
  EXPECT_FALSE(published(kGpuNodes, kData + "/alibaba_pods_small.csv"));
  // The default pods on another cluster (one node fewer).
  std::vector<std::string> nodes = read_lines(kGpuNodes);
  nodes.pop_back();
  EXPECT_FALSE(published(write_file("openb_node_list_gpu_node.csv", nodes), kDefaultPods));
}

TEST(PublishedInputTest, CliShowsPublishedFiguresOnlyForThePublishedInput) {
  // The default trace under another file name: published figures in JSON and in the table.
  std::string renamed = write_file("my_pods.csv", read_lines(kDefaultPods));
  auto json = testing::run_gpucloud(
      "sim fgd --nodes " + kGpuNodes + " --pods " + renamed + " --policy fgd --seeds 42 --json",
      "2>/dev/null");
  ASSERT_EQ(json.status, 0) << json.text;
  auto j = nlohmann::json::parse(json.text);
  EXPECT_TRUE(j["published_input"].get<bool>());
  EXPECT_EQ(j["results"][0]["published_unallocated_pct"]["100"].get<double>(), 4.77);
  auto table = testing::run_gpucloud("sim fgd --nodes " + kGpuNodes + " --pods " + renamed +
                                     " --policy fgd --seeds 42");
  ASSERT_EQ(table.status, 0) << table.text;
  EXPECT_EQ(table.text.find("No published figures"), std::string::npos) << table.text;
  EXPECT_NE(table.text.find("  4.77"), std::string::npos) << table.text;

  // Another pod list named like the default one: no published figures.
  std::string impostor =
      write_file("openb_pod_list_default.csv", read_lines(kData + "/alibaba_pods_small.csv"));
  std::string small_nodes = kData + "/alibaba_nodes_small.csv";
  json = testing::run_gpucloud(
      "sim fgd --nodes " + small_nodes + " --pods " + impostor + " --policy all --seeds 1 --json",
      "2>/dev/null");
  ASSERT_EQ(json.status, 0) << json.text;
  j = nlohmann::json::parse(json.text);
  EXPECT_FALSE(j["published_input"].get<bool>());
  for (const auto& r : j["results"]) EXPECT_TRUE(r["published_unallocated_pct"].is_null()) << r;
  table = testing::run_gpucloud("sim fgd --nodes " + small_nodes + " --pods " + impostor +
                                " --policy fgd --seeds 1");
  ASSERT_EQ(table.status, 0) << table.text;
  EXPECT_NE(table.text.find("No published figures exist for this input"), std::string::npos)
      << table.text;
  EXPECT_EQ(table.text.find("4.77"), std::string::npos) << table.text;
  EXPECT_EQ(table.text.find("MISS"), std::string::npos) << table.text;
}

}  // namespace
}  // namespace gpucloud::sim
