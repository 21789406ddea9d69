// Queue policies in the server: under sjf the job that says it is shortest starts first; under
// las a job that has had its GPU-seconds gives way to a fresh one through the normal
// interruption path, and runs again once the GPU is free.
#include <gtest/gtest.h>

#include <thread>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

TEST(DevQueuePolicy, SjfStartsTheJobThatExpectsToBeShortestFirst) {
  DevCluster cluster({"--sim-gpus", "1xA100-80GB", "--queue-policy", "sjf"});
  std::string holder = cluster.submit({"--gpus", "1", "--", "sleep", "60"});
  ASSERT_TRUE(wait_until([&] { return cluster.job(holder)["state"] == "running"; }));
  std::string hour =
      cluster.submit({"--gpus", "1", "--expected-runtime", "1h", "--", "sleep", "60"});
  std::string minutes =
      cluster.submit({"--gpus", "1", "--expected-runtime", "10m", "--", "sleep", "60"});
  EXPECT_EQ(cluster.job(minutes)["spec"]["expected_runtime"], "10m");
  cluster.cli({"cancel", holder});
  ASSERT_TRUE(wait_until([&] { return cluster.job(minutes)["state"] == "running"; }))
      << cluster.job(minutes).dump();
  EXPECT_EQ(cluster.job(hour)["state"], "pending") << "submitted first, but expects to run longer";
  for (const auto& id : {hour, minutes}) cluster.cli({"cancel", id});
}

TEST(DevQueuePolicy, LasPreemptsAJobThatHasHadItsShareForAFreshOne) {
  // One GPU; the first level ends after 2 GPU-seconds.
  DevCluster cluster(
      {"--sim-gpus", "1xA100-80GB", "--queue-policy", "las", "--las-thresholds", "2,1000000"});
  std::string first = cluster.submit({"--gpus", "1", "--", "sleep", "120"});
  ASSERT_TRUE(wait_until([&] { return cluster.job(first)["state"] == "running"; }));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::string fresh = cluster.submit({"--gpus", "1", "--", "sleep", "120"});
  ASSERT_TRUE(wait_until([&] { return cluster.job(fresh)["state"] == "running"; },
                         std::chrono::seconds(60)))
      << cluster.job(fresh).dump() << cluster.job(first).dump();
  json f = cluster.job(first);
  EXPECT_EQ(f["state"], "pending");
  EXPECT_EQ(f["attempt"], 2) << "re-queued as a new attempt";
  EXPECT_NE(f["message"].get<std::string>().find("service level 1 of 3"), std::string::npos)
      << f.dump();
  EXPECT_GE(f["attained_gpu_ms"].get<int64_t>(), 2000) << "it keeps the GPU time it had";
  cluster.cli({"cancel", fresh});
  ASSERT_TRUE(wait_until([&] { return cluster.job(first)["state"] == "running"; },
                         std::chrono::seconds(60)))
      << "it runs again once the GPU is free: " << cluster.job(first).dump();
  cluster.cli({"cancel", first});
}

TEST(DevQueuePolicy, BadQueueSettingsStopTheServerWithTheFlag) {
  auto out = run_command({GPUCLOUD_BINARY, "dev", "--queue-policy", "las", "--las-thresholds",
                          "60,30", "--data-dir", "/tmp/gpucloud-never-made"},
                         {}, "", 30);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.err.find("--las-thresholds: las thresholds: 30 follows 60"), std::string::npos)
      << out.err;
}

}  // namespace
}  // namespace gpucloud::testing
