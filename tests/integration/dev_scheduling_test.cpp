// The scheduler in the server: quotas keep jobs pending with a reason in ps and show, priority
// classes come from --config, and an urgent job preempts low-priority work, which is re-queued.
#include <gtest/gtest.h>

#include <fstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

class DevScheduling : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    std::string config = dir_->path() + "/gpucloud.yaml";
    std::ofstream(config) << "tenants:\n"
                             "  - {name: vision, quota: {A100: 1}}\n"
                             "priority_classes: {urgent: 5000}\n";
    cluster_ = new DevCluster({"--sim-gpus", "4xA100-80GB", "--config", config});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
  }
  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }
  void cancel_and_wait(const std::string& id) {
    cluster_->cli({"cancel", id});
    cluster_->wait_done(id);
  }
  static TempDir* dir_;
  static DevCluster* cluster_;
};
TempDir* DevScheduling::dir_ = nullptr;
DevCluster* DevScheduling::cluster_ = nullptr;

TEST_F(DevScheduling, AJobOverItsTenantsQuotaWaitsAndSaysWhy) {
  std::string first = cluster_->submit({"--tenant", "vision", "--gpus", "1", "--", "sleep", "60"});
  ASSERT_TRUE(wait_until([&] { return cluster_->job(first)["state"] == "running"; }));
  std::string second = cluster_->submit({"--tenant", "vision", "--gpus", "1", "--", "sleep", "60"});
  const std::string why = "tenant vision: A100 quota 1 in use of 1, no cohort to borrow from";
  ASSERT_TRUE(wait_until([&] { return cluster_->job(second)["pending_reason"] == why; }))
      << cluster_->job(second).dump();
  EXPECT_NE(cluster_->cli({"show", second}).out.find(why), std::string::npos);
  EXPECT_NE(cluster_->cli({"ps"}).out.find("tenant vision: A100 quota"), std::string::npos);
  cancel_and_wait(first);
  ASSERT_TRUE(wait_until([&] { return cluster_->job(second)["state"] == "running"; }))
      << "the quota is free again";
  cancel_and_wait(second);
}

TEST_F(DevScheduling, PriorityClassesComeFromTheConfig) {
  auto bad = cluster_->cli({"run", "--priority", "bogus", "--", "true"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("priority: 'bogus' is not a priority class of this server; known: high "
                         "(1000), low (0), normal (100), urgent (5000)"),
            std::string::npos)
      << bad.err;
  std::string ok = cluster_->submit({"--priority", "urgent", "--", "true"});
  EXPECT_EQ(cluster_->wait_done(ok)["state"], "succeeded");
}

TEST_F(DevScheduling, AnUrgentJobPreemptsLowPriorityWorkWhichIsRequeued) {
  std::string low = cluster_->submit({"--priority", "low", "--gpus", "4", "--", "sleep", "60"});
  ASSERT_TRUE(wait_until([&] { return cluster_->job(low)["state"] == "running"; }));
  std::string urgent =
      cluster_->submit({"--priority", "urgent", "--gpus", "4", "--", "sleep", "60"});
  ASSERT_TRUE(wait_until([&] { return cluster_->job(urgent)["state"] == "running"; }))
      << cluster_->job(urgent).dump();
  json l = cluster_->job(low);
  EXPECT_EQ(l["state"], "pending");
  EXPECT_EQ(l["attempt"], 2) << "re-queued, as a new attempt";
  EXPECT_NE(l["message"].get<std::string>().find("was interrupted: preempted for job"),
            std::string::npos)
      << l.dump();
  cancel_and_wait(urgent);
  ASSERT_TRUE(wait_until([&] { return cluster_->job(low)["state"] == "running"; }))
      << "the preempted job runs again once the GPUs are free";
  cancel_and_wait(low);
}

}  // namespace
}  // namespace gpucloud::testing
