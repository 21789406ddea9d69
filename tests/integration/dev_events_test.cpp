// The events feed on a real `gpucloud dev` (docs/api.md, "Events"): `gpucloud events -f`
// followers see job lifecycle and node changes as they happen, a member only its tenants' jobs;
// following one job ends when the job ends; bad queries get 400 with the reason.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "dev_cluster.h"
#include "member_cluster.h"
#include "prometheus_harness.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

class DevEvents : public MemberCluster {
 protected:
  /// `gpucloud events ARGS` running in the background as the holder of token, its output in
  /// a file.
  std::unique_ptr<ChildProcess> follow(const std::string& token,
                                       const std::vector<std::string>& args,
                                       const std::string& out) {
    std::vector<std::string> argv = {"/usr/bin/env", "GPUCLOUD_ADDR=" + cluster_->address(),
                                     "GPUCLOUD_TOKEN=" + token, GPUCLOUD_BINARY, "events"};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<ChildProcess>(argv, out);
  }
  /// The JSON lines a follower printed so far.
  static std::vector<json> lines(const std::string& file) {
    std::vector<json> out;
    std::istringstream in(read_file(file));
    for (std::string line; std::getline(in, line);)
      if (auto j = json::parse(line, nullptr, false); !j.is_discarded()) out.push_back(j);
    return out;
  }
  static std::vector<std::string> types_of(const std::vector<json>& events,
                                           const std::string& job) {
    std::vector<std::string> out;
    for (const auto& e : events)
      if (e.value("job", "") == job) out.push_back(e["type"]);
    return out;
  }
};

TEST_F(DevEvents, FollowersSeeJobAndNodeEventsAsTheyHappenAndAMemberOnlyItsTenants) {
  std::string admin_out = dir_.path() + "/admin.jsonl", alice_out = dir_.path() + "/alice.jsonl";
  auto admin = follow(cluster_->token(), {"-f", "--json"}, admin_out);
  auto alice = follow(kAlice, {"-f", "--json"}, alice_out);
  // Both have read the feed's head before anything below happens.
  ASSERT_TRUE(wait_until([&] {
    return read_file(admin_out).find("\"joined\"") != std::string::npos &&
           read_file(alice_out).find("\"joined\"") != std::string::npos;
  })) << read_file(admin_out)
      << read_file(alice_out);

  std::string nlp = cluster_->submit({"--tenant", "nlp", "--gpus", "1", "--", "true"});
  std::string vision = cluster_->submit({"--tenant", "vision", "--gpus", "1", "--", "true"});
  cluster_->wait_done(nlp);
  cluster_->wait_done(vision);
  ASSERT_EQ(cluster_->cli({"node", "cordon", "dev-0"}).exit_code, 0);
  ASSERT_EQ(cluster_->cli({"node", "uncordon", "dev-0"}).exit_code, 0);
  for (const auto& out : {admin_out, alice_out})
    ASSERT_TRUE(wait_until([&] { return read_file(out).find("uncordoned") != std::string::npos; },
                           std::chrono::seconds(10)))
        << read_file(out);

  std::vector<std::string> lifecycle = {"submitted", "placed", "running", "exited", "ended"};
  auto seen_by_admin = lines(admin_out), seen_by_alice = lines(alice_out);
  EXPECT_EQ(types_of(seen_by_admin, nlp), lifecycle) << read_file(admin_out);
  EXPECT_EQ(types_of(seen_by_admin, vision), lifecycle) << read_file(admin_out);
  EXPECT_EQ(types_of(seen_by_alice, vision), lifecycle) << read_file(alice_out);
  // Another tenant's jobs stay invisible to the member; node changes are for everyone.
  EXPECT_TRUE(types_of(seen_by_alice, nlp).empty()) << read_file(alice_out);
  std::vector<std::string> node_changes;
  for (const auto& e : seen_by_alice)
    if (e["kind"] == "node") node_changes.push_back(e["type"]);
  EXPECT_EQ(node_changes, (std::vector<std::string>{"joined", "cordoned", "uncordoned"}));
  // Each event carries its seq, in order, its time, tenant and node.
  for (size_t i = 1; i < seen_by_admin.size(); ++i)
    EXPECT_LT(seen_by_admin[i - 1]["seq"], seen_by_admin[i]["seq"]);
  for (const auto& e : seen_by_alice)
    if (e.value("job", "") == vision && e["type"] == "placed") {
      EXPECT_EQ(e["tenant"], "vision");
      EXPECT_EQ(e["node"], "dev-0");
      EXPECT_EQ(e["at"].get<std::string>().substr(0, 2), "20");
    }
}

