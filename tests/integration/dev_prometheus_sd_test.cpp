// The deploy/ files against a real Prometheus (Debian's `prometheus`): deploy/prometheus/
// prometheus.yml finds the agents of a `gpucloud dev` cluster through GET /v1/sd/agents and
// scrapes their GPU metrics (dcgm-exporter names) next to the server's; alerts.yml loads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "dev_cluster.h"
#include "metrics_text.h"
#include "prometheus_harness.h"

namespace gpucloud::testing {
namespace {

const std::string kScraper = "scraper-token-0123456789abcdef";

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// deploy/prometheus/prometheus.yml pointed at a dev cluster: its server address, the test's
// token file, plain http (dev serves no TLS) and 1 s intervals.
std::string dev_prometheus_config(const std::string& server_url, const std::string& token_file) {
  std::string text = read_file(source_dir() + "/deploy/prometheus/prometheus.yml");
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? end : end - start + 1);
    if (line.find("tls_config") == std::string::npos) out += line;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  std::string target = server_url.substr(server_url.find("://") + 3);
  replace_all(out, "https://gpucloud.example:8443", server_url);
  replace_all(out, "gpucloud.example:8443", target);
  replace_all(out, "scheme: https", "scheme: http");
  replace_all(out, "/etc/prometheus/gpucloud-metrics.token", token_file);
  replace_all(out, "15s", "1s");
  replace_all(out, "refresh_interval: 30s", "refresh_interval: 1s");
  return out;
}

// One dev cluster (two nodes of two GPUs, a job holding two GPUs of one) scraped by one
// Prometheus for every test here.
class DeployPrometheus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::access(kPrometheusBinary, X_OK) != 0) return;
    dir_ = new TempDir();
    token_file_ = dir_->path() + "/metrics.token";
    std::ofstream(token_file_) << kScraper << "\n";
    cluster_ = new DevCluster(
        {"--sim-gpus", "2xA100-80GB", "--sim-nodes", "2", "--metrics-token-file", token_file_});
    std::string config = dir_->path() + "/prometheus.yml";
    std::ofstream(config) << dev_prometheus_config(cluster_->address(), token_file_);
    std::ofstream(dir_->path() + "/alerts.yml")
        << read_file(source_dir() + "/deploy/prometheus/alerts.yml");
    prometheus_ = new RealPrometheus(config, dir_->path());
    job_id_ = cluster_->submit({"--gpus", "2", "--", "sh", "-c", "while :; do :; done"});
  }
  static void TearDownTestSuite() {
    if (cluster_ && !job_id_.empty()) cluster_->cli({"cancel", job_id_});
    delete prometheus_;
    delete cluster_;
    delete dir_;
    prometheus_ = nullptr;
    cluster_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!prometheus_)
      GTEST_SKIP() << kPrometheusBinary
                   << " is missing: install Debian's prometheus package (scripts/install-deps.sh "
                      "does) to run this test";
  }
  static std::string prom() { return prometheus_->url(); }

  static TempDir* dir_;
  static std::string token_file_;
  static DevCluster* cluster_;
  static RealPrometheus* prometheus_;
  static std::string job_id_;
};

TempDir* DeployPrometheus::dir_ = nullptr;
std::string DeployPrometheus::token_file_;
DevCluster* DeployPrometheus::cluster_ = nullptr;
RealPrometheus* DeployPrometheus::prometheus_ = nullptr;
std::string DeployPrometheus::job_id_;

TEST_F(DeployPrometheus, DiscoveryListsEveryAgentWithItsLabels) {
  ApiAnswer refused = api_call(cluster_->address(), "GET", "/v1/sd/agents", "", "");
  EXPECT_EQ(refused.status, 401);
  ApiAnswer sd = api_call(cluster_->address(), "GET", "/v1/sd/agents", "", kScraper);
  ASSERT_EQ(sd.status, 200) << sd.error();
  ASSERT_TRUE(sd.body.is_array());
  ASSERT_EQ(sd.body.size(), 2u) << sd.body.dump();
  std::set<std::string> nodes;
  for (const auto& group : sd.body) {
    ASSERT_EQ(group["targets"].size(), 1u);
    std::string target = group["targets"][0];
    EXPECT_EQ(target.rfind("127.0.0.1:", 0), 0u) << target;
    EXPECT_EQ(group["labels"]["gpu_model"], "A100");
    EXPECT_EQ(group["labels"]["capacity_class"], "on-demand");
    nodes.insert(group["labels"]["node"].get<std::string>());
    // The agent's own endpoint wants the same token, and its text passes promtool's lint but
    // for dcgm-exporter's own camelCase label names (UUID, modelName, Hostname).
    std::string agent = "http://" + target;
    EXPECT_EQ(scrape_metrics(agent, "").status, 401);
    Scrape scraped = scrape_metrics(agent, kScraper);
    ASSERT_EQ(scraped.status, 200);
    EXPECT_NE(scraped.body.find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos) << scraped.body;
    if (::access(kPromtoolBinary, X_OK) == 0) {
      std::string file = dir_->path() + "/agent.txt";
      std::ofstream(file) << scraped.body;
      CommandResult check =
          run_command({"/bin/sh", "-c", std::string(kPromtoolBinary) + " check metrics < " + file});
      std::istringstream problems(check.out + check.err);
      for (std::string line; std::getline(problems, line);) {
        if (line.empty()) continue;
        EXPECT_NE(line.find("label names should be written in 'snake_case' not 'camelCase'"),
                  std::string::npos)
            << line;
      }
    }
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"dev-0", "dev-1"}));
}

