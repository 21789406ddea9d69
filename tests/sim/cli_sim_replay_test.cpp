// Runs the real `gpucloud sim replay` binary on small files and checks what a user sees.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace {

using Output = gpucloud::testing::CliOutput;

Output run(const std::string& args) {
  return gpucloud::testing::run_gpucloud("sim replay " + args);
}

class CliSimReplayTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpucloud_sim_replay_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    write("cluster.csv",
          "name,gpus,gpu_model,gpu_memory_mib,cpu_milli,memory_mib,labels\n"
          "n1,2,A100,81920,32000,262144,zone=a\nn2,1,T4,16384,8000,65536,zone=b\n");
    write("trace.csv",
          "id,tenant,submit_s,duration_s,gpus,gpu_model\n"
          "a,red,0,3600,2,A100\nb,blue,60,1800,1,\nc,blue,120,600,8,\n");
    write("prices.csv", "gpu_model,usd_per_gpu_hour\nA100,2\nT4,0.5\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(CliSimReplayTest, JsonReportPlotAndCost) {
  Output out = run("--cluster " + path("cluster.csv") + " --trace " + path("trace.csv") +
                   " --json --prices " + path("prices.csv") + " --plot " + path("r.svg"));
  ASSERT_EQ(out.status, 0) << out.text;
  auto j = nlohmann::json::parse(out.text);
  EXPECT_EQ(j["policy"], "default");
  EXPECT_EQ(j["cluster"]["gpus"], 3);
  EXPECT_EQ(j["jobs"]["completed"], 2);
  EXPECT_EQ(j["never_fit"]["count"], 1);
  EXPECT_NE(
      j["never_fit"]["examples"][0]["message"].get<std::string>().find(path("trace.csv") + ":4:"),
      std::string::npos)
      << j.dump(2);
  EXPECT_DOUBLE_EQ(j["queueing_delay_s"]["max"].get<double>(), 0);  // b fits on the T4
  double red = 0, blue = 0;
  for (const auto& t : j["tenants"]) (t["tenant"] == "red" ? red : blue) = t["usd"].get<double>();
  EXPECT_NEAR(red, 2 * 2.0, 1e-9);     // 2 A100 for an hour
  EXPECT_NEAR(blue, 0.5 * 0.5, 1e-9);  // 1 T4 for half an hour
  std::ifstream in(path("r.svg"));
  std::string svg((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(svg.find("jobs queued"), std::string::npos);
  EXPECT_NE(svg.find("virtual time"), std::string::npos);
}

TEST_F(CliSimReplayTest, TextReport) {
  Output out = run("--cluster " + path("cluster.csv") + " --trace " + path("trace.csv") +
                   " --policy best-fit");
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("policy best-fit"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("queueing delay"), std::string::npos);
  EXPECT_NE(out.text.find("1 jobs can never fit"), std::string::npos);
}

TEST_F(CliSimReplayTest, BadInputFailsWithWhereAndWhat) {
  Output policy = run("--cluster " + path("cluster.csv") + " --trace " + path("trace.csv") +
                      " --policy fastest");
  EXPECT_EQ(policy.status, 2);
  EXPECT_NE(policy.text.find("fastest"), std::string::npos) << policy.text;
  write("bad.csv", "id,submit_s,duration_s\na,0,-1\n");
  Output neg = run("--cluster " + path("cluster.csv") + " --trace " + path("bad.csv"));
  EXPECT_EQ(neg.status, 1);
  EXPECT_NE(neg.text.find(path("bad.csv") + ":2:5: column 'duration_s': -1 is negative"),
            std::string::npos)
      << neg.text;
  write("few_prices.csv", "gpu_model,usd_per_gpu_hour\nA100,2\n");
  Output prices = run("--cluster " + path("cluster.csv") + " --trace " + path("trace.csv") +
                      " --prices " + path("few_prices.csv"));
  EXPECT_EQ(prices.status, 1);
  EXPECT_NE(prices.text.find("no price for GPU model 'T4'"), std::string::npos) << prices.text;
}

TEST_F(CliSimReplayTest, UntilGivesAPartialReportAndProgressGoesToStderr) {
  std::string files = "--cluster " + path("cluster.csv") + " --trace " + path("trace.csv");
  Output json = gpucloud::testing::run_gpucloud(
      "sim replay " + files + " --json --until 30m --progress", "2>" + path("err.txt"));
  ASSERT_EQ(json.status, 0) << json.text;
  auto j = nlohmann::json::parse(json.text);  // stdout holds the JSON alone
  EXPECT_EQ(j["partial"], true);
  EXPECT_EQ(j["stopped"]["at_s"], 1800.0);
  EXPECT_EQ(j["stopped"]["running"], 2);  // a (until 1 h) and b (until 31 min)
  EXPECT_EQ(j["jobs"]["completed"], 0);
  std::ifstream in(path("err.txt"));
  std::string err((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(err.find("sim time 30m: 2 submitted, 0 done, 0 queued, 2 running"), std::string::npos)
      << err;
  Output text = run(files + " --until 1800");
  ASSERT_EQ(text.status, 0) << text.text;
  EXPECT_NE(text.text.find("partial: stopped at simulated time 30m (--until): 2 jobs running, 0 "
                           "pending, 0 not yet arrived"),
            std::string::npos)
      << text.text;
  EXPECT_EQ(text.text.find("sim time"), std::string::npos) << "no progress without a terminal";
}

TEST_F(CliSimReplayTest, ABadUntilIsAUsageError) {
  std::string files = "--cluster " + path("cluster.csv") + " --trace " + path("trace.csv");
  for (const char* bad : {"-5m", "soon", "3 weeks", "20y", "99999d"}) {
    Output out = run(files + " --until '" + bad + "'");
    EXPECT_EQ(out.status, 2) << bad;
    EXPECT_NE(out.text.find("--until: duration '"), std::string::npos) << out.text;
  }
}

TEST_F(CliSimReplayTest, QueuePolicySjfRunsTheShortJobFirstAndAnUnknownOneIsAUsageError) {
  // One GPU; a 2-hour job holds it; then a 1-hour and a 10-minute job wait, the longer older.
  write("one.csv",
        "name,gpus,gpu_model,gpu_memory_mib,cpu_milli,memory_mib,labels\n"
        "n1,1,A100,81920,32000,262144,\n");
  write("queue.csv",
        "id,tenant,submit_s,duration_s,max_runtime_s,gpus\n"
        "first,t,0,7200,7200,1\nlong,t,10,3600,3600,1\nshort,t,20,600,600,1\n");
  std::string files = "--cluster " + path("one.csv") + " --trace " + path("queue.csv");
  auto mean_wait = [&](const std::string& policy) {
    Output out = run(files + " --json --queue-policy " + policy);
    EXPECT_EQ(out.status, 0) << out.text;
    auto report = nlohmann::json::parse(out.text.substr(out.text.find('{')));
    return report["queueing_delay_s"]["mean"].get<double>();
  };
  // fifo: long waits 7190 s, short 10780 s; sjf: short 7180 s, long 7790 s.
  EXPECT_NEAR(mean_wait("fifo"), (0 + 7190 + 10780) / 3.0, 1);
  EXPECT_NEAR(mean_wait("sjf"), (0 + 7180 + 7790) / 3.0, 1);
  Output bad = run(files + " --queue-policy lifo");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.text.find("--queue-policy: unknown queue policy 'lifo'; known: fifo, sjf, las"),
            std::string::npos)
      << bad.text;
}

TEST_F(CliSimReplayTest, QueuePolicyLasPreemptsAtALevelCrossingAndBadSettingsAreUsageErrors) {
  // One GPU; a 2-hour job, then a 10-minute one. las with a 1-hour first level: the short job
  // starts when the long one has had an hour; the long one resumes from its 30-minute
  // checkpoints after a 1-minute restart.
  write("one.csv",
        "name,gpus,gpu_model,gpu_memory_mib,cpu_milli,memory_mib,labels\n"
        "n1,1,A100,81920,32000,262144,\n");
  write("two.csv", "id,tenant,submit_s,duration_s,gpus\nlong,t,0,7200,1\nshort,t,10,600,1\n");
  std::string files = "--cluster " + path("one.csv") + " --trace " + path("two.csv");
  Output out = run(files +
                   " --json --queue-policy las --las-thresholds 3600 --checkpoint-interval 30m "
                   "--restart-cost 1m");
  ASSERT_EQ(out.status, 0) << out.text;
  auto report = nlohmann::json::parse(out.text.substr(out.text.find('{')));
  EXPECT_EQ(report["jobs"]["preemptions"], 1);
  // short: 3590 s waiting, then 600 s; long: 3600 + 600 + 60 + 3600 s.
  EXPECT_NEAR(report["completion_time_s"]["mean"].get<double>(), (4190 + 7860) / 2.0, 1);
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--las-thresholds 3600,60", "--las-thresholds: las thresholds: 60 follows 3600"},
           {"--las-thresholds=-1", "--las-thresholds: las thresholds: -1 is not"},
           {"--las-starvation soon", "--las-starvation: duration 'soon'"},
           {"--checkpoint-interval -5m", "--checkpoint-interval: duration '-5m'"},
           {"--restart-cost 1parsec", "--restart-cost: duration '1parsec'"},
           {"--spot-interrupt-rate 500", "--spot-interrupt-rate: 500 per node-hour must be 0..100"},
           {"--spot-downtime soon", "--spot-downtime: duration 'soon'"}}) {
    Output bad = run(files + " --queue-policy las " + flags);
    EXPECT_EQ(bad.status, 2) << flags;
    EXPECT_NE(bad.text.find(message), std::string::npos) << flags << ": " << bad.text;
  }
}

}  // namespace

