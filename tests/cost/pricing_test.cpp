#include "cost/pricing.h"

#include <gtest/gtest.h>

namespace gpucloud::cost {
namespace {

NodeInfo node_with(int gpus, std::map<std::string, std::string> labels = {}) {
  NodeInfo n;
  n.name = "n";
  for (int i = 0; i < gpus; ++i) n.gpus.push_back({.index = i, .model = "A100"});
  n.cpu_milli = 96'000;
  n.memory_mib = 1'000'000;
  n.labels = std::move(labels);
  return n;
}

InstanceCatalog catalog() {
  auto c = InstanceCatalog::parse(
      "cloud,instance_type,gpu_model,gpus,region,on_demand_usd_per_hour,spot_usd_per_hour\n"
      "aws,p4d.24xlarge,A100-40GB,8,us-east-1,21.957642,2.4655\n"
      "lambda,gpu_8x_a100,A100-40GB,8,us-east-1,14.32,\n",
      "c.csv");
  EXPECT_TRUE(c.ok()) << c.error().message;
  return std::move(*c);
}

const std::map<std::string, std::string> kP4d = {
    {"cloud", "aws"}, {"instance-type", "p4d.24xlarge"}, {"region", "us-east-1"}};

TEST(PriceNode, TheAgentsPriceWins) {
  NodeInfo n = node_with(8, kP4d);
  n.price_per_hour = 10;
  auto c = catalog();
  NodePrice p = price_node(n, &c, {});
  EXPECT_DOUBLE_EQ(p.usd_per_hour, 10);
  EXPECT_EQ(p.source, "agent");
  EXPECT_DOUBLE_EQ(p.on_demand_usd_per_hour, 21.957642) << "savings compare with on-demand";
}

TEST(PriceNode, LabelsPickTheCatalogRowAndItsCapacityClass) {
  auto c = catalog();
  EXPECT_DOUBLE_EQ(price_node(node_with(8, kP4d), &c, {}).usd_per_hour, 21.957642);
  auto spot_labels = kP4d;
  spot_labels["capacity-class"] = "spot";
  NodePrice spot = price_node(node_with(8, spot_labels), &c, {});
  EXPECT_DOUBLE_EQ(spot.usd_per_hour, 2.4655);
  EXPECT_DOUBLE_EQ(spot.on_demand_usd_per_hour, 21.957642);
  // No spot price in the row: the node is charged on-demand, and says so.
  NodePrice lambda = price_node(node_with(8, {{"cloud", "lambda"},
                                              {"instance-type", "gpu_8x_a100"},
                                              {"region", "us-east-1"},
                                              {"capacity-class", "spot"}}),
                                &c, {});
  EXPECT_DOUBLE_EQ(lambda.usd_per_hour, 14.32);
  EXPECT_EQ(lambda.source, "catalog (on-demand)");
}

TEST(PriceNode, OwnedHardwareIsAmortised) {
  CostSettings s;
  // $300,000 over 4 years, 6.5 kW at $0.12/kWh, 1.5x overhead (space, staff, network).
  s.owned["default"] = {.purchase_usd = 300'000,
                        .years = 4,
                        .power_watts = 6500,
                        .usd_per_kwh = 0.12,
                        .overhead = 1.5};
  NodePrice p = price_node(node_with(8), nullptr, s);
  EXPECT_NEAR(p.usd_per_hour, (300'000.0 / (4 * 8760) + 6.5 * 0.12) * 1.5, 1e-9);
  EXPECT_EQ(p.source, "owned:default");
  // A fleet bought for $500K a year, 256 GPUs, charged per use at 70 % utilisation.
  s.owned["fleet"] = {.annual_usd = 500'000, .fleet_gpus = 256, .utilisation = 0.7};
  NodePrice f = price_node(node_with(8, {{"owned-profile", "fleet"}}), nullptr, s);
  EXPECT_NEAR(f.usd_per_hour, 500'000.0 / (256 * 8760 * 0.7) * 8, 1e-9);
}

TEST(PriceNode, WithoutAnySourceTheNodeHasNoPrice) {
  NodePrice p = price_node(node_with(8, {{"cloud", "aws"}}), nullptr, {});
  EXPECT_LT(p.usd_per_hour, 0);
  EXPECT_EQ(p.source, "");
}

TEST(ShareOfNode, GpusPayTheirShareOfTheNode) {
  NodeInfo n = node_with(8);
  EXPECT_DOUBLE_EQ(share_of_node({.gpu_milli = 2000, .cpu_milli = 90'000}, n, {}), 2.0 / 8);
  // A 250-milli share pays 250/1000 of one GPU's part.
  EXPECT_DOUBLE_EQ(share_of_node({.gpu_milli = 250}, n, {}), 0.25 / 8);
}

TEST(ShareOfNode, WithoutGpusTheCpuShareCounts) {
  EXPECT_DOUBLE_EQ(share_of_node({.cpu_milli = 24'000}, node_with(8), {}), 0.25);
  EXPECT_DOUBLE_EQ(share_of_node({.cpu_milli = 48'000}, node_with(0), {}), 0.5);
}

TEST(ShareOfNode, CpuAndMemoryWeightsMix) {
  ShareWeights w{.gpu = 2, .cpu = 1, .memory = 1};
  // GPU 1/8, CPU 1/2, memory 1/4: (2/8 + 1/2 + 1/4) / 4.
  double s = share_of_node({.gpu_milli = 1000, .cpu_milli = 48'000, .memory_mib = 250'000},
                           node_with(8), w);
  EXPECT_DOUBLE_EQ(s, (2 * 0.125 + 0.5 + 0.25) / 4);
}

TEST(CostUsd, TwoGpusOfAP4dForTenSeconds) {
  double per_hour = 21.957642 * share_of_node({.gpu_milli = 2000}, node_with(8), {});
  EXPECT_NEAR(cost_usd(per_hour, 1000, 11'000), 2.0 / 8 * 21.957642 * 10 / 3600, 1e-12);
  EXPECT_EQ(cost_usd(per_hour, 5000, 5000), 0);
  EXPECT_EQ(cost_usd(per_hour, 5000, 4000), 0);
}

}  // namespace
}  // namespace gpucloud::cost
