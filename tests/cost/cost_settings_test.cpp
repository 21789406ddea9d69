#include "cost/cost_settings.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpucloud::cost {
namespace {

using json = nlohmann::json;

std::string error_of(const json& j) {
  auto s = cost_settings_from_json(j, "cost");
  EXPECT_FALSE(s.ok());
  return s.ok() ? std::string() : s.error().message;
}

TEST(CostSettings, ReadsWeightsAndProfiles) {
  auto s = cost_settings_from_json(json::parse(R"({"weights": {"gpu": 1, "cpu": 0.5},
                      "owned": {"dgx": {"purchase_usd": 300000, "years": 4,
                                        "power_watts": 6500, "usd_per_kwh": 0.12,
                                        "overhead": 1.5},
                                "fleet": {"annual_usd": 500000, "fleet_gpus": 256}}})"),
                                   "cost");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->weights.cpu, 0.5);
  EXPECT_EQ(s->owned.size(), 2u);
  EXPECT_NEAR(s->owned["fleet"].usd_per_hour(8), 500'000.0 / (256 * 8760) * 8, 1e-9);
}

TEST(CostSettings, BadValuesAreRefusedWithTheirPlace) {
  EXPECT_EQ(error_of(json::parse(R"({"weights": {"gpu": -1}})")),
            "cost.weights.gpu: expected a number from 0 to 1000");
  EXPECT_EQ(error_of(json::parse(R"({"weights": {"gpu": 0}})")),
            "cost.weights: every weight is 0; give at least one a value above 0");
  EXPECT_NE(
      error_of(json::parse(R"({"owned": {"x": {"annual_usd": 5}}})")).find("needs fleet_gpus"),
      std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"owned": {"x": {"purchase_usd": 5}}})")).find("needs years"),
            std::string::npos);
  EXPECT_EQ(error_of(json::parse(R"({"budget": 1})")),
            "cost.budget: unknown field; expected weights, owned");
}

}  // namespace
}  // namespace gpucloud::cost
