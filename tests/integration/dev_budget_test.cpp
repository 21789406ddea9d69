// Tenant budgets (docs/cost.md, "Budgets") on a priced dev node: $800 an hour for 8 GPUs, so a
// one-GPU job spends about 2.8 cents a second. A tenant over its hard cap has its new jobs wait
// with a reason that gives the spend, the budget and the reset date; the alert fires once;
// raising the budget releases them; with stop_running its running jobs are interrupted (cause
// budget) and wait too. Other tenants are not touched.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

std::string config(const std::string& vision_budget) {
  return "tenants:\n  - {name: vision, budget: " + vision_budget + "}\n  - {name: nlp}\n";
}

TEST(DevBudget, ATenantOverItsHardCapWaitsWithTheReasonUntilTheBudgetGrows) {
  TempDir dir;
  std::string file = dir.path() + "/gpucloud.yaml";
  std::ofstream(file) << config("{monthly_usd: 0.05, alert_at: 0.5}");
  DevCluster cluster({"--sim-gpus", "8xA100-80GB", "--price-per-hour", "800", "--config", file});
  std::string first = cluster.submit({"--tenant", "vision", "--gpus", "1", "--", "sleep", "3"});
  EXPECT_EQ(cluster.wait_done(first)["state"], "succeeded");

  std::string second = cluster.submit({"--tenant", "vision", "--gpus", "1", "--", "true"});
  ASSERT_TRUE(wait_until(
      [&] {
        return cluster.job(second).value("pending_reason", "").find("budget exhausted: $0.") == 0;
      },
      std::chrono::seconds(15)))
      << cluster.job(second).dump();
  std::string reason = cluster.job(second)["pending_reason"];
  EXPECT_NE(reason.find(" of $0.05 this month, resets 20"), std::string::npos) << reason;
  EXPECT_EQ(reason.substr(reason.size() - 3), "-01") << reason;
  // Another tenant runs as before.
  std::string other = cluster.submit({"--tenant", "nlp", "--gpus", "1", "--", "true"});
  EXPECT_EQ(cluster.wait_done(other)["state"], "succeeded");
  EXPECT_EQ(cluster.job(second)["state"], "pending");
  // The alert fired once this month.
  auto alerts = cluster.cli({"audit", "--action", "budget.alert", "--json"});
  ASSERT_EQ(alerts.exit_code, 0) << alerts.err;
  ASSERT_EQ(json::parse(alerts.out).size(), 1u) << alerts.out;
  EXPECT_EQ(json::parse(alerts.out)[0]["tenant"], "vision");

  // A larger budget releases the job.
  std::ofstream(file) << config("{monthly_usd: 1000}");
  ASSERT_EQ(::kill(cluster.pid(), SIGHUP), 0);
  EXPECT_EQ(cluster.wait_done(second, std::chrono::seconds(20))["state"], "succeeded");
}

TEST(DevBudget, AHeldTenantRunsAgainWhenTheMonthTurns) {
  // The cluster's wall clock starts 25 s before the new year (libfaketime); a job that spent
  // December's budget leaves the tenant's next job waiting until January starts.
  TempDir dir;
  std::string file = dir.path() + "/gpucloud.yaml";
  std::ofstream(file) << config("{monthly_usd: 0.05}");
  DevCluster cluster({"--sim-gpus", "8xA100-80GB", "--price-per-hour", "800", "--config", file},
                     fake_wall_clock_env("2026-12-31 23:59:35"));
  std::string first = cluster.submit({"--tenant", "vision", "--gpus", "1", "--", "sleep", "3"});
  EXPECT_EQ(cluster.wait_done(first)["state"], "succeeded");
  std::string second = cluster.submit({"--tenant", "vision", "--gpus", "1", "--", "true"});
  ASSERT_TRUE(wait_until(
      [&] { return cluster.job(second).value("pending_reason", "").find("budget exhausted") == 0; },
      std::chrono::seconds(15)))
      << cluster.job(second).dump();
  std::string reason = cluster.job(second)["pending_reason"];
  EXPECT_NE(reason.find(" of $0.05 this month, resets 2027-01-01"), std::string::npos) << reason;

  json done = cluster.wait_done(second, std::chrono::seconds(40));
  EXPECT_EQ(done["state"], "succeeded") << done.dump(2);
  // It started in the new month, and December's spend stays December's.
  EXPECT_EQ(done.value("started_at", "").substr(0, 10), "2027-01-01") << done.dump(2);
  auto december = cluster.cli(
      {"cost", "--by", "tenant", "--since", "2026-12-01", "--until", "2027-01-01", "--json"});
  ASSERT_EQ(december.exit_code, 0) << december.err;
  EXPECT_NE(december.out.find("vision"), std::string::npos) << december.out;
}

TEST(DevBudget, WithStopRunningARunningJobIsInterruptedAndWaits) {
  TempDir dir;
  std::string file = dir.path() + "/gpucloud.yaml";
  std::ofstream(file) << config("{monthly_usd: 0.05, stop_running: true}");
  DevCluster cluster({"--sim-gpus", "8xA100-80GB", "--price-per-hour", "800", "--config", file});
  std::string job = cluster.submit({"--tenant", "vision", "--gpus", "1", "--", "sleep", "60"});
  ASSERT_TRUE(wait_until(
      [&] {
        json j = cluster.job(job);
        return j["state"] == "pending" && j.value("attempts", json::array()).size() == 1;
      },
      std::chrono::seconds(20)))
      << cluster.job(job).dump(2);
  json j = cluster.job(job);
  EXPECT_EQ(j["attempts"][0]["cause"], "budget") << j.dump(2);
  ASSERT_TRUE(wait_until(
      [&] { return cluster.job(job).value("pending_reason", "").find("budget exhausted") == 0; },
      std::chrono::seconds(10)))
      << cluster.job(job).dump();
}

