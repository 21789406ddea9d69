#include "cost/instance_catalog.h"

#include <gtest/gtest.h>

#include <string>

namespace gpucloud::cost {
namespace {

const std::string kHeader =
    "cloud,instance_type,gpu_model,gpus,gpu_memory_gib,vcpus,memory_gib,region,"
    "on_demand_usd_per_hour,spot_usd_per_hour,source\n";

std::string error_of(const std::string& text, const CatalogLimits& limits = {}) {
  auto c = InstanceCatalog::parse(text, "prices.csv", limits);
  EXPECT_FALSE(c.ok());
  return c.ok() ? std::string() : c.error().message;
}

TEST(InstanceCatalog, TheShippedCatalogLoadsEveryRow) {
  auto c = InstanceCatalog::load(SHIPPED_CATALOG);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->size(), 590u);
  const InstanceOffer* p4d = c->find("aws", "p4d.24xlarge", "us-east-1");
  ASSERT_NE(p4d, nullptr);
  EXPECT_EQ(p4d->gpus, 8);
  EXPECT_EQ(p4d->gpu_model, "A100-40GB");
  EXPECT_DOUBLE_EQ(p4d->on_demand_usd_per_hour, 21.957642);
  EXPECT_DOUBLE_EQ(p4d->spot_usd_per_hour, 2.4655);
  const InstanceOffer* lambda = c->find("lambda", "gpu_1x_a10", "us-east-1");
  ASSERT_NE(lambda, nullptr);
  EXPECT_LT(lambda->spot_usd_per_hour, 0) << "Lambda has no spot price";
  EXPECT_EQ(c->find("aws", "p4d.24xlarge", "mars-1"), nullptr);
}

TEST(InstanceCatalog, AnEmptySpotPriceMeansNone) {
  auto c = InstanceCatalog::parse(
      kHeader + "aws,p5.4xlarge,H100-80GB,1,80,16,256,us-east-1,6.88,,s\n", "prices.csv");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_LT(c->find("aws", "p5.4xlarge", "us-east-1")->spot_usd_per_hour, 0);
}

TEST(InstanceCatalog, AMissingColumnIsNamed) {
  std::string e = error_of("cloud,instance_type,gpu_model,gpus,region,spot_usd_per_hour\n");
  EXPECT_NE(e.find("prices.csv:1:1: missing column 'on_demand_usd_per_hour'"), std::string::npos)
      << e;
}

TEST(InstanceCatalog, ANegativePriceIsRefusedWithItsLine) {
  std::string e = error_of(kHeader + "aws,a,A100,8,40,96,1152,us-east-1,21.9,2.4,s\n" +
                           "aws,b,A100,8,40,96,1152,us-east-1,-1,2.4,s\n");
  EXPECT_NE(e.find("prices.csv:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("on_demand_usd_per_hour: -1 is negative"), std::string::npos) << e;
}

TEST(InstanceCatalog, APriceThatIsNotANumberIsRefused) {
  std::string e = error_of(kHeader + "aws,a,A100,8,40,96,1152,us-east-1,21.9,cheap,s\n");
  EXPECT_NE(e.find("prices.csv:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("spot_usd_per_hour: 'cheap' is not a number"), std::string::npos) << e;
}

TEST(InstanceCatalog, AnotherCurrencyIsRefused) {
  std::string e = error_of(
      "cloud,instance_type,gpu_model,gpus,region,on_demand_eur_per_hour,spot_eur_per_hour\n"
      "aws,a,A100,8,us-east-1,20,2\n");
  EXPECT_NE(e.find("on_demand_eur_per_hour': unknown currency"), std::string::npos) << e;
}

TEST(InstanceCatalog, ADuplicatedRowNamesBothLines) {
  std::string row = "aws,a,A100,8,40,96,1152,us-east-1,21.9,2.4,s\n";
  std::string e = error_of(kHeader + row + "gcp,a,A100,8,40,96,1152,us-east-1,21.9,2.4,s\n" + row);
  EXPECT_NE(e.find("prices.csv:4:1: aws a in us-east-1 is listed twice (first on line 2)"),
            std::string::npos)
      << e;
}

TEST(InstanceCatalog, ARowWithTooFewFieldsIsRefused) {
  std::string e = error_of(kHeader + "aws,a,A100,8\n");
  EXPECT_NE(e.find("prices.csv:2:1: 4 fields but the header has 11"), std::string::npos) << e;
}

TEST(InstanceCatalog, LimitsAreEnforced) {
  CatalogLimits limits;
  limits.max_field_bytes = 8;
  std::string e =
      error_of(kHeader + "aws,a-very-long-instance-name,A100,8,40,96,1152,r,1,1,s\n", limits);
  EXPECT_NE(e.find("prices.csv:2:5: instance_type: 25 bytes; the limit is 8"), std::string::npos)
      << e;
  limits = {};
  limits.max_rows = 1;
  e = error_of(kHeader + "aws,a,A,8,40,96,1152,r,1,1,s\naws,b,A,8,40,96,1152,r,1,1,s\n", limits);
  EXPECT_NE(e.find("more than 1 records"), std::string::npos) << e;
  limits = {};
  limits.max_bytes = 100;
  e = error_of(kHeader + "aws,a,A,8,40,96,1152,r,1,1,s\n", limits);
  EXPECT_NE(e.find("above the limit of 100 bytes"), std::string::npos) << e;
}

TEST(InstanceCatalog, AnEmptyKeyFieldIsRefused) {
  std::string e = error_of(kHeader + "aws,,A100,8,40,96,1152,us-east-1,21.9,2.4,s\n");
  EXPECT_NE(e.find("prices.csv:2:5: instance_type: empty"), std::string::npos) << e;
}

}  // namespace
}  // namespace gpucloud::cost
