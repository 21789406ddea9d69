// A replay honours tenants' quota windows: the quota in force changes at the window's start
// and end in trace time (read from ReplayOptions::epoch_ms), and use above the new quota is
// reclaimed then, lowest priority first.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "model/yaml_json.h"
#include "replay_test_helpers.h"
#include "sim/replay.h"

namespace gpucloud::sim {
namespace {

using namespace std::chrono;

using test_helpers::job;
using test_helpers::trace;

TEST(ReplayQuotaWindows, TheQuotaChangesAtTheWindowTimesAndTheExcessIsReclaimed) {
  SimCluster cluster;
  cluster.nodes.push_back(make_node("n1", 4, "A100", 81920, 32000, 262144));
  auto doc = yaml_to_json(
      "[{days: daily, from: \"08:00\", to: \"20:00\", zone: UTC, quota: {A100: 4}}]", "t");
  ASSERT_TRUE(doc);
  auto windows = quota_windows_from_json(*doc, "tenants[0] (inference).quota_windows");
  ASSERT_TRUE(windows) << windows.error().message;
  ReplayOptions options;
  ReplayTenant inference;
  inference.spec.name = "inference";
  inference.spec.has_quota = true;
  inference.spec.quota = {{"A100", 2}};
  inference.windows = *windows;
  options.tenants = {inference};
  // Trace time 0 is Monday 2026-03-02 07:00 UTC: the window starts 1 h in and ends 13 h in.
  options.epoch_ms = (sys_days{2026y / 3 / 2}.time_since_epoch().count() * 86400 + 7 * 3600) * 1000;
  // Four 1-GPU jobs at 07:00 that run 14 h; c and d have the lowest priorities.
  auto r = run_replay(cluster,
                      trace("a,inference,0,50400,,1,,,100,\n"
                            "b,inference,0,50400,,1,,,50,\n"
                            "c,inference,0,50400,,1,,,0,\n"
                            "d,inference,0,50400,,1,,,10,\n"),
                      options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_GE(r->quota_changes.size(), 3u);
  EXPECT_EQ(r->quota_changes[0].t_ms, 0);
  EXPECT_EQ(r->quota_changes[0].quota.at("A100"), 2);
  EXPECT_EQ(r->quota_changes[1].t_ms, 3'600'000);
  EXPECT_EQ(r->quota_changes[1].quota.at("A100"), 4);
  EXPECT_EQ(r->quota_changes[2].t_ms, 13 * 3'600'000);
  EXPECT_EQ(r->quota_changes[2].quota.at("A100"), 2);
  // a and b start at once; c and d when the window opens, and are reclaimed when it closes.
  EXPECT_EQ(job(*r, "a").first_start_ms, 0);
  EXPECT_EQ(job(*r, "b").first_start_ms, 0);
  EXPECT_EQ(job(*r, "c").first_start_ms, 3'600'000);
  EXPECT_EQ(job(*r, "d").first_start_ms, 3'600'000);
  EXPECT_EQ(job(*r, "a").attempts, 1);
  EXPECT_EQ(job(*r, "b").attempts, 1);
  EXPECT_EQ(job(*r, "c").attempts, 2);
  EXPECT_EQ(job(*r, "d").attempts, 2);
  EXPECT_EQ(r->preemptions, 2);
}

}  // namespace
}  // namespace gpucloud::sim