TEST_F(DeployPrometheus, GpuSeriesArriveThroughDiscoveryWithTheJobHoldingEachGpu) {
  ASSERT_TRUE(
      wait_until([&] { return query(prom(), "count(up{job=\"gpucloud-gpus\"} == 1)") == 2; },
                 std::chrono::seconds(60)))
      << prometheus_->log();
  ASSERT_TRUE(wait_until([&] { return query(prom(), "up{job=\"gpucloud\"}") == 1; }))
      << prometheus_->log();
  EXPECT_EQ(query(prom(), "count(DCGM_FI_DEV_GPU_TEMP)"), 4);  // 2 nodes x 2 GPUs
  // The job's two GPUs carry its id and tenant; what Prometheus holds matches the API.
  ASSERT_TRUE(wait_until([&] { return cluster_->job(job_id_)["state"] == "running"; }));
  std::string held = "DCGM_FI_DEV_FB_FREE{pod=\"" + job_id_ + "\",namespace=\"default\"}";
  ASSERT_TRUE(wait_until([&] { return query(prom(), "count(" + held + ")") == 2; }))
      << prometheus_->log();
  ApiAnswer tenants = api_call(cluster_->address(), "GET", "/v1/tenants", "", cluster_->token());
  double in_use = 0;
  for (const auto& t : tenants.body["tenants"])
    for (const auto& [model, gpus] : t["gpus_in_use"].items()) in_use += gpus.get<double>();
  EXPECT_EQ(in_use, 2);
  ASSERT_TRUE(wait_until([&] { return query(prom(), "sum(gpucloud_gpus_allocated)") == in_use; }));
  EXPECT_EQ(query(prom(), "count(DCGM_FI_DEV_GPU_UTIL{tenant=\"default\"})"), in_use);
  // Both GPUs are on one node, labelled by discovery.
  EXPECT_EQ(query(prom(), "count(count by (node) (DCGM_FI_DEV_GPU_UTIL{hpc_job=\"" + job_id_ +
                              "\",gpu_model=\"A100\"}))"),
            1);
  // The busy loop shows as utilisation on the job's GPUs (simulated: its CPU load).
  EXPECT_TRUE(wait_until(
      [&] { return query(prom(), "min(DCGM_FI_DEV_GPU_UTIL{pod=\"" + job_id_ + "\"})") > 0; },
      std::chrono::seconds(30)));
}

TEST_F(DeployPrometheus, TheAlertRulesLoadAndEvaluate) {
  nlohmann::json rules;
  auto all_ok = [&] {
    rules = prometheus_get(prom(), "/api/v1/rules");
    if (rules.is_discarded() || rules["status"] != "success" || rules["data"]["groups"].size() != 1)
      return false;
    for (const auto& rule : rules["data"]["groups"][0]["rules"])
      if (rule["health"] != "ok") return false;
    return true;
  };
  ASSERT_TRUE(wait_until(all_ok, std::chrono::seconds(30))) << rules.dump() << prometheus_->log();
  EXPECT_EQ(rules["data"]["groups"][0]["rules"].size(), 8u);
}

