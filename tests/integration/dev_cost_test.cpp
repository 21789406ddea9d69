// Costs on `gpucloud dev` with the shipped price catalog (docs/cost.md): two p4d nodes, one
// on-demand and one spot; a job pays its GPU share of its node's price from its start to its
// end, `gpucloud cost` sums the ledger, and bad input is refused with what was wrong.
#include <gtest/gtest.h>

#include <fstream>

#include "dev_cluster.h"
#include "metrics_text.h"
#include "net/crypto.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

constexpr double kP4dOnDemand = 21.957642;  // aws p4d.24xlarge us-east-1, deploy/catalog
constexpr double kP4dSpot = 2.4655;

std::vector<std::string> p4d_cluster() {
  return {"--sim-gpus",   "8xA100-40GB",
          "--sim-nodes",  "2",
          "--spot-nodes", "1",
          "--catalog",    std::string(REPO_DIR) + "/deploy/catalog/gpu-prices.csv",
          "--labels",     "cloud=aws,instance-type=p4d.24xlarge,region=us-east-1"};
}

// "$0.0015 so far": how `gpucloud show` prints a cost.
std::string fmt_cost(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.4f so far", usd);
  return buf;
}

// How long the job's only attempt ran, from its record.
double attempt_seconds(const json& job) {
  const json& a = job["attempts"][0];
  return (a["ended_at_ms"].get<double>() - a["started_at_ms"].get<double>()) / 1000;
}

