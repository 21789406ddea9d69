#include "model/node_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace gpucloud {
namespace {

using json = nlohmann::json;

json sample_node() {
  return {{"name", "gpu-01"},
          {"cpu_milli", 64000},
          {"memory_mib", 262144},
          {"gpus",
           {{{"index", 0},
             {"uuid", "GPU-1"},
             {"model", "A100"},
             {"memory_mib", 81920},
             {"numa_node", -1},
             {"nvlink_peers", {1}}}}}};
}

std::string refusal(const json& j) {
  auto r = node_info_from_json(j);
  EXPECT_FALSE(r.ok()) << j.dump() << " was accepted";
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  return r.error().message;
}

TEST(NodeInfoFromJson, ReadsARegistration) {
  auto r = node_info_from_json(sample_node());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 1u);
  EXPECT_EQ(r->gpus[0].numa_node, -1);
  EXPECT_EQ(r->gpus[0].nvlink_peers, std::vector<int>{1});
}

TEST(NodeInfoFromJson, NumbersOutOfRangeAreRefusedNamingTheField) {
  json j = sample_node();
  j["gpus"][0]["index"] = int64_t{1} << 40;  // used to wrap to 0 through get<int>()
  EXPECT_NE(refusal(j).find("index: 1099511627776 is outside 0..1023"), std::string::npos)
      << refusal(j);
  j = sample_node();
  j["cpu_milli"] = -1;
  EXPECT_NE(refusal(j).find("cpu_milli: -1 is outside"), std::string::npos) << refusal(j);
  j = sample_node();
  j["gpus"][0]["nvlink_peers"] = {1e18};
  EXPECT_NE(refusal(j).find("nvlink_peers: expected a whole number"), std::string::npos)
      << refusal(j);
  j = sample_node();
  j["gpus"][0]["numa_node"] = 5000;
  EXPECT_NE(refusal(j).find("numa_node: 5000 is outside -1..1023"), std::string::npos)
      << refusal(j);
}

TEST(NodeInfoFromJson, RefusesThousandsOfLabels) {
  json j = sample_node();
  for (int i = 0; i < 300; ++i) j["labels"]["l" + std::to_string(i)] = "x";
  EXPECT_NE(refusal(j).find("300 labels; at most 256"), std::string::npos) << refusal(j);
}

TEST(NodeInfoFromJson, APriceIsOptionalAndBounded) {
  auto unpriced = node_info_from_json(sample_node());
  ASSERT_TRUE(unpriced.ok());
  EXPECT_LT(unpriced->price_per_hour, 0) << "absent: unknown";
  EXPECT_FALSE(node_info_to_json(*unpriced).contains("price_per_hour"));
  json j = sample_node();
  j["price_per_hour"] = 24.48;
  auto priced = node_info_from_json(j);
  ASSERT_TRUE(priced.ok()) << priced.error().message;
  EXPECT_DOUBLE_EQ(priced->price_per_hour, 24.48);
  EXPECT_EQ(node_info_to_json(*priced)["price_per_hour"], 24.48);
  for (const json& bad : {json(-1), json(1e6), json("24.48")}) {
    j["price_per_hour"] = bad;
    EXPECT_NE(refusal(j).find("price_per_hour"), std::string::npos) << bad.dump();
  }
}

TEST(NodeInfoFromJson, KeepsAValidMetricsAddress) {
  for (const char* address : {"10.0.0.5:9400", ":9400", "[fd00::5]:9400", "gpu-7.lab:1"}) {
    json j = sample_node();
    j["metrics_address"] = address;
    auto r = node_info_from_json(j);
    ASSERT_TRUE(r.ok()) << address << ": " << r.error().message;
    EXPECT_EQ(r->metrics_address, address);
    EXPECT_EQ(node_info_to_json(*r)["metrics_address"], address);
  }
}

TEST(NodeInfoFromJson, RefusesAMetricsAddressPrometheusCouldNotScrape) {
  for (const char* address : {"10.0.0.5", "10.0.0.5:0", "10.0.0.5:65536", "10.0.0.5:94x0",
                              "a b:9400", "h/x:9400", "h\"x:9400", ":"}) {
    json j = sample_node();
    j["metrics_address"] = address;
    EXPECT_NE(refusal(j).find("metrics_address"), std::string::npos) << address;
  }
  json long_host = sample_node();
  long_host["metrics_address"] = std::string(300, 'h') + ":9400";
  EXPECT_NE(refusal(long_host).find("metrics_address"), std::string::npos);
  json not_text = sample_node();
  not_text["metrics_address"] = 9400;
  refusal(not_text);
}

