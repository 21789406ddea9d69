// A real cluster across network namespaces: `gpucloud server` on 10.77.0.1 and three
// `gpucloud agent`s on 10.77.0.11-13, over TLS; agent death, network cuts, server restart,
// drain, join tokens, multi-node environment, and a hostile tenant's job and a stolen node
// credential. Skipped where namespaces cannot be made.
#include "netns_cluster.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "checkpoint_counter.h"
#include "container_image.h"
#include "net/crypto.h"
#include "net/http_client.h"

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

TEST_F(NetnsClusterTest, AContainerJobRunsOnANodeAcrossTheNetworkWithOnlyItsGpus) {
  bool missing = false;
  std::string problem = ensure_test_image(&missing);
  if (missing) GTEST_SKIP() << "container jobs need podman: " << problem;
  std::string id = cluster_->submit({"--image", kTestImage, "--gpus", "1", "--", "sh", "-c",
                                     "ls /dev | grep nvidia | tr '\\n' ' '; echo; "
                                     "echo cvd=$CUDA_VISIBLE_DEVICES; exit 3"});
  json job;
  cluster_->wait_job(
      id,
      [&](const json& j) {
        job = j;
        return j.value("state", "") == "failed";
      },
      60s);
  ASSERT_EQ(job.value("state", ""), "failed") << job.dump();
  EXPECT_EQ(job["replicas"][0]["exit_code"], 3) << job.dump();
  std::string logs = cluster_->cli({"logs", id}).out;
  int index = job["replicas"][0]["gpus"][0]["index"];
  // Its own GPU's node (and the control node), no other GPU's; CUDA numbers it 0.
  EXPECT_NE(logs.find("nvidia" + std::to_string(index) + " "), std::string::npos) << logs;
  EXPECT_EQ(logs.find("nvidia" + std::to_string(1 - index) + " "), std::string::npos) << logs;
  EXPECT_NE(logs.find("nvidiactl"), std::string::npos) << logs;
  EXPECT_NE(logs.find("cvd=0\n"), std::string::npos) << logs;
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
  // The agent's fence is in the audit log, with the node that decided it.
  auto fences = cluster_->cli({"audit", "--action", "job.fence", "--json"});
  ASSERT_EQ(fences.exit_code, 0) << fences.err;
  json entries = json::parse(fences.out);
  ASSERT_EQ(entries.size(), 1u) << fences.out;
  EXPECT_EQ(entries[0]["object"], j["id"]) << fences.out;
  EXPECT_EQ(entries[0]["actor"], "agent " + first) << fences.out;
  EXPECT_NE(entries[0]["detail"].get<std::string>().find("attempt 1 rank 0 stopped by its node"),
            std::string::npos)
      << fences.out;
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

TEST_F(NetnsClusterTest, AnAgentStoppedWithSigtermLeavesAndItsJobResumesElsewhereAtOnce) {
  std::string id = cluster_->submit(marker_job({"--gpus", "1"}));
  std::string first = wait_running(id, 1);
  ASSERT_FALSE(first.empty()) << cluster_->job(id).dump();
  ASSERT_TRUE(wait_until([&] { return alive(1); }));
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(cluster_->stop_agent(host_of(first), 20s)) << "the agent exits after the grace";
  std::string second = wait_running(id, 2, 20s);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(second.empty()) << cluster_->job(id).dump();
  EXPECT_NE(second, first);
  // The job's grace is 1 s: it runs elsewhere within grace + 2 s, not after the liveness
  // timeouts (down after 8 s here, 60 s by default).
  EXPECT_LT(seconds, 3.0) << "resumed after " << seconds << " s";
  std::printf("[ figure ] SIGTERM of the agent to the job running elsewhere: %.2f s\n", seconds);
  EXPECT_EQ(cluster_->node_state(first), "left");
  json j = cluster_->job(id);
  EXPECT_EQ(j.value("interruptions", 0), 1) << "an interruption, not a failure or a restart";
  ASSERT_EQ(j["attempts"].size(), 1u) << j.dump();
  EXPECT_EQ(j["attempts"][0]["cause"], "agent-shutdown");
  // A node that left can be removed; a ready one cannot.
  auto busy = cluster_->cli({"node", "remove", second});
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_NE(busy.err.find("only a node that is down, gone or left can be removed"),
            std::string::npos)
      << busy.err;
  auto removed = cluster_->cli({"node", "remove", first});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(cluster_->node_state(first), "");
  // Its machine comes back: its old credential is refused, it joins again with the join token
  // under the same name, and takes work.
  cluster_->start_agent(host_of(first));
  EXPECT_TRUE(wait_until([&] { return cluster_->node_state(first) == "ready"; }, 15s))
      << read_file(cluster_->work_dir() + "/" + first + ".log");
}

// The proof of docs/interruptions.md across machines: one checkpointing program through four
// interruptions of different causes, its checkpoint following it through the shared root.
TEST_F(NetnsClusterTest, ACheckpointingJobSurvivesADrainASpotNoticeAnAgentStopAndAPreemption) {
  std::string id = cluster_->submit(
      {"--gpus", "2", "--priority", "low", "--", "python3", "-c", kCheckpointCounter});
  std::string first = wait_running(id, 1);
  ASSERT_FALSE(first.empty()) << cluster_->job(id).dump();
  std::this_thread::sleep_for(1200ms);
  // 1. Drain.
  ASSERT_EQ(cluster_->cli({"node", "drain", first}).exit_code, 0);
  std::string second = wait_running(id, 2);
  ASSERT_FALSE(second.empty()) << cluster_->job(id).dump();
  ASSERT_EQ(cluster_->cli({"node", "uncordon", first}).exit_code, 0);
  std::this_thread::sleep_for(1200ms);
  // 2. A spot notice: the node is gone after 3 s.
  auto notice = cluster_->cli({"node", "interrupt", second, "--in", "3s"});
  ASSERT_EQ(notice.exit_code, 0) << notice.err;
  std::string third = wait_running(id, 3);
  ASSERT_FALSE(third.empty()) << cluster_->job(id).dump();
  EXPECT_NE(third, second);
  std::this_thread::sleep_for(1200ms);
  // 3. Its agent is stopped.
  ASSERT_TRUE(cluster_->stop_agent(host_of(third), 20s));
  std::string fourth = wait_running(id, 4);
  ASSERT_FALSE(fourth.empty()) << cluster_->job(id).dump();
  EXPECT_NE(fourth, third);
  std::this_thread::sleep_for(1200ms);
  // 4. Preemption: the only node left is wanted by a high-priority job.
  std::string urgent =
      cluster_->submit({"--gpus", "2", "--priority", "high", "--", "sleep", "600"});
  ASSERT_TRUE(cluster_->wait_job(
      urgent, [](const json& j) { return j.value("state", "") == "running"; }, 30s))
      << cluster_->job(urgent).dump() << cluster_->job(id).dump();
  ASSERT_EQ(cluster_->cli({"cancel", urgent}).exit_code, 0);
  ASSERT_TRUE(cluster_->wait_job(
      id, [](const json& j) { return j.value("state", "") == "succeeded"; }, 60s))
      << cluster_->job(id).dump();
  std::string log = cluster_->cli({"logs", id}).out;
  EXPECT_NE(log.find("resumed at"), std::string::npos) << log;
  EXPECT_NE(log.find("result 820"), std::string::npos) << log;
  json j = cluster_->job(id);
  ASSERT_EQ(j["attempts"].size(), 5u) << j.dump(2);
  std::vector<std::string> causes;
  for (const auto& a : j["attempts"]) causes.push_back(a["cause"]);
  EXPECT_EQ(causes,
            (std::vector<std::string>{"drain", "spot", "agent-shutdown", "preemption", ""}));
  for (int i : {0, 1, 2, 3}) {
    EXPECT_TRUE(j["attempts"][i]["checkpoint_committed"].get<bool>()) << j["attempts"][i].dump();
    // At most one checkpoint interval (1 s of GPU time on 2 GPUs) lost, with slack for the
    // time the stop takes.
    EXPECT_LT(j["attempts"][i]["gpu_seconds_lost"].get<double>(), 4.0) << j["attempts"][i].dump();
  }
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
  auto joined = lab_->run(1, {GPUCLOUD_BINARY, "agent", "--server", cluster_->url(),
                              "--fingerprint", cluster_->fingerprint(), "--join-token", token,
                              "--data-dir", cluster_->work_dir() + "/late-agent", "--name", "late",
                              "--sim-gpus", "1xT4", "--no-metrics"});
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

// Two tenants on one cluster (docs/security.md): "red" runs as a uid of the agents' range,
// "blue" as its configured uid; each has a member token.
const std::string kRedToken = "red-member-token-0123456789";
const std::string kBlueToken = "blue-member-token-0123456789";
constexpr int kBlueUid = 61702;

class NetnsHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = NetnsLab::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    config_ = std::make_unique<TempDir>("/var/tmp");
    std::string config = config_->path() + "/gpucloud.yaml";
    std::ofstream(config) << "tenants:\n"
                             "  - {name: red}\n"
                             "  - {name: blue, uid: " +
                                 std::to_string(kBlueUid) +
                                 "}\n"
                                 "tokens:\n"
                                 "  - {name: red-member, role: member, tenants: [red], sha256: " +
                                 net::sha256_hex(kRedToken) +
                                 "}\n"
                                 "  - {name: blue-member, role: member, tenants: [blue], "
                                 "sha256: " +
                                 net::sha256_hex(kBlueToken) + "}\n";
    lab_ = std::make_unique<NetnsLab>(2);
    cluster_ = std::make_unique<NetnsCluster>(*lab_, 2, ClusterTimeouts{},
                                              std::vector<std::string>{"--config", config});
  }
  void TearDown() override {
    cluster_.reset();
    lab_.reset();
    config_.reset();
  }

  std::string submit_as(const std::string& token, const std::vector<std::string>& args) const {
    std::vector<std::string> run{"run"};
    run.insert(run.end(), args.begin(), args.end());
    auto r = cluster_->cli_as(token, run);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }

  // The newest slot of agent i's state file (the node's id and credential).
  json agent_state(int i) const {
    json best;
    for (const char* slot : {".0", ".1"}) {
      json s = json::parse(read_file(cluster_->agent_dir(i) + "/agent-state.json" + slot), nullptr,
                           false);
      if (s.is_discarded()) continue;
      if (best.is_null() || s.value("generation", 0) > best.value("generation", 0)) best = s;
    }
    return best;
  }

  std::unique_ptr<TempDir> config_;
  std::unique_ptr<NetnsLab> lab_;
  std::unique_ptr<NetnsCluster> cluster_;
};

