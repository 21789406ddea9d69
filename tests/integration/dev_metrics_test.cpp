// GET /metrics on `gpucloud dev`: who may read it, and the series an operator watches change
// as jobs are submitted, run and end.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "dev_cluster.h"
#include "metrics_text.h"
#include "net/crypto.h"

namespace gpucloud::testing {
namespace {

const std::string kAlice = "alice-token-0123456789";
const std::string kScraper = "scraper-token-0123456789abcdef";

// vision has a quota of 2 A100s and may borrow 2 more from its cohort.
std::string write_config(const std::string& dir) {
  std::string path = dir + "/gpucloud.yaml";
  std::ofstream(path) << "tenants:\n"
                         "  - {name: vision, weight: 2, cohort: research, quota: {A100: 2}, "
                         "borrowing_limit: {A100: 2}}\n"
                         "  - {name: nlp, cohort: research, quota: {A100: 4}}\n"
                         "tokens:\n"
                         "  - {name: alice, role: member, tenants: [vision], sha256: " +
                             net::sha256_hex(kAlice) + "}\n";
  return path;
}

std::string write_token(const std::string& dir) {
  std::string path = dir + "/metrics.token";
  std::ofstream(path) << kScraper << "\n";
  return path;
}

class DevMetrics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    cluster_ = new DevCluster({"--sim-gpus", "8xA100-80GB", "--config", write_config(dir_->path()),
                               "--metrics-token-file", write_token(dir_->path())});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
  }
  static TempDir* dir_;
  static DevCluster* cluster_;
};
TempDir* DevMetrics::dir_ = nullptr;
DevCluster* DevMetrics::cluster_ = nullptr;

