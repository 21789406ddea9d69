// Spot capacity on `gpucloud dev` (docs/interruptions.md, "Spot notices"; docs/jobspec.md,
// "max_price"): a --spot-notice-command that reports a notice takes its node away and the job
// resumes on the other; simulated Poisson notices do the same on spot-labelled nodes; a job with
// max_price keeps off nodes that cost more and says so while it waits.
#include <gtest/gtest.h>

#include <fstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

bool running(const DevCluster& c, const std::string& id) {
  return c.job(id)["state"] == "running";
}

std::string node_state(const DevCluster& c, const std::string& name) {
  auto r = c.cli({"nodes", "--json"});
  for (const auto& n : json::parse(r.out, nullptr, false))
    if (n.is_object() && n.value("name", "") == name) return n.value("state", "");
  return "";
}

// A job that runs until it is told to stop.
const std::vector<std::string> kLongJob = {"--gpus", "1", "--", "sleep", "600"};

TEST(DevSpot, ANoticeFromTheSpotNoticeCommandTakesTheNodeAndTheJobResumesElsewhere) {
  TempDir notices;
  // The command prints the node's notice file when there is one, and fails (no notice) when
  // there is none: as a metadata endpoint answers 404 until the provider decides.
  DevCluster cluster(
      {"--sim-gpus", "1xA100-80GB", "--sim-nodes", "2", "--spot-notice-command",
       "sh -c 'cat \"$NOTICE_DIR/$GPUCLOUD_NODE_NAME\"'", "--spot-notice-interval", "200ms"},
      {{"NOTICE_DIR", notices.path()}});
  std::string job = cluster.submit(kLongJob);
  ASSERT_TRUE(wait_until([&] { return running(cluster, job); })) << cluster.job(job).dump();
  std::string first = cluster.job(job)["replicas"][0]["node"];
  std::string second = first == "dev-0" ? "dev-1" : "dev-0";
  // The other node's command exits 0 with output that is not a notice: a warning, no notice.
  std::ofstream(notices.path() + "/" + second) << "<html>Service Unavailable</html>";
  {
    std::ofstream(notices.path() + "/" + first + ".tmp")
        << R"js({"in_seconds": 3, "reason": "capacity rebalance (test)"})js";
  }
  std::rename((notices.path() + "/" + first + ".tmp").c_str(),
              (notices.path() + "/" + first).c_str());

  ASSERT_TRUE(wait_until([&] { return running(cluster, job) && cluster.job(job)["attempt"] == 2; },
                         std::chrono::seconds(40)))
      << cluster.job(job).dump();
  json j = cluster.job(job);
  EXPECT_EQ(j["replicas"][0]["node"], second);
  EXPECT_EQ(j["attempts"][0]["cause"], "spot") << j.dump();
  EXPECT_NE(j["attempts"][0].dump().find("capacity rebalance (test)"), std::string::npos)
      << "the provider's reason reaches the job's record: " << j["attempts"][0].dump();
  EXPECT_TRUE(
      wait_until([&] { return node_state(cluster, first) == "gone"; }, std::chrono::seconds(15)))
      << cluster.cli({"nodes"}).out;
  EXPECT_EQ(node_state(cluster, second), "ready") << "bad output is no notice";
  cluster.cli({"cancel", job});
}

TEST(DevSpot, SimulatedSpotNoticesTakeOnlySpotNodesAndTheJobResumesOnAnother) {
  // dev-1 is spot; at 720 notices an hour (one every 5 s on average) it is taken soon: with
  // seed 7 the first notice comes 7 s after the start. The job is started there first (dev-0
  // cordoned until it runs).
  DevCluster cluster({"--sim-gpus", "1xA100-80GB", "--sim-nodes", "2", "--spot-nodes", "1",
                      "--sim-spot-interrupt-rate", "720", "--sim-spot-notice", "2s", "--sim-seed",
                      "7"});
  ASSERT_EQ(cluster.cli({"node", "cordon", "dev-0"}).exit_code, 0);
  std::string job = cluster.submit(kLongJob);
  ASSERT_TRUE(wait_until([&] {
    return running(cluster, job) || node_state(cluster, "dev-1") != "ready";
  })) << cluster.job(job).dump();
  ASSERT_TRUE(running(cluster, job))
      << "it started on the spot node before its notice: " << cluster.cli({"nodes"}).out;
  EXPECT_EQ(cluster.job(job)["replicas"][0]["node"], "dev-1");
  ASSERT_EQ(cluster.cli({"node", "uncordon", "dev-0"}).exit_code, 0);

  EXPECT_TRUE(
      wait_until([&] { return node_state(cluster, "dev-1") == "gone"; }, std::chrono::seconds(60)))
      << cluster.cli({"nodes"}).out;
  ASSERT_TRUE(wait_until(
      [&] { return running(cluster, job) && cluster.job(job)["replicas"][0]["node"] == "dev-0"; },
      std::chrono::seconds(40)))
      << cluster.job(job).dump();
  json j = cluster.job(job);
  EXPECT_EQ(j["attempts"][0]["cause"], "spot") << j.dump();
  EXPECT_NE(j["attempts"][0].dump().find("simulated spot interruption"), std::string::npos)
      << j["attempts"][0].dump();
  EXPECT_EQ(node_state(cluster, "dev-0"), "ready") << "on-demand nodes get no simulated notices";
  cluster.cli({"cancel", job});
}

