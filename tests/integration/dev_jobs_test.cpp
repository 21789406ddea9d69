// End-to-end: a real `gpucloud dev` with simulated GPUs, driven through the real CLI.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

std::set<std::string> split(const std::string& s, char sep) {
  std::set<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep))
    if (!item.empty()) out.insert(item);
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class DevJobs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new DevCluster({"--sim-gpus", "8xA100-80GB"}, {{"AGENT_ONLY_SECRET", "leak"}});
  }
  static void TearDownTestSuite() { delete cluster_; }
  static DevCluster* cluster_;
};
DevCluster* DevJobs::cluster_ = nullptr;

TEST_F(DevJobs, JobSeesItsGpusAndLogsAreKept) {
  auto& c = *cluster_;
  auto r = c.cli({"run", "--gpus", "2", "--wait", "--", "sh", "-c",
                  "echo $CUDA_VISIBLE_DEVICES; echo to-stderr >&2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = trim(r.out);
  auto logs = c.cli({"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  std::string first_line = logs.out.substr(0, logs.out.find('\n'));
  auto uuids = split(first_line, ',');
  ASSERT_EQ(uuids.size(), 2u) << logs.out;
  EXPECT_NE(logs.out.find("to-stderr"), std::string::npos);
  // The uuids are the ones the job record and the node list name.
  json job = c.job(id);
  EXPECT_EQ(job["state"], "succeeded");
  EXPECT_EQ(job["exit_code"], 0);
  std::set<std::string> recorded;
  for (const auto& g : job["replicas"][0]["gpus"]) recorded.insert(g["uuid"].get<std::string>());
  EXPECT_EQ(recorded, uuids);
  auto nodes = json::parse(c.cli({"nodes", "--json"}).out);
  std::set<std::string> known;
  for (const auto& g : nodes[0]["gpus"]) known.insert(g["uuid"].get<std::string>());
  for (const auto& u : uuids) EXPECT_TRUE(known.count(u)) << u;
}

TEST_F(DevJobs, ChosenGpusAreNvlinkConnectedOnOneNumaNode) {
  auto& c = *cluster_;
  std::string id = c.submit({"--gpus", "4", "--", "true"});
  json job = c.wait_done(id);
  auto nodes = json::parse(c.cli({"nodes", "--json"}).out);
  std::map<std::string, json> by_uuid;
  for (const auto& g : nodes[0]["gpus"]) by_uuid[g["uuid"]] = g;
  std::set<int> numa, indices;
  for (const auto& g : job["replicas"][0]["gpus"]) {
    numa.insert(by_uuid[g["uuid"]]["numa_node"].get<int>());
    indices.insert(g["index"].get<int>());
  }
  EXPECT_EQ(numa.size(), 1u) << job.dump();
  for (int a : indices) {
    auto peers = by_uuid.begin()->second;  // find a's record
    for (const auto& [u, g] : by_uuid)
      if (g["index"] == a) peers = g["nvlink_peers"];
    for (int b : indices)
      if (a != b) {
        EXPECT_NE(std::find(peers.begin(), peers.end(), b), peers.end()) << a << "-" << b;
      }
  }
}

TEST_F(DevJobs, WaitExitsWithTheJobsExitCode) {
  auto& c = *cluster_;
  EXPECT_EQ(c.cli({"run", "--wait", "--", "sh", "-c", "exit 3"}).exit_code, 3);
  EXPECT_EQ(c.cli({"run", "--wait", "--", "sh", "-c", "kill -TERM $$"}).exit_code, 143);
  auto r = c.cli({"run", "--wait", "--", "sh", "-c", "exit 3"});
  json job = c.job(trim(r.out.substr(0, r.out.find('\n'))));
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["exit_code"], 3);
  EXPECT_NE(job["message"].get<std::string>().find("exit code 3"), std::string::npos);
}

TEST_F(DevJobs, EnvironmentIsTheJobsOwnPlusThePlatforms) {
  auto& c = *cluster_;
  auto r = c.cli({"run", "--wait", "--env", "MY_SETTING=42", "--", "/usr/bin/env"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string env = c.cli({"logs", trim(r.out)}).out;
  EXPECT_NE(env.find("MY_SETTING=42"), std::string::npos) << env;
  EXPECT_NE(env.find("GPUCLOUD_JOB_ID=" + trim(r.out)), std::string::npos) << env;
  EXPECT_NE(env.find("GPUCLOUD_ATTEMPT=1"), std::string::npos);
  EXPECT_NE(env.find("GPUCLOUD_ATTEMPT_DIR="), std::string::npos);
  EXPECT_NE(env.find("CUDA_VISIBLE_DEVICES="), std::string::npos);
  EXPECT_EQ(env.find("AGENT_ONLY_SECRET"), std::string::npos)
      << "the agent's environment leaked into the job";
}

TEST_F(DevJobs, WorkdirDefaultsToTheClientsDirectoryAndAMissingOneFailsClearly) {
  auto& c = *cluster_;
  TempDir here;
  auto r =
      run_command({GPUCLOUD_BINARY, "run", "--wait", "--", "pwd"},
                  {{"GPUCLOUD_ADDR", c.address()}, {"GPUCLOUD_TOKEN", c.token()}}, here.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(trim(c.cli({"logs", trim(r.out)}).out), here.path());
  auto bad = c.cli({"run", "--wait", "--workdir", "/no/such/dir", "--", "true"});
  EXPECT_NE(bad.exit_code, 0);
  json job = c.job(trim(bad.out));
  EXPECT_EQ(job["state"], "failed");
  EXPECT_NE(job["message"].get<std::string>().find("/no/such/dir does not exist"),
            std::string::npos)
      << job["message"];
}

TEST_F(DevJobs, CancelStopsWithSigtermThenSigkillAfterGrace) {
  auto& c = *cluster_;
  std::string polite = c.submit({"--", "sleep", "60"});
  std::string stubborn = c.submit({"--grace", "1s", "--", "sh", "-c",
                                   "trap '' TERM; echo ready; while true; do sleep 0.1; done"});
  ASSERT_TRUE(wait_until([&] {
    return c.job(polite)["state"] == "running" && c.job(stubborn)["state"] == "running";
  }));
  ASSERT_TRUE(wait_until([&] {
    return c.cli({"logs", stubborn}).out.find("ready") != std::string::npos;
  }));
  EXPECT_EQ(c.cli({"cancel", polite}).exit_code, 0);
  EXPECT_EQ(c.cli({"cancel", stubborn}).exit_code, 0);
  json a = c.wait_done(polite), b = c.wait_done(stubborn);
  EXPECT_EQ(a["state"], "cancelled");
  EXPECT_EQ(a["exit_code"], 143);
  EXPECT_EQ(b["state"], "cancelled");
  EXPECT_EQ(b["exit_code"], 137);
  // Cancelling again is a conflict, not a crash.
  auto again = c.cli({"cancel", polite});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already ended"), std::string::npos) << again.err;
}

TEST_F(DevJobs, ConcurrentJobsNeverShareAGpu) {
  auto& c = *cluster_;
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i)
    ids.push_back(c.submit({"--gpus", "2", "--", "sh", "-c", "sleep 0.4"}));
  struct Span {
    double start, end;
    std::set<std::string> gpus;
  };
  std::vector<Span> spans;
  for (const auto& id : ids) {
    json j = c.wait_done(id);
    ASSERT_EQ(j["state"], "succeeded") << j.dump();
    Span s{j["started_at_ms"].get<double>(), j["finished_at_ms"].get<double>(), {}};
    for (const auto& g : j["replicas"][0]["gpus"]) s.gpus.insert(g["uuid"]);
    spans.push_back(s);
  }
  int overlapping_pairs = 0;
  for (size_t a = 0; a < spans.size(); ++a)
    for (size_t b = a + 1; b < spans.size(); ++b)
      if (spans[a].start < spans[b].end && spans[b].start < spans[a].end) {
        ++overlapping_pairs;
        for (const auto& g : spans[a].gpus)
          EXPECT_FALSE(spans[b].gpus.count(g)) << "GPU " << g << " shared";
      }
  EXPECT_GT(overlapping_pairs, 0) << "jobs should have run concurrently";
}

TEST_F(DevJobs, LogsFollowStreamsUntilTheJobEnds) {
  auto& c = *cluster_;
  std::string id =
      c.submit({"--", "sh", "-c", "for i in 1 2 3 4 5; do echo line-$i; sleep 0.2; done"});
  auto r = c.cli({"logs", "-f", id});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "line-1\nline-2\nline-3\nline-4\nline-5\n");
}

TEST_F(DevJobs, MaxRuntimeStopsTheJobAndFailsItEvenIfItExitsCleanly) {
  auto& c = *cluster_;
  auto r = c.cli({"run", "--wait", "--max-runtime", "500ms", "--grace", "1s", "--restart",
                  "on-failure", "--", "sh", "-c",
                  "trap 'echo got-term; exit 0' TERM; while true; do sleep 0.05; done"});
  std::string id = trim(r.out);
  json j = c.job(id);
  EXPECT_EQ(j["state"], "failed") << j.dump();
  EXPECT_EQ(j["attempt"], 1) << "an overrun is not retried";
  EXPECT_NE(j["message"].get<std::string>().find("max_runtime"), std::string::npos) << j["message"];
  EXPECT_NE(c.cli({"logs", id}).out.find("got-term\n"), std::string::npos);
}

TEST_F(DevJobs, LargeOutputArrivesWhole) {
  auto& c = *cluster_;
  // 3 MB in one burst, then exit: the end is reported only once all of it has been shipped.
  auto r =
      c.cli({"run", "--wait", "--", "sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string out = c.cli({"logs", trim(r.out)}).out;
  EXPECT_EQ(out.size(), 3000001u);
  EXPECT_EQ(out.find_first_not_of('x'), 3000000u);
}

TEST_F(DevJobs, SubmitReadsTheSameSpecFromYaml) {
  auto& c = *cluster_;
  std::string file = c.work_dir() + "/job.yaml";
  std::ofstream(file)
      << "name: from-yaml\ncommand: [sh, -c, 'echo $GREETING']\ngpus: 1\nenv:\n  GREETING: hello\n";
  auto r = c.cli({"submit", file, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = trim(r.out);
  EXPECT_EQ(c.job(id)["name"], "from-yaml");
  EXPECT_EQ(c.cli({"logs", id}).out, "hello\n");
  std::ofstream(file) << "name: x\ncommand: [true]\ngpus: \"2\"\n";
  auto bad = c.cli({"submit", file});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("gpus: expected a whole number"), std::string::npos) << bad.err;
  std::ofstream(file) << "name: [unclosed\n";
  bad = c.cli({"submit", file});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("job.yaml:"), std::string::npos) << bad.err;
}

TEST_F(DevJobs, PsListsJobsAsJsonAndShowAcceptsAPrefix) {
  auto& c = *cluster_;
  std::string id = c.submit({"--name", "listed", "--", "true"});
  c.wait_done(id);
  json all = json::parse(c.cli({"ps", "--all", "--json"}).out);
  ASSERT_TRUE(all.is_array());
  bool found = false;
  for (const auto& j : all) found |= j["id"] == id && j["name"] == "listed";
  EXPECT_TRUE(found);
  for (const char* key : {"id", "name", "tenant", "state", "exit_code", "pending_reason", "attempt",
                          "replicas", "created_at", "started_at", "finished_at", "spec"})
    EXPECT_TRUE(all[0].contains(key)) << key;
  EXPECT_EQ(c.job(id.substr(0, 20))["id"], id);
  auto missing = c.cli({"show", "ffffffffffff"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no job"), std::string::npos);
}

}  // namespace
}  // namespace gpucloud::testing
