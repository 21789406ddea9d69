// A real cluster across network namespaces: `gpucloud server` on 10.77.0.1 and three
// `gpucloud agent`s on 10.77.0.11-13, over TLS; agent death, network cuts, server restart,
// drain, join tokens and multi-node environment. Skipped where namespaces cannot be made.
#include "netns_cluster.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

namespace gpucloud::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class NetnsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = NetnsLab::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    lab_ = std::make_unique<NetnsLab>(3);
    cluster_ = std::make_unique<NetnsCluster>(*lab_, 3);
  }
  void TearDown() override {
    cluster_.reset();
    lab_.reset();
  }

  // A job that records its start ("start.<attempt>": node and time) and then marks
  // "alive.<attempt>" with the time every 100 ms until stopped.
  std::vector<std::string> marker_job(const std::vector<std::string>& flags = {}) const {
    std::vector<std::string> args = flags;
    std::string d = cluster_->shared_dir();
    args.insert(args.end(), {"--grace", "1s", "--", "/bin/sh", "-c",
                             "a=$GPUCLOUD_ATTEMPT; echo \"$GPUCLOUD_NODE $(date +%s%N)\" > " + d +
                                 "/start.$a; while :; do date +%s%N > " + d + "/alive.$a.t; mv " +
                                 d + "/alive.$a.t " + d + "/alive.$a; sleep 0.1; done"});
    return args;
  }
  // Nanoseconds since the attempt last marked itself alive (huge when it never did).
  int64_t silent_ns(int attempt) const {
    std::string t = read_file(cluster_->shared_dir() + "/alive." + std::to_string(attempt));
    if (t.empty()) return INT64_MAX;
    return now_ns() - std::stoll(t);
  }
  bool alive(int attempt) const { return silent_ns(attempt) < 500'000'000; }
  // Waits until the job runs attempt `attempt`; returns the node it runs on ("" on timeout).
  std::string wait_running(const std::string& id, int attempt,
                           std::chrono::milliseconds timeout = 30s) const {
    std::string node;
    cluster_->wait_job(
        id,
        [&](const json& j) {
          if (j.value("state", "") != "running" || j.value("attempt", 0) != attempt) return false;
          node = j["replicas"][0].value("node", "");
          return true;
        },
        timeout);
    return node;
  }
  static int host_of(const std::string& node) { return std::stoi(node.substr(5)); }

  std::unique_ptr<NetnsLab> lab_;
  std::unique_ptr<NetnsCluster> cluster_;
};