TEST(NodeInfoFromJson, KeepsTheDoctorsVerdictsSharingAndMigParents) {
  NodeInfo n = *node_info_from_json(sample_node());
  EXPECT_EQ(n.gpu_sharing, "best-effort") << "an older agent says nothing: shares are not fenced";
  EXPECT_EQ(n.doctor_status(), "") << "an older agent ran no doctor";
  EXPECT_EQ(n.failed_check(), nullptr);
  n.gpu_sharing = "mps";
  n.doctor = {{"gpu driver", "ok", "driver 550", ""}, {"disk", "warn", "900 MiB free", "free"}};
  n.gpus[0].mig_parent = 3;
  auto back = node_info_from_json(node_info_to_json(n));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->gpu_sharing, "mps");
  ASSERT_EQ(back->doctor.size(), 2u);
  EXPECT_EQ(back->doctor[1].why, "900 MiB free");
  EXPECT_EQ(back->doctor_status(), "warn");
  EXPECT_EQ(back->gpus[0].mig_parent, 3);
  back->doctor.push_back({"mps", "fail", "no daemon", "install it"});
  EXPECT_EQ(back->doctor_status(), "fail");
  ASSERT_NE(back->failed_check(), nullptr);
  EXPECT_EQ(back->failed_check()->name, "mps");
}

TEST(ClipNodeChecks, KeepsFailuresAndWarningsFirstAndCutsLongTextsOnACharacter) {
  std::vector<NodeCheck> checks;
  for (int i = 0; i < 70; ++i) checks.push_back({"ok" + std::to_string(i), "ok", "", ""});
  checks.push_back({"disk", "fail", std::string(2000, 'x'), ""});
  checks.push_back({"clock", "warn", "", std::string(1020, 'y') + "\xc3\xa9zzz"});
  clip_node_checks(checks, 63);
  ASSERT_EQ(checks.size(), 63u);
  EXPECT_EQ(checks[0].name, "disk");
  EXPECT_EQ(checks[1].name, "clock");
  EXPECT_EQ(checks[2].name, "ok0") << "the others keep their order";
  EXPECT_EQ(checks[0].why.size(), kMaxCheckText);
  EXPECT_EQ(checks[0].why.substr(kMaxCheckText - 3), "...");
  EXPECT_LE(checks[1].fix.size(), kMaxCheckText);
  EXPECT_EQ(checks[1].fix.find("\xc3"), std::string::npos) << "no half of a UTF-8 character";
  NodeInfo n = *node_info_from_json(sample_node());
  n.doctor = checks;
  EXPECT_TRUE(node_info_from_json(node_info_to_json(n)).ok()) << "clipped checks read back";
}

TEST(NodeInfoFromJson, RefusesBadVerdictsAndSharingModes) {
  json sharing = sample_node();
  sharing["gpu_sharing"] = "magic";
  EXPECT_NE(refusal(sharing).find("gpu_sharing \"magic\" must be best-effort or mps"),
            std::string::npos);
  json status = sample_node();
  status["doctor"] = {{{"check", "disk"}, {"status", "great"}}};
  EXPECT_NE(refusal(status).find("must be ok, warn or fail"), std::string::npos);
  json many = sample_node();
  many["doctor"] = json::array();
  for (int i = 0; i < 65; ++i) many["doctor"].push_back({{"check", "x"}, {"status", "ok"}});
  EXPECT_NE(refusal(many).find("at most 64 checks"), std::string::npos);
  json long_why = sample_node();
  long_why["doctor"] = {{{"check", "disk"}, {"status", "ok"}, {"why", std::string(2000, 'w')}}};
  EXPECT_NE(refusal(long_why).find("1024"), std::string::npos);
  json not_array = sample_node();
  not_array["doctor"] = "fine";
  refusal(not_array);
  json parent = sample_node();
  parent["gpus"][0]["mig_parent"] = 5000;
  refusal(parent);
}

}  // namespace
}  // namespace gpucloud