namespace {

TEST_F(CliSimReplayTest, TenantsConfigWindowsChangeTheQuotaAtTheirTimes) {
  // Trace time 0 is 07:00 UTC; red's quota is 1 A100, 2 from 08:00 to 20:00.
  write("tenants.yaml",
        "tenants:\n"
        "  - name: red\n"
        "    quota: {A100: 1}\n"
        "    quota_windows:\n"
        "      - {days: daily, from: \"08:00\", to: \"20:00\", zone: UTC, quota: {A100: 2}}\n");
  write("red.csv",
        "id,tenant,submit_s,duration_s,gpus,gpu_model\n"
        "a,red,0,7200,1,A100\nb,red,0,7200,1,A100\n");
  std::string files = "--cluster " + path("cluster.csv") + " --trace " + path("red.csv");
  Output out =
      gpucloud::testing::run_gpucloud("sim replay " + files + " --json --tenants-config " +
                                          path("tenants.yaml") + " --start 2026-03-02T07:00Z",
                                      "2>/dev/null");
  ASSERT_EQ(out.status, 0) << out.text;
  auto j = nlohmann::json::parse(out.text);
  ASSERT_GE(j["quota_changes"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["quota_changes"][1]["t_s"], 3600.0);
  EXPECT_EQ(j["quota_changes"][1]["quota"]["A100"], 2);
  // b waited for the window: an hour.
  EXPECT_DOUBLE_EQ(j["queueing_delay_s"]["max"].get<double>(), 3600);
  Output bad = run(files + " --tenants-config " + path("tenants.yaml") + " --start tomorrow");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.text.find("--start: 'tomorrow' is not a UTC time"), std::string::npos) << bad.text;
}

}  // namespace