// Every query of deploy/grafana/gpucloud.json, with the dashboard's variables set to "all",
// runs on the Prometheus that scrapes the dev cluster; all but the few that need what a dev
// cluster lacks (quotas, preemptions) return data.
TEST_F(DeployPrometheus, EveryDashboardQueryRunsAndTheCoreOnesReturnData) {
  auto dashboard = nlohmann::json::parse(read_file(source_dir() + "/deploy/grafana/gpucloud.json"),
                                         nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << "deploy/grafana/gpucloud.json is not JSON";
  const std::set<std::string> may_be_empty = {"Quota and borrowing",
                                              "Preemptions and interruptions per second"};
  // Data for the panels below: the job runs and each series has two samples for rate().
  ASSERT_TRUE(wait_until(
      [&] {
        return query(prom(), "count(DCGM_FI_DEV_GPU_UTIL{pod=\"" + job_id_ + "\"})") == 2 &&
               query(prom(), "sum(rate(gpucloud_agent_polls_total[1m])) > 0").has_value();
      },
      std::chrono::seconds(60)))
      << prometheus_->log();

  size_t queries = 0;
  std::set<std::string> titles;
  for (const auto& panel : dashboard["panels"]) {
    if (panel["type"] == "row") continue;
    std::string title = panel["title"];
    titles.insert(title);
    ASSERT_TRUE(panel.contains("targets") && !panel["targets"].empty()) << title;
    for (const auto& target : panel["targets"]) {
      std::string expr = target["expr"];
      replace_all(expr, "$__rate_interval", "1m");
      replace_all(expr, "$tenant", ".*");
      replace_all(expr, "$node", ".*");
      ASSERT_EQ(expr.find('$'), std::string::npos) << title << ": a variable left in " << expr;
      ++queries;
      nlohmann::json answer;
      bool has_data = wait_until(
          [&] {
            answer = prometheus_get(prom(), "/api/v1/query?query=" + url_encode(expr));
            return !answer.is_discarded() && answer["status"] == "success" &&
                   !answer["data"]["result"].empty();
          },
          std::chrono::seconds(may_be_empty.count(title) ? 1 : 30));
      ASSERT_FALSE(answer.is_discarded()) << title << ": " << expr;
      EXPECT_EQ(answer["status"], "success") << title << ": " << expr << "\n" << answer.dump();
      if (!may_be_empty.count(title)) {
        EXPECT_TRUE(has_data) << title << ": no data for " << expr;
      }
    }
  }
  EXPECT_GE(titles.size(), 20u);
  for (const char* section_panel : {"GPUs allocated", "GPUs allocated by tenant", "GPU utilisation",
                                    "Scheduling pass duration (p50, p99)"})
    EXPECT_TRUE(titles.count(section_panel)) << section_panel;
  // The dashboard's variables list values.
  for (const auto& variable : dashboard["templating"]["list"]) {
    if (variable["type"] != "query") continue;
    std::string q = variable["query"]["query"];  // label_values(METRIC, LABEL)
    size_t open = q.find('('), comma = q.find(','), close = q.find(')');
    ASSERT_TRUE(q.rfind("label_values(", 0) == 0 && comma != std::string::npos) << q;
    std::string metric = q.substr(open + 1, comma - open - 1);
    std::string label = q.substr(comma + 1, close - comma - 1);
    label.erase(0, label.find_first_not_of(' '));
    auto values =
        prometheus_get(prom(), "/api/v1/label/" + label + "/values?match[]=" + url_encode(metric));
    EXPECT_FALSE(values["data"].empty()) << q << ": " << values.dump();
  }
  std::cout << queries << " dashboard queries ran\n";
}

TEST(AgentMetricsFlags, ABadAddressOrTokenFileIsRefusedWithTheFix) {
  TempDir dir;
  std::vector<std::string> agent = {GPUCLOUD_BINARY, "agent", "--server",   "http://127.0.0.1:1",
                                    "--join-token",  "t",     "--data-dir", dir.path() + "/a"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = agent;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_command(argv, {}, "", 20);
  };
  CommandResult bad_listen = with({"--metrics-listen", "9400"});
  EXPECT_EQ(bad_listen.exit_code, 2) << bad_listen.err;
  EXPECT_NE(bad_listen.err.find("--metrics-listen '9400' is not HOST:PORT"), std::string::npos)
      << bad_listen.err;
  CommandResult no_token = with({"--metrics-token-file", dir.path() + "/missing"});
  EXPECT_EQ(no_token.exit_code, 2) << no_token.err;
  EXPECT_NE(no_token.err.find("--metrics-token-file"), std::string::npos) << no_token.err;
  EXPECT_NE(no_token.err.find("openssl rand -hex 32"), std::string::npos) << no_token.err;
}

// promtool's checks of the deploy files: the rules, their unit tests (alerts_test.yml), and the
// scrape config.
TEST(DeployFiles, PassPromtool) {
  if (::access(kPromtoolBinary, X_OK) != 0)
    GTEST_SKIP() << kPromtoolBinary
                 << " is missing: install Debian's prometheus package (scripts/install-deps.sh "
                    "does) to run this test";
  std::string deploy = source_dir() + "/deploy/prometheus";
  CommandResult check = run_command({kPromtoolBinary, "check", "rules", deploy + "/alerts.yml"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("SUCCESS: 8 rules found"), std::string::npos) << check.out;
  CommandResult unit =
      run_command({kPromtoolBinary, "test", "rules", "alerts_test.yml"}, {}, deploy);
  EXPECT_EQ(unit.exit_code, 0) << unit.out << unit.err;
  // check config wants the files it names to exist: the same config with the test's own.
  TempDir dir;
  std::string token = dir.path() + "/token";
  std::ofstream(token) << kScraper << "\n";
  std::string config = dir.path() + "/prometheus.yml";
  std::ofstream(config) << dev_prometheus_config("http://127.0.0.1:8080", token);
  std::ofstream(dir.path() + "/alerts.yml") << read_file(deploy + "/alerts.yml");
  CommandResult conf = run_command({kPromtoolBinary, "check", "config", config});
  EXPECT_EQ(conf.exit_code, 0) << conf.out << conf.err;
}

}  // namespace
}  // namespace gpucloud::testing
