#include <gtest/gtest.h>

#include <optional>

#include "sim/alibaba_trace.h"

namespace gpucloud::sim {
namespace {

TraceCluster cluster_of(const std::string& text) {
  auto t = CsvTable::parse(text, "nodes.csv");
  EXPECT_TRUE(t.ok());
  auto c = load_alibaba_nodes(*t);
  EXPECT_TRUE(c.ok()) << c.error().message;
  return *c;
}

std::string node_error(const std::string& text) {
  auto t = CsvTable::parse(text, "nodes.csv");
  if (!t.ok()) return t.error().message;
  auto c = load_alibaba_nodes(*t);
  return c.ok() ? "" : c.error().message;
}

std::string pod_error(const std::string& text) {
  TraceCluster c = cluster_of("sn,cpu_milli,memory_mib,gpu,model\nn0,32000,1024,2,T4\n");
  auto t = CsvTable::parse(text, "pods.csv");
  if (!t.ok()) return t.error().message;
  auto p = load_alibaba_pods(*t, c);
  return p.ok() ? "" : p.error().message;
}

const char* kPodHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n";

TEST(CsvLoaderTest, LoadsNodesAndPods) {
  TraceCluster c = cluster_of(
      "sn,cpu_milli,memory_mib,gpu,model\r\nn0,32000,1024,2,T4\r\nn1,64000,2048,8,V100M16\r\n"
      "n2,8000,512,0,\r\n");
  ASSERT_EQ(c.nodes.size(), 3u);
  EXPECT_EQ(c.gpus, 10);
  EXPECT_EQ(c.models, (std::vector<std::string>{"T4", "V100M16"}));
  EXPECT_EQ(c.nodes[1].model, 1);
  EXPECT_EQ(c.nodes[1].gpu_free[7], 1000);
  EXPECT_EQ(c.nodes[2].model, -1);
  auto t =
      CsvTable::parse(std::string(kPodHeader) +
                          "p0,4000,100,1,500,,LS\np1,0,0,0,0,,BE\np2,1,1,2,1000,V100M16|A100,LS\n",
                      "pods.csv");
  ASSERT_TRUE(t.ok());
  auto pods = load_alibaba_pods(*t, c);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[0].request.gpu_milli, 500);
  EXPECT_EQ((*pods)[0].line, 2);
  EXPECT_EQ((*pods)[2].request.model_mask, 0b10u);
}

TEST(CsvLoaderTest, MissingColumnNamesFileAndColumn) {
  EXPECT_EQ(node_error("sn,cpu_milli,gpu,model\nn0,1,1,T4\n"),
            "nodes.csv:1:1: missing column 'memory_mib' (the header has: sn,cpu_milli,gpu,model)");
  EXPECT_NE(pod_error("name,cpu_milli,memory_mib,num_gpu,gpu_spec\np,1,1,1,\n")
                .find("pods.csv:1:1: missing column 'gpu_milli'"),
            std::string::npos);
}

TEST(CsvLoaderTest, MalformedNumberNamesLineAndColumn) {
  EXPECT_EQ(pod_error(std::string(kPodHeader) + "p0,4000,100,1,500,,LS\np1,4k,100,1,500,,LS\n"),
            "pods.csv:3:4: column 'cpu_milli': '4k' is not a whole number");
  EXPECT_EQ(node_error("sn,cpu_milli,memory_mib,gpu,model\nn0,32000,1024,,T4\n"),
            "nodes.csv:2:15: column 'gpu': '' is not a whole number");
}

TEST(CsvLoaderTest, NegativeValuesAreRejected) {
  EXPECT_EQ(pod_error(std::string(kPodHeader) + "p0,4000,-100,1,500,,LS\n"),
            "pods.csv:2:9: column 'memory_mib': -100 is negative; it must be 0 or more");
}

TEST(CsvLoaderTest, OtherBadInput) {
  EXPECT_EQ(pod_error(std::string(kPodHeader) + "p0,4000,100,1,500,LS\n"),
            "pods.csv:2:1: 6 fields but the header has 7");
  EXPECT_EQ(pod_error(std::string(kPodHeader) + "p0,4000,100,2,500,,LS\n"),
            "pods.csv:2:15: column 'gpu_milli': 500 with num_gpu 2; only single-GPU pods may "
            "share a GPU");
  EXPECT_EQ(pod_error(std::string(kPodHeader) + "p0,4000,100,1,1001,,LS\n"),
            "pods.csv:2:15: column 'gpu_milli': 1001 for a GPU pod; it must be 1..1000");
  EXPECT_EQ(
      pod_error(std::string(kPodHeader) + "p0,4000,100,1,500,A100|H100,LS\n"),
      "pods.csv:2:19: column 'gpu_spec': no node has a GPU model in 'A100|H100' (models: T4)");
  EXPECT_EQ(node_error("sn,cpu_milli,memory_mib,gpu,model\nn0,32000,1024,2,\n"),
            "nodes.csv:2:17: column 'model': a node with 2 GPUs needs a GPU model");
  EXPECT_EQ(node_error(""), "nodes.csv:1:1: empty file, expected a header");
  auto missing = CsvTable::read_file("/nonexistent/nodes.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "/nonexistent/nodes.csv: cannot open the file; check the path");
}

}  // namespace
}  // namespace gpucloud::sim

namespace gpucloud::sim {
namespace {

// Fields view the table's text: a copy, or a move of a text short enough to be kept inside
// std::string, must still read the same cells after the original is gone.
TEST(CsvTableCopyTest, CopiesAndMovesKeepTheirCells) {
  const std::string long_text = "name,cpu_milli\npod-with-a-long-name,12000\n";
  std::optional<CsvTable> copy, moved;
  {
    auto original = CsvTable::parse(long_text, "t.csv");
    auto short_one = CsvTable::parse("a,b\n1,22\n", "t.csv");
    ASSERT_TRUE(original.ok() && short_one.ok());
    copy = *original;
    moved = std::move(*short_one);
  }
  std::string reuse(long_text.size(), 'x');  // likely takes the freed text's memory
  EXPECT_EQ(copy->text(0, 0), "pod-with-a-long-name");
  EXPECT_EQ(*copy->non_negative(0, 1), 12000);
  EXPECT_EQ(moved->text(0, 1), "22");
}

}  // namespace
}  // namespace gpucloud::sim
