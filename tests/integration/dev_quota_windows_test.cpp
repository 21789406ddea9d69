// Quota windows on a real `gpucloud dev`: when a tenant's window ends, the server wakes at that
// time, applies the smaller quota and reclaims exactly the excess GPUs, lowest priority first;
// jobs that fit stay. The cluster's wall clock starts 25 s before the window ends.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

std::string hhmm(int64_t minute_of_day) {
  minute_of_day = ((minute_of_day % 1440) + 1440) % 1440;
  char text[8];
  std::snprintf(text, sizeof text, "%02d:%02d", static_cast<int>(minute_of_day / 60),
                static_cast<int>(minute_of_day % 60));
  return text;
}

TEST(DevQuotaWindows, AWindowEndingReclaimsTheExcessLowestPriorityFirst) {
  TempDir dir;
  // The window (quota 4) is 09:30-10:00 UTC and the cluster's clock starts at 09:59:35
  // (libfaketime); outside the window the quota is 2.
  int64_t end_min = 10 * 60;
  std::string config = dir.path() + "/gpucloud.yaml";
  std::ofstream(config) << "tenants:\n"
                           "  - name: inference\n"
                           "    quota: {A100: 2}\n"
                           "    quota_windows:\n"
                           "      - {days: daily, from: \""
                        << hhmm(end_min - 30) << "\", to: \"" << hhmm(end_min)
                        << "\", zone: UTC, quota: {A100: 4}}\n";
  DevCluster cluster({"--sim-gpus", "8xA100-80GB", "--config", config},
                     fake_wall_clock_env("2026-12-02 09:59:35"));
  // Four 1-GPU jobs fill the window's quota: low, normal, high, high.
  std::vector<std::string> ids;
  for (const char* priority : {"low", "normal", "high", "high"})
    ids.push_back(cluster.submit(
        {"--tenant", "inference", "--priority", priority, "--gpus", "1", "--", "sleep", "600"}));
  for (const auto& id : ids)
    ASSERT_TRUE(wait_until([&] { return cluster.job(id)["state"] == "running"; }))
        << cluster.job(id).dump();
  // The tenants view shows the window and the change to come.
  auto tenants = json::parse(cluster.cli({"tenants", "--json"}).out);
  json inference;
  for (const auto& t : tenants)
    if (t["name"] == "inference") inference = t;
  ASSERT_TRUE(inference.is_object()) << tenants.dump();
  EXPECT_EQ(inference["quota"]["A100"], 4);
  EXPECT_EQ(inference["quota_window"]["window"],
            "daily " + hhmm(end_min - 30) + "-" + hhmm(end_min) + " UTC");
  EXPECT_EQ(inference["next_quota_change"]["quota"]["A100"], 2);
  EXPECT_TRUE(inference["next_quota_change"]["window"].is_null());
  EXPECT_NE(cluster.cli({"tenants"}).out.find("inference: quota A100:4 (window daily"),
            std::string::npos);
  // At the window's end: the low and the normal job are reclaimed, the high ones stay.
  ASSERT_TRUE(
      wait_until([&] { return cluster.job(ids[1])["attempt"] == 2; }, std::chrono::seconds(60)))
      << cluster.job(ids[1]).dump();
  for (int i : {0, 1}) {
    json j = cluster.job(ids[i]);
    EXPECT_EQ(j["state"], "pending") << j.dump();
    EXPECT_EQ(j["attempt"], 2) << j.dump();
    EXPECT_NE(j["message"].get<std::string>().find("quota reclaim, tenant inference holds 2 A100"),
              std::string::npos)
        << j.dump();
  }
  for (int i : {2, 3}) {
    json j = cluster.job(ids[i]);
    EXPECT_EQ(j["state"], "running") << j.dump();
    EXPECT_EQ(j["attempt"], 1) << j.dump();
  }
  tenants = json::parse(cluster.cli({"tenants", "--json"}).out);
  for (const auto& t : tenants)
    if (t["name"] == "inference") {
      EXPECT_EQ(t["quota"]["A100"], 2);
      EXPECT_TRUE(t["quota_window"].is_null());
    }
  // A reload with a bad window is refused, naming it; the quota in force stays.
  std::ofstream(config) << "tenants:\n"
                           "  - name: inference\n"
                           "    quota: {A100: 2}\n"
                           "    quota_windows:\n"
                           "      - {days: daily, from: \"08:00\", to: \"08:00\", zone: UTC, "
                           "quota: {A100: 4}}\n";
  kill(cluster.pid(), SIGHUP);
  EXPECT_TRUE(wait_until([&] {
    std::ifstream log(cluster.work_dir() + "/dev.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    return text.find("config not reloaded") != std::string::npos &&
           text.find("tenants[0] (inference).quota_windows[0]: from and to are both 08:00") !=
               std::string::npos;
  }));
  tenants = json::parse(cluster.cli({"tenants", "--json"}).out);
  for (const auto& t : tenants) {
    if (t["name"] == "inference") {
      EXPECT_EQ(t["quota_windows"].size(), 1u) << t.dump();
    }
  }
  for (const auto& id : ids) cluster.cli({"cancel", id});
}

}  // namespace
}  // namespace gpucloud::testing