TEST(DevSpot, BadSpotAndPriceFlagsAreUsageErrorsNamingTheFlag) {
  TempDir dir;
  struct Case {
    std::vector<std::string> flags;
    const char* names;
  };
  for (const Case& c : {Case{{"--sim-spot-interrupt-rate", "-1"}, "--sim-spot-interrupt-rate"},
                        Case{{"--sim-spot-interrupt-rate", "nan"}, "--sim-spot-interrupt-rate"},
                        Case{{"--sim-spot-interrupt-rate", "1e9"}, "--sim-spot-interrupt-rate"},
                        Case{{"--sim-spot-notice", "5h"}, "--sim-spot-notice"},
                        Case{{"--spot-notice-command", "sh -c 'oops"}, "--spot-notice-command"},
                        Case{{"--spot-notice-interval", "0s"}, "--spot-notice-interval"},
                        Case{{"--price-per-hour", "-3"}, "--price-per-hour"},
                        Case{{"--price-per-hour", "inf"}, "--price-per-hour"},
                        Case{{"--price-per-hour", "1,2,3"}, "--price-per-hour"},
                        Case{{"--spot-nodes", "5"}, "--spot-nodes"}}) {
    std::vector<std::string> argv = {GPUCLOUD_BINARY, "dev",        "--listen",
                                     "127.0.0.1:0",   "--data-dir", dir.path() + "/d",
                                     "--sim-nodes",   "2"};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    auto r = run_command(argv, {}, "", 20);
    EXPECT_EQ(r.exit_code, 2) << c.flags[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << r.err;
  }
  auto agent =
      run_command({GPUCLOUD_BINARY, "agent", "--server", "http://127.0.0.1:1", "--join-token", "t",
                   "--data-dir", dir.path() + "/a", "--sim-spot-interrupt-rate", "-0.5"},
                  {}, "", 20);
  EXPECT_EQ(agent.exit_code, 2) << agent.err;
  EXPECT_NE(agent.err.find("--sim-spot-interrupt-rate"), std::string::npos) << agent.err;
}

TEST(DevSpot, AJobWithMaxPriceAvoidsTheExpensiveNodeAndWaitsWithThePriceWhenAllCostMore) {
  // dev-0 costs $3.06 per GPU-hour, dev-1 $1.50.
  DevCluster cluster(
      {"--sim-gpus", "1xA100-80GB", "--sim-nodes", "2", "--price-per-hour", "3.06,1.5"});
  std::string nodes = cluster.cli({"nodes"}).out;
  EXPECT_NE(nodes.find("$3.06"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("$1.50"), std::string::npos) << nodes;

  std::string capped = cluster.submit({"--max-price", "2", "--gpus", "1", "--", "sleep", "600"});
  ASSERT_TRUE(wait_until([&] { return running(cluster, capped); })) << cluster.job(capped).dump();
  EXPECT_EQ(cluster.job(capped)["replicas"][0]["node"], "dev-1");
  EXPECT_EQ(cluster.job(capped)["spec"]["max_price"], 2.0) << cluster.job(capped).dump();

  std::string cheaper = cluster.submit({"--max-price", "1", "--gpus", "1", "--", "sleep", "600"});
  ASSERT_TRUE(wait_until([&] {
    return cluster.job(cheaper)
               .value("pending_reason", "")
               .find("exceeds the job's max_price $1.00") != std::string::npos;
  })) << cluster.job(cheaper).dump();
  EXPECT_NE(cluster.job(cheaper)["pending_reason"].get<std::string>().find("node price $"),
            std::string::npos);
  EXPECT_EQ(cluster.job(cheaper)["state"], "pending");

  for (const char* bad : {"-1", "nan", "1001", "0", "cheap"}) {
    auto r = cluster.cli({"run", "--max-price", bad, "--", "true"});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--max-price"), std::string::npos) << r.err;
  }
  for (const char* bad : {"-1", "1001", "\"2\"", "0"}) {
    auto a = api_call(cluster.address(), "POST", "/v1/jobs",
                      std::string(R"({"command": ["true"], "max_price": )") + bad + "}",
                      cluster.token());
    EXPECT_EQ(a.status, 400) << bad << ": " << a.body.dump();
    EXPECT_NE(a.message().find("max_price"), std::string::npos) << a.body.dump();
  }
  cluster.cli({"cancel", capped});
  cluster.cli({"cancel", cheaper});
}

}  // namespace
}  // namespace gpucloud::testing
