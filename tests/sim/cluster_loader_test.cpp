// Cluster files: canonical CSV, YAML and the Alibaba node list, with errors that say where.
#include <gtest/gtest.h>

#include "sim/cluster.h"

namespace gpucloud::sim {
namespace {

Result<SimCluster> csv(const std::string& text) {
  auto t = CsvTable::parse(text, "c.csv");
  if (!t.ok()) return t.error();
  return load_canonical_cluster(*t);
}

const std::string kHeader = "name,gpus,gpu_model,gpu_memory_mib,cpu_milli,memory_mib,labels\n";

TEST(CanonicalClusterTest, ReadsNodesGpusAndLabels) {
  auto c = csv(kHeader + "n1,8,A100,81920,64000,524288,zone=a;pool=x\nn2,0,,,16000,,\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->nodes.size(), 2u);
  const sched::NodeState& n = c->nodes[0];
  EXPECT_EQ(n.id, "n1");
  ASSERT_EQ(n.gpus.size(), 8u);
  EXPECT_EQ(n.gpus[7].index, 7);
  EXPECT_EQ(n.gpus[7].model, "A100");
  EXPECT_EQ(n.gpus[7].memory_mib, 81920);
  EXPECT_EQ(n.cpu_milli, 64000);
  EXPECT_EQ(n.memory_mib, 524288);
  EXPECT_EQ(n.labels, (std::map<std::string, std::string>{{"pool", "x"}, {"zone", "a"}}));
  EXPECT_TRUE(c->nodes[1].gpus.empty());
  EXPECT_EQ(c->gpus(), 8);
  EXPECT_EQ(c->models(), std::vector<std::string>{"A100"});
}

TEST(CanonicalClusterTest, ErrorsSayWhere) {
  auto num = csv(kHeader + "n1,8,A100,81920,64k,1,\n");
  ASSERT_FALSE(num.ok());
  EXPECT_EQ(num.error().message, "c.csv:2:17: column 'cpu_milli': '64k' is not a whole number");
  auto labels = csv(kHeader + "n1,1,T4,,1000,,zone\n");
  ASSERT_FALSE(labels.ok());
  EXPECT_EQ(labels.error().message,
            "c.csv:2:16: column 'labels': 'zone' is not key=value (write e.g. zone=a;pool=x)");
  auto model = csv(kHeader + "n1,2,,,1000,,\n");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error().message,
            "c.csv:2:6: gpu_model: a node with 2 GPUs needs a GPU model (e.g. A100)");
  auto dup = csv(kHeader + "n1,1,T4,,1000,,\nn1,1,T4,,1000,,\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "c.csv:3:1: name: 'n1' is used by another node");
  auto missing = csv("name,gpus\nn1,1\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "c.csv:1:1: missing column 'gpu_model' (the header has: name,gpus)");
}

TEST(ClusterYamlTest, ReadsNodesWithCountAndLabels) {
  auto c = load_cluster_yaml(
      "nodes:\n"
      "  - name: big\n"
      "    gpus: 8\n"
      "    gpu_model: H100\n"
      "    cpu_milli: 96000\n"
      "    memory_mib: 1048576\n"
      "    labels: {zone: b, capacity-class: spot}\n"
      "    count: 3\n"
      "  - {name: cpu, gpus: 0, cpu_milli: 8000}\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->nodes.size(), 4u);
  EXPECT_EQ(c->nodes[2].id, "big-2");
  EXPECT_EQ(c->nodes[2].gpus.size(), 8u);
  EXPECT_EQ(c->nodes[2].gpus[0].model, "H100");
  EXPECT_EQ(c->nodes[2].labels.at("capacity-class"), "spot");
  EXPECT_EQ(c->nodes[3].id, "cpu");
  EXPECT_EQ(c->gpus(), 24);
}

TEST(ClusterYamlTest, ErrorsSayLineAndColumn) {
  auto bad =
      load_cluster_yaml("nodes:\n  - name: a\n    gpus: eight\n    cpu_milli: 1\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "c.yaml:3:11: gpus: 'eight' is not a whole number");
  auto unknown = load_cluster_yaml("nodes:\n  - name: a\n    gpu: 1\n", "c.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("c.yaml:3:5: unknown field 'gpu'"), std::string::npos)
      << unknown.error().message;
  auto syntax = load_cluster_yaml("nodes: [\n", "c.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().message.rfind("c.yaml:", 0), 0u) << syntax.error().message;
  auto shape = load_cluster_yaml("- a\n", "c.yaml");
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.error().message, "c.yaml:1:1: expected a map with 'nodes:', a list of nodes");
}

TEST(AlibabaNodeClusterTest, ReadsTheNodeList) {
  auto c = load_cluster(std::string(TEST_DATA_DIR) + "/alibaba_nodes_small.csv");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->nodes.size(), 40u);
  EXPECT_EQ(c->gpus(), 208);
  EXPECT_EQ(c->nodes[0].id, "openb-node-0000");
  EXPECT_EQ(c->nodes[0].gpus.size(), 2u);
  EXPECT_EQ(c->nodes[0].gpus[0].model, "P100");
  EXPECT_EQ(c->nodes[0].labels.at("capacity-class"), "spot");  // BE pods ran on every node
}

TEST(AlibabaNodeClusterTest, TooManyGpusOnANodeSaysWhere) {
  auto t = CsvTable::parse("sn,cpu_milli,memory_mib,gpu,model\nn,1,1,17,A\n", "n.csv");
  ASSERT_TRUE(t.ok());
  auto c = load_alibaba_node_cluster(*t);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message,
            "n.csv:2:7: gpus: 17 on one node; the simulator supports at most 16");
}

}  // namespace
}  // namespace gpucloud::sim