TEST(DevCost, AJobPaysItsGpuShareOfItsNodesPriceAndTheReportSumsTheLedger) {
  DevCluster cluster(p4d_cluster());
  std::string on_demand =
      cluster.submit({"--gpus", "2", "--capacity-class", "on-demand", "--", "sleep", "1"});
  std::string spot =
      cluster.submit({"--gpus", "2", "--capacity-class", "spot", "--", "sleep", "1"});
  json a = cluster.wait_done(on_demand);
  json b = cluster.wait_done(spot);
  ASSERT_EQ(a["state"], "succeeded") << a.dump();
  ASSERT_EQ(b["state"], "succeeded") << b.dump();

  // 2 of 8 GPUs: 2/8 of the node's price, for the time it ran, to the cent and beyond.
  EXPECT_NEAR(a["attempts"][0]["price_per_hour"].get<double>(), 2.0 / 8 * kP4dOnDemand, 1e-9);
  EXPECT_NEAR(b["attempts"][0]["price_per_hour"].get<double>(), 2.0 / 8 * kP4dSpot, 1e-9);
  double cost_a = 2.0 / 8 * kP4dOnDemand * attempt_seconds(a) / 3600;
  double cost_b = 2.0 / 8 * kP4dSpot * attempt_seconds(b) / 3600;
  EXPECT_GT(cost_a, 0);
  EXPECT_NEAR(a["attempts"][0]["cost_usd"].get<double>(), cost_a, 1e-9);
  EXPECT_NEAR(a["cost"]["total_usd"].get<double>(), cost_a, 1e-9);

  auto shown = cluster.cli({"show", on_demand});
  EXPECT_NE(shown.out.find(fmt_cost(cost_a)), std::string::npos) << shown.out;

  auto report = cluster.cli({"cost", "--by", "tenant", "--json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  json r = json::parse(report.out);
  ASSERT_EQ(r["lines"].size(), 1u) << r.dump();
  EXPECT_EQ(r["lines"][0]["key"], "default");
  EXPECT_EQ(r["lines"][0]["attempts"], 2);
  EXPECT_NEAR(r["total"]["cost_usd"].get<double>(), cost_a + cost_b, 1e-9);
  // The spot job's hours at on-demand price: what spot saved.
  double on_demand_b = 2.0 / 8 * kP4dOnDemand * attempt_seconds(b) / 3600;
  EXPECT_NEAR(r["total"]["on_demand_usd"].get<double>(), cost_a + on_demand_b, 1e-9);
  EXPECT_NEAR(r["total"]["spot_savings_usd"].get<double>(), on_demand_b - cost_b, 1e-9);
  EXPECT_NEAR(r["total"]["gpu_hours"].get<double>(),
              2 * (attempt_seconds(a) + attempt_seconds(b)) / 3600, 1e-9);

  // The ledger's sums per tenant and GPU model, as Prometheus reads them.
  Scrape metrics = scrape_metrics(cluster.address(), cluster.token());
  std::string model = a["replicas"][0].value("gpu_model", "");
  auto counted = sample(metrics.body,
                        "gpucloud_cost_usd_total{gpu_model=\"" + model + "\",tenant=\"default\"}");
  ASSERT_TRUE(counted.has_value()) << metrics.body;
  EXPECT_NEAR(*counted, cost_a + cost_b, 1e-9);

  auto by_node = json::parse(cluster.cli({"cost", "--by", "node", "--json"}).out);
  ASSERT_EQ(by_node["lines"].size(), 2u) << by_node.dump();
  auto csv = cluster.cli({"cost", "--by", "gpu-model", "--csv"});
  EXPECT_NE(csv.out.find("gpu-model,attempts,gpu_hours,cost_usd"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find("\nA100"), std::string::npos) << csv.out;
}

TEST(DevCost, ARunningJobAccruesAndBadReportParametersAreRefused) {
  DevCluster cluster(p4d_cluster());
  std::string job =
      cluster.submit({"--gpus", "4", "--capacity-class", "on-demand", "--", "sleep", "600"});
  ASSERT_TRUE(wait_until([&] { return cluster.job(job)["state"] == "running"; }));
  EXPECT_NEAR(cluster.job(job)["cost"]["running_usd_per_hour"].get<double>(),
              4.0 / 8 * kP4dOnDemand, 1e-9);
  ASSERT_TRUE(wait_until([&] {
    json r = json::parse(cluster.cli({"cost", "--json"}).out, nullptr, false);
    return r.is_object() && r["total"]["cost_usd"].get<double>() > 0;
  })) << "a running attempt accrues";

  // A dry run says where a job would run now and at what price, and submits nothing.
  auto spot = cluster.cli(
      {"run", "--dry-run", "--gpus", "2", "--capacity-class", "spot", "--", "sleep", "1"});
  ASSERT_EQ(spot.exit_code, 0) << spot.err;
  EXPECT_NE(spot.out.find("replica 0 would run on dev-1"), std::string::npos) << spot.out;
  char expected[64];
  std::snprintf(expected, sizeof expected, "cost: $%.4f per hour", 2.0 / 8 * kP4dSpot);
  EXPECT_NE(spot.out.find(expected), std::string::npos) << spot.out;
  auto full = cluster.cli(
      {"run", "--dry-run", "--gpus", "8", "--capacity-class", "on-demand", "--", "sleep", "1"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_NE(full.out.find("would wait: no node has room for replica 0"), std::string::npos)
      << full.out;
  EXPECT_EQ(json::parse(cluster.cli({"ps", "--json"}).out).size(), 1u)
      << "a dry run submits nothing";

  auto bad_by = cluster.cli({"cost", "--by", "colour"});
  EXPECT_NE(bad_by.exit_code, 0);
  EXPECT_NE(bad_by.err.find("by: 'colour' is not one of tenant, job, node, gpu-model, day"),
            std::string::npos)
      << bad_by.err;
  ApiAnswer since =
      api_call(cluster.address(), "GET", "/v1/cost?since=yesterday", "", cluster.token());
  EXPECT_EQ(since.status, 400);
  EXPECT_NE(since.message().find("since: 'yesterday' is not a date"), std::string::npos)
      << since.message();
  ApiAnswer order = api_call(cluster.address(), "GET", "/v1/cost?since=2026-12-02&until=2026-12-01",
                             "", cluster.token());
  EXPECT_EQ(order.status, 400);
  EXPECT_NE(order.message().find("is not after since"), std::string::npos) << order.message();
  ApiAnswer unknown =
      api_call(cluster.address(), "GET", "/v1/cost?colour=red", "", cluster.token());
  EXPECT_EQ(unknown.status, 400);
  cluster.cli({"cancel", job});
}

TEST(DevCost, OwnedHardwareIsChargedPerUseAndMembersReadOnlyTheirTenantsCosts) {
  const std::string alice = "alice-token-0123456789", bob = "bob-token-0123456789";
  TempDir dir;
  std::string config = dir.path() + "/gpucloud.yaml";
  std::ofstream(config) << "tenants:\n  - {name: vision}\n  - {name: nlp}\n"
                           "cost:\n  owned:\n    default: {annual_usd: 500000, fleet_gpus: 256, "
                           "utilisation: 0.7}\n"
                           "tokens:\n  - {name: alice, role: member, tenants: [vision], sha256: "
                        << net::sha256_hex(alice)
                        << "}\n  - {name: bob, role: member, tenants: [nlp], sha256: "
                        << net::sha256_hex(bob) << "}\n";
  DevCluster cluster({"--sim-gpus", "8xA100-80GB", "--config", config});
  auto as = [&](const std::string& token, std::vector<std::string> args) {
    args.insert(args.begin(), GPUCLOUD_BINARY);
    return run_command(args, {{"GPUCLOUD_ADDR", cluster.address()}, {"GPUCLOUD_TOKEN", token}},
                       cluster.work_dir());
  };
  auto submit = [&](const std::string& token) {
    auto r = as(token, {"run", "--gpus", "1", "--", "sleep", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  };
  json vision = cluster.wait_done(submit(alice));
  cluster.wait_done(submit(bob));
  // $500,000 a year for 256 GPUs used 70 % of the time: per GPU-hour, one GPU of the node.
  double per_gpu_hour = 500'000.0 / (256 * 8760 * 0.7);
  EXPECT_NEAR(vision["attempts"][0]["price_per_hour"].get<double>(), per_gpu_hour, 1e-9);
  double vision_cost = per_gpu_hour * attempt_seconds(vision) / 3600;

  auto mine = as(alice, {"cost", "--json"});
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  json r = json::parse(mine.out);
  ASSERT_EQ(r["lines"].size(), 1u) << r.dump();
  EXPECT_EQ(r["lines"][0]["key"], "vision");
  EXPECT_NEAR(r["total"]["cost_usd"].get<double>(), vision_cost, 1e-9);
  EXPECT_EQ(json::parse(cluster.cli({"cost", "--json"}).out)["lines"].size(), 2u)
      << "the admin sees every tenant";

  auto theirs = as(alice, {"cost", "--tenant", "nlp"});
  EXPECT_NE(theirs.exit_code, 0);
  EXPECT_NE(theirs.err.find("tenant 'nlp': you may read the costs of vision only"),
            std::string::npos)
      << theirs.err;
  ApiAnswer api = api_call(cluster.address(), "GET", "/v1/cost?tenant=nlp", "", alice);
  EXPECT_EQ(api.status, 403);
}

TEST(DevCost, IdleReclaimReportsTheGpuHoursReleasedUntilMaxRuntime) {
  // $8 an hour for 8 GPUs: $1 per GPU-hour.
  DevCluster cluster({"--sim-gpus", "8xA100-80GB", "--price-per-hour", "8"});
  std::string idle = cluster.submit(
      {"--gpus", "1", "--idle-timeout", "2s", "--max-runtime", "1h", "--", "sleep", "600"});
  std::string no_limit =
      cluster.submit({"--gpus", "1", "--idle-timeout", "2s", "--", "sleep", "600"});
  json done = cluster.wait_done(idle, std::chrono::seconds(60));
  ASSERT_EQ(done["state"], "idle-reclaimed") << done.dump();
  ASSERT_EQ(cluster.wait_done(no_limit, std::chrono::seconds(60))["state"], "idle-reclaimed");
  const json& a = done["attempts"][0];
  double released_h =
      (a["started_at_ms"].get<double>() + 3'600'000 - a["ended_at_ms"].get<double>()) / 3.6e6;
  json r = json::parse(cluster.cli({"cost", "--by", "job", "--json"}).out);
  ASSERT_EQ(r["lines"].size(), 2u) << r.dump();
  for (const auto& line : r["lines"]) {
    bool limited = line["key"] == done["id"];
    // Only the job with max_runtime claims released hours: without one, how long it would
    // have kept its GPUs is unknown.
    EXPECT_NEAR(line["idle_released_gpu_hours"].get<double>(), limited ? released_h : 0, 1e-9)
        << line.dump();
    EXPECT_NEAR(line["idle_released_usd"].get<double>(), limited ? released_h : 0, 1e-9)
        << line.dump();
  }
}

TEST(DevCost, ABadCatalogStopsTheServerWithTheLine) {
  TempDir dir;
  std::string catalog = dir.path() + "/prices.csv";
  std::ofstream(catalog) << "cloud,instance_type,gpu_model,gpus,region,on_demand_usd_per_hour,"
                            "spot_usd_per_hour\naws,p4d,A100,8,us-east-1,-21.9,\n";
  auto r =
      run_command({GPUCLOUD_BINARY, "dev", "--listen", "127.0.0.1:0", "--data-dir",
                   dir.path() + "/.gpucloud", "--sim-gpus", "1xA100-80GB", "--catalog", catalog},
                  {}, dir.path(), 30);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(catalog + ":2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("on_demand_usd_per_hour: -21.9 is negative"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpucloud::testing