TEST_F(DevMetrics, OnlyTheAdminOrTheMetricsTokenMayRead) {
  const DevCluster& c = *cluster_;
  EXPECT_EQ(scrape_metrics(c.address(), "").status, 401);
  EXPECT_EQ(scrape_metrics(c.address(), "wrong-token-0123456789").status, 401);
  Scrape member = scrape_metrics(c.address(), kAlice);
  EXPECT_EQ(member.status, 403);
  EXPECT_NE(member.body.find("--metrics-token-file"), std::string::npos) << member.body;
  EXPECT_EQ(scrape_metrics(c.address(), c.token()).status, 200);
  Scrape scraper = scrape_metrics(c.address(), kScraper);
  EXPECT_EQ(scraper.status, 200);
  EXPECT_EQ(scraper.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(sample(scraper.body, "gpucloud_build_info{version=\"0.1.0\"}"), 1);
  // The metrics token is for /metrics only.
  EXPECT_EQ(api_call(c.address(), "GET", "/v1/jobs", "", kScraper).status, 401);
}

TEST_F(DevMetrics, OpenMetricsWhenTheScraperAsksForIt) {
  Scrape om = scrape_metrics(cluster_->address(), kScraper,
                             "application/openmetrics-text;version=1.0.0,text/plain;q=0.5");
  ASSERT_EQ(om.status, 200);
  EXPECT_EQ(om.content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
  ASSERT_GE(om.body.size(), 6u);
  EXPECT_EQ(om.body.substr(om.body.size() - 6), "# EOF\n");
  EXPECT_NE(om.body.find("# TYPE gpucloud_api_requests counter\n"), std::string::npos);
}

TEST_F(DevMetrics, JobsGpusAndCountersFollowAJobsLife) {
  const DevCluster& c = *cluster_;
  const std::string running = "gpucloud_jobs{state=\"running\",tenant=\"vision\"}";
  const std::string whole =
      "gpucloud_gpus_allocated{mode=\"whole\",model=\"A100\",tenant=\"vision\"}";
  const std::string free = "gpucloud_gpus_free{mode=\"whole\",model=\"A100\"}";
  std::string before = scrape_metrics(c.address(), kScraper).body;
  EXPECT_EQ(sample(before, running), 0);
  EXPECT_EQ(sample(before, free), 8);
  EXPECT_EQ(sample(before, "gpucloud_gpus_capacity{model=\"A100\"}"), 8);
  EXPECT_EQ(sample(before, "gpucloud_tenant_quota_gpus{model=\"A100\",tenant=\"vision\"}"), 2);
  EXPECT_EQ(
      sample(before, "gpucloud_tenant_borrowing_limit_gpus{model=\"A100\",tenant=\"vision\"}"), 2);
  EXPECT_EQ(sample(before, "gpucloud_tenant_weight{tenant=\"vision\"}"), 2);
  EXPECT_EQ(sample(before, "gpucloud_nodes{state=\"ready\"}"), 1);

  std::string id = c.submit({"--tenant", "vision", "--gpus", "3", "--", "sleep", "60"});
  ASSERT_TRUE(wait_until([&] { return c.job(id)["state"] == "running"; }));
  std::string during;
  ASSERT_TRUE(wait_until([&] {
    during = scrape_metrics(c.address(), kScraper).body;
    return sample(during, running) == 1;
  })) << during;
  EXPECT_EQ(sample(during, whole), 3);
  EXPECT_EQ(sample(during, "gpucloud_gpu_milli_allocated{model=\"A100\",tenant=\"vision\"}"), 3000);
  EXPECT_EQ(sample(during, free), 5);
  // Three GPUs against a quota of two: one is borrowed.
  EXPECT_EQ(sample(during, "gpucloud_tenant_borrowed_gpus{model=\"A100\",tenant=\"vision\"}"), 1);
  EXPECT_EQ(sample(during, "gpucloud_jobs_submitted_total{tenant=\"vision\"}"), 1);
  EXPECT_EQ(sample(during, "gpucloud_placements_total{tenant=\"vision\"}"), 1);
  EXPECT_EQ(sample(during, "gpucloud_job_queue_wait_seconds_count"), 1);
  EXPECT_EQ(sample(during, "gpucloud_job_submit_to_running_seconds_count"), 1);
  EXPECT_GE(sample(during, "gpucloud_scheduler_decisions_total{decision=\"placed\"}").value_or(0),
            1);
  EXPECT_GE(sample(during, "gpucloud_scheduler_pass_duration_seconds_count").value_or(0), 1);
  EXPECT_GE(sample(during, "gpucloud_store_commit_duration_seconds_count").value_or(0), 1);
  EXPECT_GE(sample(during, "gpucloud_agent_polls_total").value_or(0), 1);
  EXPECT_GE(
      sample(during, "gpucloud_api_requests_total{code=\"201\",method=\"POST\",route=\"/v1/jobs\"}")
          .value_or(0),
      1);
  // `gpucloud show ID` was counted under its route template, never under its id.
  EXPECT_GE(
      sample(during,
             "gpucloud_api_requests_total{code=\"200\",method=\"GET\",route=\"/v1/jobs/{id}\"}")
          .value_or(0),
      1);
  EXPECT_EQ(during.find(id), std::string::npos) << "a job id leaked into /metrics";
  EXPECT_EQ(during.find("sleep"), std::string::npos) << "a job's command leaked into /metrics";

  ASSERT_EQ(c.cli({"cancel", id}).exit_code, 0);
  EXPECT_EQ(c.wait_done(id)["state"], "cancelled");
  std::string after;
  ASSERT_TRUE(wait_until([&] {
    after = scrape_metrics(c.address(), kScraper).body;
    return sample(after, running) == 0;
  })) << after;
  EXPECT_EQ(sample(after, "gpucloud_jobs_finished_total{state=\"cancelled\",tenant=\"vision\"}"),
            1);
  EXPECT_EQ(sample(after, "gpucloud_interruptions_total{cause=\"cancel\"}"), 1);
  EXPECT_EQ(sample(after, free), 8);
  EXPECT_EQ(sample(after, whole), std::nullopt);  // nothing held: no series
}

TEST_F(DevMetrics, SharedGpusAddUpExactly) {
  const DevCluster& c = *cluster_;
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i)
    ids.push_back(c.submit({"--tenant", "nlp", "--gpu-milli", "100", "--", "sleep", "60"}));
  const std::string shared =
      "gpucloud_gpus_allocated{mode=\"shared\",model=\"A100\",tenant=\"nlp\"}";
  std::string text;
  ASSERT_TRUE(wait_until([&] {
    text = scrape_metrics(c.address(), kScraper).body;
    return sample(text, "gpucloud_jobs{state=\"running\",tenant=\"nlp\"}") == 10;
  })) << text;
  // Ten 100-milli shares are one GPU, not 0.9999999999999999.
  EXPECT_NE(text.find(shared + " 1\n"), std::string::npos) << text;
  EXPECT_EQ(sample(text, "gpucloud_gpu_milli_allocated{model=\"A100\",tenant=\"nlp\"}"), 1000);
  for (const auto& id : ids) EXPECT_EQ(c.cli({"cancel", id}).exit_code, 0);
  for (const auto& id : ids) EXPECT_EQ(c.wait_done(id)["state"], "cancelled");
}

TEST_F(DevMetrics, TheOldestPendingJobsWaitShowsPerTenant) {
  const std::string oldest = "gpucloud_jobs_oldest_pending_age_seconds{tenant=\"nlp\"}";
  std::string before = scrape_metrics(cluster_->address(), kScraper).body;
  EXPECT_EQ(sample(before, oldest), 0);  // nothing waits: a zero series, not none
  // vision may hold at most 4 GPUs (quota 2, borrowing 2): a second job of 4 waits.
  std::string first = cluster_->submit({"--tenant", "vision", "--gpus", "4", "--", "sleep", "60"});
  ASSERT_TRUE(wait_until([&] { return cluster_->job(first)["state"] == "running"; }));
  std::string second = cluster_->submit({"--tenant", "vision", "--gpus", "4", "--", "sleep", "60"});
  const std::string vision = "gpucloud_jobs_oldest_pending_age_seconds{tenant=\"vision\"}";
  EXPECT_TRUE(wait_until([&] {
    return sample(scrape_metrics(cluster_->address(), kScraper).body, vision).value_or(0) >= 1;
  })) << scrape_metrics(cluster_->address(), kScraper).body;
  EXPECT_EQ(cluster_->job(second)["state"], "pending");
  EXPECT_EQ(sample(scrape_metrics(cluster_->address(), kScraper).body, oldest), 0);
  EXPECT_EQ(cluster_->cli({"cancel", second}).exit_code, 0);
  EXPECT_EQ(cluster_->cli({"cancel", first}).exit_code, 0);
  EXPECT_TRUE(wait_until(
      [&] { return sample(scrape_metrics(cluster_->address(), kScraper).body, vision) == 0; }));
}

TEST(DevMetricsToken, ABadMetricsTokenFileIsRefusedAtStartWithTheFix) {
  TempDir dir;
  struct Case {
    std::string content;
    bool missing;  // no file at all
    std::string expected;
  };
  const Case cases[] = {
      {"", true, "cannot read it"},
      {"short\n", false, "at least 16 characters"},
      {"two words-0123456789abcdef\n", false, "one word"},
      {std::string(5000, 'x'), false, "longer than 4096 bytes"},
  };
  for (const auto& c : cases) {
    std::string path = dir.path() + "/metrics.token";
    std::remove(path.c_str());
    if (!c.missing) std::ofstream(path) << c.content;
    auto r = run_command({GPUCLOUD_BINARY, "dev", "--listen", "127.0.0.1:0", "--data-dir",
                          dir.path() + "/d", "--metrics-token-file", path},
                         {}, "", 10);
    EXPECT_NE(r.exit_code, 0) << c.expected;
    std::string said = r.out + r.err;
    EXPECT_NE(said.find("--metrics-token-file " + path), std::string::npos) << said;
    EXPECT_NE(said.find(c.expected), std::string::npos) << said;
  }
}

}  // namespace
}  // namespace gpucloud::testing