// One HTTP request from a host's network namespace (so that its source address is that host's),
// over TLS pinned by the server's fingerprint.
struct Answer {
  int status = 0;
  std::string body;
};
Answer request_from(const NetnsLab& lab, int host, const NetnsCluster& cluster,
                    const std::string& method, const std::string& target, const std::string& body,
                    const std::string& token) {
  Answer answer;
  // A network namespace is per thread: a thread of its own enters the host's.
  std::thread t([&] {
    int fd = ::open(("/run/netns/" + lab.ns(host)).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
      answer.body = "cannot enter the namespace of host " + std::to_string(host);
      if (fd >= 0) ::close(fd);
      return;
    }
    ::close(fd);
    net::TlsClientOptions tls;
    tls.fingerprint = cluster.fingerprint();
    auto client = net::HttpClient::create(cluster.url(), tls);
    if (!client) {
      answer.body = client.error().message;
      return;
    }
    std::map<std::string, std::string> headers;
    if (!token.empty()) headers["Authorization"] = "Bearer " + token;
    auto r = (*client)->request(method, target, body, headers, 10'000);
    if (!r) {
      answer.body = r.error().message;
      return;
    }
    answer.status = r->status;
    answer.body = r->body;
  });
  t.join();
  return answer;
}

TEST_F(NetnsHostile, AHostileTenantsJobReachesNothingOfThePlatformOrOfAnotherTenant) {
  const std::string shared = cluster_->shared_dir();
  // The server's TLS key and its directory are closed to every other user.
  for (const std::string& f :
       {cluster_->server_dir() + "/tls", cluster_->server_dir() + "/tls/server.key"}) {
    struct stat st {};
    ASSERT_EQ(::stat(f.c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 077, 0u) << f << " is open to others";
  }
  // The job's own copy of the client: the build dir may lie under the host's /tmp, which the
  // job does not see.
  const std::string client = shared + "/gpucloud";
  fs::copy_file(GPUCLOUD_BINARY, client, fs::copy_options::overwrite_existing);
  fs::permissions(client, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  // Blue's job on agent1: a secret in its env, its job dir and its output; it records its pid
  // and waits for the test's go, then checks its secret is intact and ends by itself.
  std::string blue = submit_as(
      kBlueToken,
      {"--env", "SECRET=blue-env-secret", "--selector", "host=agent1", "--", "/bin/sh", "-c",
       "D=$GPUCLOUD_ATTEMPT_DIR; echo blue-file-secret > $D/secret; echo $$ > $D/pid.t && "
       "mv $D/pid.t $D/pid; echo blue-log-secret; while [ ! -e " +
           shared +
           "/blue-go ]; do sleep 0.1; done; grep -q blue-file-secret $D/secret && echo intact"});
  ASSERT_FALSE(blue.empty());
  const std::string blue_dir = cluster_->agent_dir(1) + "/attempts/" + blue + ".1.0";
  int blue_pid = 0;
  ASSERT_TRUE(wait_until([&] {
    blue_pid = std::atoi(read_file(blue_dir + "/job/pid").c_str());
    return blue_pid > 0 && cluster_->job(blue).value("state", "") == "running" &&
           fs::exists(cluster_->server_dir() + "/logs/" + blue + ".1.0.log");
  })) << cluster_->job(blue).dump();
  ASSERT_EQ(::kill(blue_pid, 0), 0);
  // Node 2's agent stops now: it is down by the time a stolen credential claims its name.
  cluster_->kill_agent(2);

  // Red's job on the same node tries every way in.
  std::string state_file = cluster_->agent_dir(1) + "/agent-state.json.0";
  if (!fs::exists(state_file)) state_file = cluster_->agent_dir(1) + "/agent-state.json.1";
  const std::string server = cluster_->server_dir();
  const std::string pid = std::to_string(blue_pid);
  const std::string api = "env GPUCLOUD_ADDR=" + cluster_->url() +
                          " GPUCLOUD_FINGERPRINT=" + cluster_->fingerprint() + " ";
  std::vector<std::string> attacks = {
      "cat " + server + "/admin.token",
      "ls " + server,
      "cat " + server + "/state.db",
      "cat " + server + "/logs/" + blue + ".1.0.log",
      "cat " + state_file,
      "ls " + cluster_->agent_dir(1) + "/attempts",
      "cat " + blue_dir + "/launch.json",
      "cat " + blue_dir + "/output.log",
      "ls " + blue_dir,
      "ls " + blue_dir + "/job",
      "cat " + blue_dir + "/job/secret",
      "sh -c 'echo red-was-here > " + blue_dir + "/job/secret'",
      "kill -9 " + pid,
      "cat /proc/" + pid + "/environ",
      // The API from the node's network: no token, a guessed one, a guessed agent path.
      api + "GPUCLOUD_TOKEN= " + client + " show " + blue,
      api + "GPUCLOUD_TOKEN=guessed-token-0123456789 " + client + " logs " + blue,
      api + "GPUCLOUD_TOKEN=guessed-token-0123456789 " + client + " nodes",
  };
  std::string script =
      "cd \"$GPUCLOUD_ATTEMPT_DIR\"\n"
      "try() { if out=$(\"$@\" 2>&1); then echo \"LEAK $*: $out\"; "
      "else echo \"DENIED $*: $out\" | tr '\\n' ' '; echo; fi; }\n";
  for (const auto& a : attacks) script += "try " + a + "\n";
  script += "echo uid=$(id -u)\n";
  std::string red =
      submit_as(kRedToken, {"--selector", "host=agent1", "--", "/bin/sh", "-c", script});
  ASSERT_TRUE(cluster_->wait_job(red, [](const json& j) {
    return j.value("state", "") == "succeeded";
  })) << cluster_->job(red).dump();
  EXPECT_EQ(cluster_->job(red)["replicas"][0].value("node", ""), "agent1");
  std::string out;
  ASSERT_TRUE(wait_until([&] {
    out = cluster_->cli_as(kRedToken, {"logs", red}).out;
    return out.find("uid=") != std::string::npos;
  })) << out;

  EXPECT_EQ(out.find("LEAK"), std::string::npos) << out;
  // Every file attacked exists: its refusal is the permissions', not a wrong path.
  for (const std::string& file :
       {server + "/admin.token", server + "/state.db", server + "/logs/" + blue + ".1.0.log",
        state_file, blue_dir + "/launch.json", blue_dir + "/output.log", blue_dir + "/job/secret"})
    EXPECT_TRUE(fs::exists(file)) << file;
  for (const std::string& secret :
       {std::string("blue-env-secret"), std::string("blue-file-secret"),
        std::string("blue-log-secret"), read_file(server + "/admin.token"),
        agent_state(1).value("credential", "<none>")}) {
    EXPECT_EQ(out.find(secret), std::string::npos) << secret << " leaked:\n" << out;
  }
  std::istringstream lines(out);
  std::string line;
  int denied = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("DENIED", 0) != 0) continue;
    ++denied;
    if (line.find("kill") != std::string::npos) {
      EXPECT_NE(line.find("Operation not permitted"), std::string::npos) << line;
    } else if (line.find("GPUCLOUD_ADDR") != std::string::npos) {
      EXPECT_NE(line.find("is GPUCLOUD_TOKEN set"), std::string::npos) << "a 401: " << line;
    } else {
      EXPECT_NE(line.find("Permission denied"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(denied, static_cast<int>(attacks.size())) << out;
  // Red runs as a uid of the agent's range, not blue's nor root.
  size_t at = out.find("uid=");
  int red_uid = at == std::string::npos ? -1 : std::atoi(out.c_str() + at + 4);
  EXPECT_GE(red_uid, 200000) << out;

  // Red's member token sees nothing of blue's job.
  auto red_ps = cluster_->cli_as(kRedToken, {"ps", "--all", "--json"});
  ASSERT_EQ(red_ps.exit_code, 0) << red_ps.err;
  for (const auto& j : json::parse(red_ps.out)) EXPECT_NE(j.value("id", ""), blue) << j.dump();
  for (const char* verb : {"show", "logs", "cancel"}) {
    auto r = cluster_->cli_as(kRedToken, {verb, blue});
    EXPECT_NE(r.exit_code, 0) << verb;
    EXPECT_NE(r.err.find("no job"), std::string::npos) << verb << ": " << r.err;
  }

  // Blue's job ran on untouched, and ends normally once told to.
  EXPECT_EQ(cluster_->job(blue).value("state", ""), "running");
  EXPECT_EQ(::kill(blue_pid, 0), 0);
  std::ofstream(shared + "/blue-go") << "go\n";
  EXPECT_TRUE(cluster_->wait_job(blue, [](const json& j) {
    return j.value("state", "") == "succeeded";
  })) << cluster_->job(blue).dump();
  EXPECT_TRUE(wait_until([&] {
    return cluster_->cli_as(kBlueToken, {"logs", blue}).out == "blue-log-secret\nintact\n";
  })) << cluster_->cli_as(kBlueToken, {"logs", blue}).out;

  // From the node's network, without a token: the agent and admin paths answer 401 too.
  for (const std::string& path :
       {std::string("/v1/agent/poll"), std::string("/v1/tokens"), "/v1/jobs/" + blue}) {
    bool poll = path == "/v1/agent/poll";
    Answer a = request_from(*lab_, 1, *cluster_, poll ? "POST" : "GET", path, poll ? "{}" : "", "");
    EXPECT_EQ(a.status, 401) << path << ": " << a.body;
  }

  // Node 1's credential, stolen from its state file, registers as node 2 (down): refused,
  // whichever id it claims, and the server logs where the attempt came from.
  json one = agent_state(1), two = agent_state(2);
  std::string cred1 = one.value("credential", ""), id1 = one.value("node_id", "");
  std::string id2 = two.value("node_id", "");
  ASSERT_FALSE(cred1.empty()) << one.dump();
  ASSERT_FALSE(id2.empty()) << two.dump();
  ASSERT_TRUE(wait_until([&] { return cluster_->node_state("agent2") == "down"; }, 15s));
  json node2 = {
      {"name", "agent2"}, {"cpu_milli", 4000}, {"memory_mib", 8192}, {"gpus", json::array()}};
  // The server's log lines that refuse a registration from node 1's host.
  auto refusals = [&] {
    std::vector<std::string> found;
    std::istringstream log(read_file(cluster_->server_log()));
    for (std::string l; std::getline(log, l);)
      if (l.find("register refused from " + NetnsLab::ip(1)) != std::string::npos)
        found.push_back(l);
    return found;
  };
  for (const std::string& claimed : {id1, id2}) {
    size_t before = refusals().size();
    Answer a = request_from(
        *lab_, 1, *cluster_, "POST", "/v1/agent/register",
        json{{"node", node2}, {"node_id", claimed}, {"credential", cred1}}.dump(), cred1);
    EXPECT_EQ(a.status, 403) << claimed << ": " << a.body;
    EXPECT_TRUE(wait_until([&] { return refusals().size() > before; }, 5s))
        << "no log line names the source of the refusal (claimed id " << claimed << "):\n"
        << read_file(cluster_->server_log());
    auto lines = refusals();
    if (lines.size() > before) {
      EXPECT_NE(lines.back().find("(token 'agent1', name 'agent2')"), std::string::npos)
          << lines.back();
    }
  }
  EXPECT_EQ(cluster_->node_state("agent2"), "down");
  // Node 2 itself comes back with its own credential and takes work again.
  cluster_->start_agent(2);
  EXPECT_TRUE(wait_until([&] { return cluster_->node_state("agent2") == "ready"; }));
  EXPECT_EQ(agent_state(2).value("node_id", ""), id2);
}

// Agents serve their GPU metrics on every address (port 9400, the default): discovery points a
// scraper at the address each node registered from.
TEST_F(NetnsClusterTest, DiscoveryPointsAtEachAgentsMetricsOnItsOwnAddress) {
  Answer sd =
      request_from(*lab_, 1, *cluster_, "GET", "/v1/sd/agents", "", cluster_->admin_token());
  ASSERT_EQ(sd.status, 200) << sd.body;
  auto groups = nlohmann::json::parse(sd.body, nullptr, false);
  ASSERT_TRUE(groups.is_array()) << sd.body;
  std::set<std::string> targets;
  for (const auto& g : groups) targets.insert(g["targets"][0].get<std::string>());
  EXPECT_EQ(targets, (std::set<std::string>{NetnsLab::ip(1) + ":9400", NetnsLab::ip(2) + ":9400",
                                            NetnsLab::ip(3) + ":9400"}))
      << sd.body;
}

}  // namespace
}  // namespace gpucloud::testing