TEST_F(NetnsClusterTest, AgentKill9MakesNodeDownAndRequeuesElsewhere) {
  std::string id = cluster_->submit(marker_job({"--gpus", "1"}));
  std::string first = wait_running(id, 1);
  ASSERT_FALSE(first.empty()) << cluster_->job(id).dump();
  ASSERT_TRUE(wait_until([&] { return alive(1); }));
  cluster_->kill_agent(host_of(first));
  EXPECT_TRUE(wait_until([&] { return cluster_->node_state(first) == "unreachable"; }, 10s));
  EXPECT_TRUE(wait_until([&] { return cluster_->node_state(first) == "down"; }, 15s));
  std::string second = wait_running(id, 2);
  ASSERT_FALSE(second.empty()) << cluster_->job(id).dump();
  EXPECT_NE(second, first);
  EXPECT_TRUE(wait_until([&] { return alive(2); }));
  // The agent comes back: it re-adopts attempt 1, learns it is no longer wanted and stops it;
  // attempt 2 runs on.
  cluster_->start_agent(host_of(first));
  EXPECT_TRUE(wait_until([&] { return cluster_->node_state(first) == "ready"; }));
  EXPECT_TRUE(wait_until([&] { return silent_ns(1) > 1'000'000'000; }, 20s));
  json j = cluster_->job(id);
  EXPECT_EQ(j.value("attempt", 0), 2);
  EXPECT_EQ(j.value("state", ""), "running");
  EXPECT_TRUE(alive(2));
}

TEST_F(NetnsClusterTest, ShortNetworkCutDoesNotDisturbTheJob) {
  std::string id = cluster_->submit(marker_job({"--gpus", "1"}));
  std::string node = wait_running(id, 1);
  ASSERT_FALSE(node.empty());
  ASSERT_TRUE(wait_until([&] { return alive(1); }));
  lab_->set_link(host_of(node), false);
  std::this_thread::sleep_for(1s);  // shorter than the fence (3s) and down (8s) timeouts
  lab_->set_link(host_of(node), true);
  // Watch for longer than fence and down would take: nothing may happen to the job.
  for (int i = 0; i < 14; ++i) {
    std::this_thread::sleep_for(500ms);
    ASSERT_TRUE(alive(1)) << "attempt 1 stopped after a 1 s cut";
  }
  json j = cluster_->job(id);
  EXPECT_EQ(j.value("state", ""), "running") << j.dump();
  EXPECT_EQ(j.value("attempt", 0), 1);
  EXPECT_EQ(cluster_->node_state(node), "ready");
}

TEST_F(NetnsClusterTest, LongNetworkCutFencesThenRequeuesOnlyAfterDown) {
  std::string id = cluster_->submit(marker_job({"--gpus", "1"}));
  std::string first = wait_running(id, 1);
  ASSERT_FALSE(first.empty());
  ASSERT_TRUE(wait_until([&] { return alive(1); }));
  lab_->set_link(host_of(first), false);
  // The cut-off agent stops attempt 1 itself (fence 3s after the 1s poll hold, plus 1s grace)
  // while the server still counts the node only unreachable (down after 8s): attempt 2 has
  // not started yet.
  ASSERT_TRUE(wait_until([&] { return !alive(1); }, 15s));
  EXPECT_FALSE(fs::exists(cluster_->shared_dir() + "/start.2"))
      << "attempt 2 started before attempt 1 was fenced";
  std::string second = wait_running(id, 2);
  ASSERT_FALSE(second.empty()) << cluster_->job(id).dump();
  EXPECT_NE(second, first);
  // Never two attempts at once: attempt 2 started after attempt 1's last sign of life.
  std::string alive1 = read_file(cluster_->shared_dir() + "/alive.1");
  std::string start2 = read_file(cluster_->shared_dir() + "/start.2");
  ASSERT_FALSE(alive1.empty());
  ASSERT_NE(start2.find(' '), std::string::npos);
  EXPECT_LT(std::stoll(alive1), std::stoll(start2.substr(start2.find(' ') + 1)));
  // The link comes back: the old agent reports attempt 1's end late; it is ignored.
  lab_->set_link(host_of(first), true);
  EXPECT_TRUE(wait_until([&] { return cluster_->node_state(first) == "ready"; }, 30s));
  std::this_thread::sleep_for(2s);  // time for the late report to arrive
  json j = cluster_->job(id);
  EXPECT_EQ(j.value("attempt", 0), 2) << j.dump();
  EXPECT_EQ(j.value("state", ""), "running");
  EXPECT_TRUE(alive(2));
  EXPECT_FALSE(alive(1));
}

TEST_F(NetnsClusterTest, ServerKill9AndRestartLosesNothing) {
  std::string a = cluster_->submit(marker_job({"--gpus", "2"}));
  ASSERT_FALSE(wait_running(a, 1).empty());
  cluster_->kill_server();
  cluster_->start_server();
  for (int i = 1; i <= 3; ++i)
    EXPECT_TRUE(wait_until([&] {
      return cluster_->node_state(cluster_->agent_name(i)) == "ready";
    })) << cluster_->agent_name(i);
  json j = cluster_->job(a);
  EXPECT_EQ(j.value("state", ""), "running") << j.dump();
  EXPECT_EQ(j.value("attempt", 0), 1);
  EXPECT_TRUE(alive(1));
  // The restarted server places new work on the reconnected agents.
  std::string b = cluster_->submit({"--gpus", "1", "--", "/bin/true"});
  EXPECT_TRUE(
      cluster_->wait_job(b, [](const json& x) { return x.value("state", "") == "succeeded"; }));
}

TEST_F(NetnsClusterTest, DrainInterruptsAndRequeuesWithoutCountingARestart) {
  std::string id = cluster_->submit(marker_job({"--gpus", "1", "--restart", "never"}));
  std::string first = wait_running(id, 1);
  ASSERT_FALSE(first.empty());
  auto r = cluster_->cli({"node", "drain", first});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string second = wait_running(id, 2);
  ASSERT_FALSE(second.empty()) << cluster_->job(id).dump();
  EXPECT_NE(second, first);
  json j = cluster_->job(id);
  EXPECT_EQ(j.value("interruptions", 0), 1);
  // Attempt 1 had stopped (SIGTERM, grace) before attempt 2 started.
  std::string alive1 = read_file(cluster_->shared_dir() + "/alive.1");
  std::string start2 = read_file(cluster_->shared_dir() + "/start.2");
  ASSERT_FALSE(alive1.empty());
  ASSERT_NE(start2.find(' '), std::string::npos);
  EXPECT_LT(std::stoll(alive1), std::stoll(start2.substr(start2.find(' ') + 1)));
  // A cordoned (drained) node takes no new work; uncordoned, it does again.
  std::string pinned =
      cluster_->submit({"--gpus", "1", "--selector", "host=" + first, "--", "/bin/true"});
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(cluster_->job(pinned).value("state", ""), "pending");
  ASSERT_EQ(cluster_->cli({"node", "uncordon", first}).exit_code, 0);
  EXPECT_TRUE(cluster_->wait_job(
      pinned, [](const json& x) { return x.value("state", "") == "succeeded"; }));
}

TEST_F(NetnsClusterTest, RevokedJoinTokenIsRefused) {
  auto created = cluster_->cli({"token", "create", "--role", "agent", "--ttl", "10m"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  std::string token = created.out.substr(0, created.out.find('\n'));
  auto list = cluster_->cli({"token", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0);
  std::string name;
  for (const auto& t : json::parse(list.out))
    if (t.value("role", "") == "agent" && t.value("state", "") == "active") name = t["name"];
  ASSERT_FALSE(name.empty());
  // Revoke every agent token, so that `token` is certainly among them.
  for (const auto& t : json::parse(list.out)) {
    if (t.value("role", "") == "agent" && t.value("name", "") != "agent-join") {
      ASSERT_EQ(cluster_->cli({"token", "revoke", t["name"]}).exit_code, 0);
    }
  }
  auto joined =
      lab_->run(1, {GPUCLOUD_BINARY, "agent", "--server", cluster_->url(), "--fingerprint",
                    cluster_->fingerprint(), "--join-token", token, "--data-dir",
                    cluster_->work_dir() + "/late-agent", "--name", "late", "--sim-gpus", "1xT4"});
  EXPECT_EQ(joined.exit_code, 77) << joined.err;
  EXPECT_NE(joined.err.find("was revoked"), std::string::npos) << joined.err;
  // Nodes that joined before keep working with their own credentials.
  std::string id = cluster_->submit({"--gpus", "1", "--", "/bin/true"});
  EXPECT_TRUE(
      cluster_->wait_job(id, [](const json& x) { return x.value("state", "") == "succeeded"; }));
  // A wrong fingerprint is refused by the client before any token is sent.
  auto wrong = lab_->run(
      0, {GPUCLOUD_BINARY, "nodes"},
      {{"GPUCLOUD_ADDR", cluster_->url()}, {"GPUCLOUD_FINGERPRINT", std::string(64, 'a')}});
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("not the pinned"), std::string::npos) << wrong.err;
}

TEST_F(NetnsClusterTest, MultiNodeJobGetsTorchrunEnvironment) {
  std::string d = cluster_->shared_dir();
  std::string id =
      cluster_->submit({"--replicas", "3", "--gpus", "2", "--", "/bin/sh", "-c",
                        "env > " + d + "/env.$GPUCLOUD_REPLICA.t && mv " + d +
                            "/env.$GPUCLOUD_REPLICA.t " + d + "/env.$GPUCLOUD_REPLICA"});
  ASSERT_TRUE(cluster_->wait_job(id, [](const json& x) {
    return x.value("state", "") == "succeeded";
  })) << cluster_->job(id).dump();
  json j = cluster_->job(id);
  std::string rank0_node = j["replicas"][0].value("node", "");
  std::string master_port;
  for (int rank = 0; rank < 3; ++rank) {
    std::string env = "\n" + read_file(d + "/env." + std::to_string(rank)) + "\n";
    auto var = [&](const std::string& k) {
      size_t at = env.find("\n" + k + "=");
      if (at == std::string::npos) return std::string("<unset>");
      at += k.size() + 2;
      return env.substr(at, env.find('\n', at) - at);
    };
    EXPECT_EQ(var("MASTER_ADDR"), NetnsLab::ip(host_of(rank0_node))) << rank;
    EXPECT_EQ(var("WORLD_SIZE"), "3");
    EXPECT_EQ(var("RANK"), std::to_string(rank));
    EXPECT_EQ(var("NODE_RANK"), std::to_string(rank));
    EXPECT_EQ(var("LOCAL_WORLD_SIZE"), "2");
    EXPECT_EQ(var("GPUCLOUD_REPLICA"), std::to_string(rank));
    if (rank == 0) master_port = var("MASTER_PORT");
    EXPECT_EQ(var("MASTER_PORT"), master_port);
  }
  EXPECT_NE(master_port, "<unset>");
}

}  // namespace
}  // namespace gpucloud::testing