TEST(DevBudget, AJobWhoseWorstCaseIsMoreThanWhatIsLeftWaitsAndAShorterOneRuns) {
  TempDir dir;
  std::string file = dir.path() + "/gpucloud.yaml";
  std::ofstream(file) << config("{monthly_usd: 10}");
  // $100 per GPU-hour: 10 minutes on one GPU may cost $16.67, more than the $10 budget.
  DevCluster cluster({"--sim-gpus", "8xA100-80GB", "--price-per-hour", "800", "--config", file});
  std::string long_job =
      cluster.submit({"--tenant", "vision", "--gpus", "1", "--max-runtime", "10m", "--", "true"});
  std::string reason = cluster.job(long_job).value("pending_reason", "");
  EXPECT_EQ(reason.rfind("budget: its worst case, $16.67 (10m at most), is more than the $", 0), 0u)
      << reason;
  EXPECT_NE(reason.find(" of the tenant's $10.00 this month"), std::string::npos) << reason;
  // A dry run says the same before anything is submitted.
  auto dry = cluster.cli({"run", "--dry-run", "--tenant", "vision", "--gpus", "1", "--max-runtime",
                          "10m", "--", "true"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("over its max_runtime: $16.67 here"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("its worst case is $16.67"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("would wait: budget: its worst case, $16.67"), std::string::npos)
      << dry.out;
  // 3 minutes may cost $5: it runs, and the long job still waits.
  std::string short_job =
      cluster.submit({"--tenant", "vision", "--gpus", "1", "--max-runtime", "3m", "--", "true"});
  EXPECT_EQ(cluster.wait_done(short_job)["state"], "succeeded");
  EXPECT_EQ(cluster.job(long_job)["state"], "pending");
  // Two jobs that fit alone but not together: the second in submission order waits.
  std::string a = cluster.submit(
      {"--tenant", "vision", "--gpus", "1", "--max-runtime", "4m", "--", "sleep", "30"});
  std::string b = cluster.submit(
      {"--tenant", "vision", "--gpus", "1", "--max-runtime", "4m", "--", "sleep", "30"});
  ASSERT_TRUE(
      wait_until([&] { return cluster.job(a)["state"] == "running"; }, std::chrono::seconds(15)))
      << cluster.job(a).dump();
  EXPECT_EQ(cluster.job(b)["state"], "pending");
  EXPECT_EQ(cluster.job(b).value("pending_reason", "").rfind("budget: its worst case, $6.67", 0),
            0u)
      << cluster.job(b).dump();
  // A larger budget releases them.
  std::ofstream(file) << config("{monthly_usd: 1000}");
  ASSERT_EQ(::kill(cluster.pid(), SIGHUP), 0);
  EXPECT_EQ(cluster.wait_done(long_job, std::chrono::seconds(20))["state"], "succeeded");
  ASSERT_TRUE(
      wait_until([&] { return cluster.job(b)["state"] == "running"; }, std::chrono::seconds(15)))
      << cluster.job(b).dump();
}

TEST(DevBudget, AJobIsStoppedBeforeItsMaxCostAndEndsFailed) {
  // $100 per GPU-hour, about 2.8 cents a second; a 1 s grace period leaves a margin of 5 s.
  DevCluster cluster({"--sim-gpus", "8xA100-80GB", "--price-per-hour", "800"});
  std::string job =
      cluster.submit({"--gpus", "1", "--max-cost", "0.25", "--grace", "1s", "--", "sleep", "120"});
  json j = cluster.wait_done(job, std::chrono::seconds(30));
  EXPECT_EQ(j["state"], "failed") << j.dump(2);
  EXPECT_EQ(j.value("message", "").rfind("cost limit: $0.", 0), 0u) << j.dump(2);
  EXPECT_NE(j.value("message", "").find("of its max_cost $0.25"), std::string::npos);
  ASSERT_EQ(j["attempts"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["attempts"][0]["cause"], "budget");
  double cost = j["attempts"][0]["cost_usd"];
  EXPECT_GT(cost, 0.05);
  EXPECT_LE(cost, 0.25);

  // Bad values are refused before anything is sent.
  for (const char* bad : {"-1", "0", "lots", "2e9"}) {
    auto r = cluster.cli({"run", "--max-cost", bad, "--", "true"});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--max-cost '"), std::string::npos) << r.err;
  }
}

TEST(DevBudget, ABadBudgetInTheConfigFileIsRefusedWithItsPlace) {
  TempDir dir;
  for (const auto& [budget, expected] : std::vector<std::pair<std::string, std::string>>{
           {"{monthly_usd: -5}", "tenants[0].budget.monthly_usd"},
           {"{alert_at: 0.8}", "tenants[0].budget.monthly_usd"},
           {"{monthly_usd: 10, alert_at: 2}", "tenants[0].budget.alert_at"},
           {"{monthly_usd: 10, hard_cap: false, stop_running: true}", "stop_running: needs"},
           {"{monthly_usd: 10, cap: true}", "tenants[0].budget.cap: unknown field"}}) {
    std::string file = dir.path() + "/bad.yaml";
    std::ofstream(file) << config(budget);
    auto r = run_command({GPUCLOUD_BINARY, "server", "--config", file, "--data-dir",
                          dir.path() + "/d", "--listen", "127.0.0.1:0"},
                         {}, "", 10);
    EXPECT_NE(r.exit_code, 0) << budget;
    EXPECT_NE((r.out + r.err).find(expected), std::string::npos) << budget << "\n" << r.err;
  }
}

}  // namespace
}  // namespace gpucloud::testing