TEST_F(DevEvents, FollowingOneJobShowsItsHistoryOnceAndEndsWhenTheJobEnds) {
  std::string job = cluster_->submit({"--tenant", "vision", "--gpus", "1", "--", "sleep", "2"});
  auto r = cluster_->cli({"events", "-f", job, "--json"}, 30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> types;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) types.push_back(json::parse(line)["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"submitted", "placed", "running", "exited", "ended"}))
      << r.out;
  // Without -f: the history as a table, or as a JSON array.
  auto table = cluster_->cli({"events", job});
  EXPECT_NE(table.out.find("ended"), std::string::npos) << table.out;
  EXPECT_EQ(json::parse(cluster_->cli({"events", job, "--json"}).out).size(), 5u);
  // A member cannot follow another tenant's job.
  std::string other = cluster_->submit({"--tenant", "nlp", "--gpus", "1", "--", "true"});
  std::vector<std::string> argv = {GPUCLOUD_BINARY, "events", "-f", other};
  auto refused = run_command(
      argv, {{"GPUCLOUD_ADDR", cluster_->address()}, {"GPUCLOUD_TOKEN", kAlice}}, "", 10);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("no job"), std::string::npos) << refused.err;
}

TEST_F(DevEvents, APollWithNothingNewWaitsAndBadQueriesAreRefusedWithTheReason) {
  std::string token = cluster_->token();
  ApiAnswer head = api_call(cluster_->address(), "GET", "/v1/events?limit=1", "", token);
  ASSERT_EQ(head.status, 200);
  int64_t next = head.body["next"];
  auto started = std::chrono::steady_clock::now();
  ApiAnswer empty =
      api_call(cluster_->address(), "GET",
               "/v1/events?after=" + std::to_string(next) + "&wait_ms=400", "", token);
  auto waited = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(empty.status, 200);
  EXPECT_TRUE(empty.body["events"].empty()) << empty.body.dump();
  EXPECT_EQ(empty.body["next"], next);
  EXPECT_GE(waited, std::chrono::milliseconds(350));

  for (const auto& [query, reason] : std::vector<std::pair<std::string, std::string>>{
           {"limit=0", "limit: '0' is not a whole number from 1 to 1000"},
           {"limit=1e3", "limit: '1e3'"},
           {"after=-1", "after: '-1'"},
           {"wait_ms=600000", "wait_ms: '600000' is not a whole number from 0 to 60000"},
           {"kind=gpu", "kind: 'gpu' is not job or node"},
           {"tenant=a%2Fb", "tenant 'a/b' is not a tenant name"},
           {"color=red", "color: unknown parameter; expected after, job, node"}}) {
    ApiAnswer a = api_call(cluster_->address(), "GET", "/v1/events?" + query, "", token);
    EXPECT_EQ(a.status, 400) << query;
    EXPECT_NE(a.message().find(reason), std::string::npos) << query << ": " << a.message();
  }
  EXPECT_EQ(api_call(cluster_->address(), "POST", "/v1/events", "{}", token).status, 405);
  EXPECT_EQ(api_call(cluster_->address(), "GET", "/v1/events?job=ffff", "", token).status, 404);
  EXPECT_EQ(api_call(cluster_->address(), "GET", "/v1/events", "", "").status, 401);
}

TEST_F(DevEvents, AHeldPollForOneJobIgnoresOtherJobsEventsAndAnswersOnItsOwn) {
  std::string token = cluster_->token();
  std::string slow = cluster_->submit({"--tenant", "vision", "--gpus", "1", "--", "sleep", "2"});
  ASSERT_TRUE(wait_until([&] { return cluster_->job(slow)["state"] == "running"; }));
  ApiAnswer head =
      api_call(cluster_->address(), "GET", "/v1/events?limit=1&job=" + slow, "", token);
  ASSERT_EQ(head.status, 200);
  ApiAnswer held;
  std::thread poll([&] {
    held = api_call(cluster_->address(), "GET",
                    "/v1/events?job=" + slow +
                        "&wait_ms=20000&after=" + std::to_string(head.body["next"].get<int64_t>()),
                    "", token);
  });
  // Another job's whole lifecycle happens while the poll is held.
  std::string other = cluster_->submit({"--tenant", "nlp", "--gpus", "1", "--", "true"});
  cluster_->wait_done(other);
  poll.join();
  ASSERT_EQ(held.status, 200);
  ASSERT_FALSE(held.body["events"].empty()) << held.body.dump();
  for (const auto& e : held.body["events"]) EXPECT_EQ(e["job"], slow) << held.body.dump();
  EXPECT_EQ(held.body["events"][0]["type"], "exited") << held.body.dump();
}

}  // namespace
}  // namespace gpucloud::testing
