#include "model/agent_protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpucloud {
namespace {

using json = nlohmann::json;

Allocation sample_allocation() {
  Allocation a;
  a.job_id = "0190a1b2c3d4";
  a.attempt = 2;
  a.rank = 1;
  a.replicas = 4;
  a.key = replica_key(a.job_id, a.attempt, a.rank);
  a.command = {"torchrun", "train.py"};
  a.env = {{"SEED", "7"}};
  a.workdir = "/srv/x";
  a.gpus = {{2, "GPU-2222", 1000}, {3, "GPU-3333", 1000}};
  a.cpu_milli = 16'000;
  a.memory_mib = 65'536;
  a.grace_ms = 10'000;
  a.max_runtime_ms = 3'600'000;
  return a;
}

TEST(ReplicaKey, IsJobAttemptRank) {
  EXPECT_EQ(replica_key("abcd", 3, 0), "abcd.3.0");
}

TEST(PollRequest, RoundTrips) {
  PollRequest r;
  r.node_id = "node-1";
  r.applied_version = 42;
  r.running = {"abcd.1.0", "beef.2.1"};
  r.events = {{7, "abcd.1.0", "started", 0, 0, false, false, false, "", 1'000},
              {8, "beef.2.1", "exited", 137, 9, true, false, true, "killed by SIGKILL", 2'000}};
  r.logs = {{"abcd.1.0", 4096, "aGVsbG8K"}};
  r.hold_ms = 25'000;
  auto back = poll_request_from_json(json::parse(poll_request_to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->node_id, "node-1");
  EXPECT_EQ(back->applied_version, 42);
  EXPECT_EQ(back->running, r.running);
  EXPECT_EQ(back->hold_ms, 25'000);
  ASSERT_EQ(back->events.size(), 2u);
  const ReplicaEvent& e = back->events[1];
  EXPECT_EQ(e.seq, 8);
  EXPECT_EQ(e.key, "beef.2.1");
  EXPECT_EQ(e.type, "exited");
  EXPECT_EQ(e.exit_code, 137);
  EXPECT_EQ(e.signal, 9);
  EXPECT_TRUE(e.lost);
  EXPECT_FALSE(e.failed_to_start);
  EXPECT_TRUE(e.over_runtime);
  EXPECT_EQ(e.message, "killed by SIGKILL");
  EXPECT_EQ(e.at, 2'000);
  ASSERT_EQ(back->logs.size(), 1u);
  EXPECT_EQ(back->logs[0].key, "abcd.1.0");
  EXPECT_EQ(back->logs[0].offset, 4096);
  EXPECT_EQ(back->logs[0].data_base64, "aGVsbG8K");
}

// not_started travels only when set, so an older server sees the events it always saw, and an
// older agent's events (without it) read as started.
TEST(ReplicaEvent, NotStartedRoundTripsAndIsAbsentWhenFalse) {
  ReplicaEvent never{9, "abcd.1.0", "exited", -1, 0, true};
  never.not_started = true;
  json j = replica_event_to_json(never);
  EXPECT_EQ(j["not_started"], true);
  auto back = replica_event_from_json(json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->not_started);
  EXPECT_TRUE(back->lost);

  ReplicaEvent lost{10, "abcd.1.0", "exited", -1, 0, true};
  json plain = replica_event_to_json(lost);
  EXPECT_FALSE(plain.contains("not_started")) << plain.dump();
  auto old = replica_event_from_json(plain);
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->not_started);
}

TEST(PollRequest, CarriesGpuReadingsWhenGiven) {
  PollRequest r;
  r.node_id = "n";
  EXPECT_FALSE(poll_request_to_json(r).contains("gpus"));
  r.gpus = {{0, 97, 40'000, 65, 350}, {1, 3, 100, 40, 90}};
  auto back = poll_request_from_json(json::parse(poll_request_to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->gpus.size(), 2u);
  EXPECT_EQ(back->gpus[0].utilization_pct, 97);
  EXPECT_EQ(back->gpus[0].memory_used_mib, 40'000);
  EXPECT_EQ(back->gpus[1].temperature_c, 40);
  EXPECT_EQ(back->gpus[1].power_w, 90);
}

TEST(PollRequest, RejectsOversizedLists) {
  PollRequest r;
  r.node_id = "n";
  json j = poll_request_to_json(r);
  j["running"] = json::array();
  for (int i = 0; i < 10'001; ++i) j["running"].push_back("k");
  auto back = poll_request_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(back.error().message.find("10,000"), std::string::npos) << back.error().message;

  j = poll_request_to_json(r);
  for (int i = 0; i < 10'001; ++i)
    j["events"].push_back({{"seq", i}, {"key", "k"}, {"type", "started"}});
  EXPECT_FALSE(poll_request_from_json(j).ok());

  j = poll_request_to_json(r);
  for (int i = 0; i < 10'001; ++i) j["logs"].push_back({{"key", "k"}, {"offset", 0}, {"data", ""}});
  EXPECT_FALSE(poll_request_from_json(j).ok());
}

TEST(PollRequest, RejectsAHoldBeyondOneMinuteAndMalformedBodies) {
  PollRequest r;
  r.node_id = "n";
  json j = poll_request_to_json(r);
  j["hold_ms"] = 600'000;
  EXPECT_FALSE(poll_request_from_json(j).ok());
  j["hold_ms"] = -1;
  EXPECT_FALSE(poll_request_from_json(j).ok());
  j = poll_request_to_json(r);
  j["events"] = "started";
  EXPECT_FALSE(poll_request_from_json(j).ok());
  j = poll_request_to_json(r);
  j.erase("node_id");
  EXPECT_FALSE(poll_request_from_json(j).ok());
  EXPECT_FALSE(poll_request_from_json(json(nullptr)).ok());
}

TEST(PollResponse, RoundTrips) {
  PollResponse r;
  r.version = 9;
  r.acked_seq = 8;
  r.log_offsets = {{"abcd.1.0", 4096}};
  r.allocations = {sample_allocation()};
  auto back = poll_response_from_json(json::parse(poll_response_to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->version, 9);
  EXPECT_EQ(back->acked_seq, 8);
  EXPECT_EQ(back->log_offsets, r.log_offsets);
  ASSERT_EQ(back->allocations.size(), 1u);
  const Allocation& a = back->allocations[0];
  const Allocation want = sample_allocation();
  EXPECT_EQ(a.key, "0190a1b2c3d4.2.1");
  EXPECT_EQ(a.job_id, want.job_id);
  EXPECT_EQ(a.attempt, 2);
  EXPECT_EQ(a.rank, 1);
  EXPECT_EQ(a.replicas, 4);
  EXPECT_EQ(a.command, want.command);
  EXPECT_EQ(a.env, want.env);
  EXPECT_EQ(a.workdir, "/srv/x");
  ASSERT_EQ(a.gpus.size(), 2u);
  EXPECT_EQ(a.gpus[1].index, 3);
  EXPECT_EQ(a.gpus[1].uuid, "GPU-3333");
  EXPECT_EQ(a.gpus[1].milli, 1000);
  EXPECT_EQ(a.cpu_milli, 16'000);
  EXPECT_EQ(a.memory_mib, 65'536);
  EXPECT_EQ(a.grace_ms, 10'000);
  EXPECT_EQ(a.max_runtime_ms, 3'600'000);
}

TEST(Allocation, CarriesAShareGpuMemoryForItsMpsLimit) {
  Allocation a = sample_allocation();
  EXPECT_FALSE(allocation_to_json(a).contains("gpu_memory_mib")) << "none asked for, none sent";
  a.gpu_memory_mib = 10240;
  auto back = allocation_from_json(allocation_to_json(a));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->gpu_memory_mib, 10240);
  nlohmann::json negative = allocation_to_json(a);
  negative["gpu_memory_mib"] = -1;
  EXPECT_FALSE(allocation_from_json(negative).ok());
}

TEST(Allocation, CarriesTheJobsUserAndReadsOlderServers) {
  Allocation a = sample_allocation();
  a.tenant = "vision";
  a.uid = 61000;
  a.gid = 61001;
  auto back = allocation_from_json(allocation_to_json(a));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->tenant, "vision");
  EXPECT_EQ(back->uid, 61000);
  EXPECT_EQ(back->gid, 61001);
  EXPECT_FALSE(back->allow_root);
  a.uid = a.gid = -1;
  a.allow_root = true;
  EXPECT_TRUE(allocation_from_json(allocation_to_json(a))->allow_root);
  // An older server sends none of them: no tenant, no configured user, never root.
  json old = allocation_to_json(sample_allocation());
  EXPECT_FALSE(old.contains("uid"));
  EXPECT_FALSE(old.contains("allow_root"));
  auto from_old = allocation_from_json(old);
  ASSERT_TRUE(from_old.ok());
  EXPECT_EQ(from_old->tenant, "");
  EXPECT_EQ(from_old->uid, -1);
  EXPECT_FALSE(from_old->allow_root);
  old["uid"] = -5;
  EXPECT_FALSE(allocation_from_json(old).ok());
}

TEST(PollResponse, CarriesIdleWarningsApartFromInterruptions) {
  PollResponse r;
  r.warnings["abcd.1.0"] = {interrupt_cause::kIdle, 1'800'000'000'000, "warning: idle for 1h36m"};
  json j = poll_response_to_json(r);
  EXPECT_FALSE(j.contains("interrupts"));
  auto back = poll_response_from_json(json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->interrupts.empty());
  ASSERT_EQ(back->warnings.count("abcd.1.0"), 1u);
  EXPECT_EQ(back->warnings["abcd.1.0"].cause, "idle");
  EXPECT_EQ(back->warnings["abcd.1.0"].deadline_ms, 1'800'000'000'000);
  j["warnings"] = json::array();
  auto bad = poll_response_from_json(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("warnings must map"), std::string::npos);
}

TEST(PollResponse, RejectsAMalformedAllocation) {
  PollResponse r;
  r.allocations = {sample_allocation()};
  json j = poll_response_to_json(r);
  j["allocations"][0]["gpus"][0]["milli"] = "all";
  auto back = poll_response_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().code, ErrorCode::kInvalidArgument);
}

TEST(PollResponse, NumbersOutOfRangeAreRefusedNamingTheField) {
  // get<int>() used to wrap 1e18 into a plausible attempt number; now each is an error.
  PollResponse r;
  r.allocations = {sample_allocation()};
  struct Case {
    const char* field;
    json value;
  };
  for (const Case& c :
       {Case{"attempt", json(int64_t{1'000'000'000'000'000'000})}, Case{"rank", json(-1)},
        Case{"replicas", json(0)}, Case{"cpu_milli", json(-5)}, Case{"master_port", json(70000)},
        Case{"grace_ms", json(2.5)}}) {
    json j = poll_response_to_json(r);
    j["allocations"][0][c.field] = c.value;
    auto back = poll_response_from_json(j);
    ASSERT_FALSE(back.ok()) << c.field;
    EXPECT_EQ(back.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(back.error().message.find(std::string(c.field) + ": "), std::string::npos)
        << back.error().message;
  }
  // Parsed from text, 0 is an unsigned number in nlohmann: found by fuzz_agent_protocol.
  auto parsed = json::parse(R"({"version": 1, "acked_seq": 0, "log_offsets": {},
      "allocations": [{"key": "k", "job_id": "j", "attempt": 1, "rank": 0, "replicas": 0,
      "command": ["x"], "env": {}, "workdir": "/", "gpus": [], "cpu_milli": 0,
      "memory_mib": 0, "grace_ms": 0, "max_runtime_ms": 0}]})");
  auto zero = poll_response_from_json(parsed);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("replicas: 0 is outside 1.."), std::string::npos)
      << zero.error().message;
  json j = poll_response_to_json(r);
  j["allocations"][0]["gpus"][0]["index"] = 4096;
  auto back = poll_response_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("index: 4096 is outside 0..1023"), std::string::npos)
      << back.error().message;
  j = poll_response_to_json(r);
  j["log_offsets"] = {{"k", -1}};
  back = poll_response_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("log_offsets.k: -1 is outside"), std::string::npos)
      << back.error().message;
}

TEST(PollRequest, NumbersOutOfRangeAreRefusedNamingTheField) {
  PollRequest r;
  r.node_id = "n";
  json j = poll_request_to_json(r);
  j["applied_version"] = json(uint64_t{18446744073709551615ULL});
  auto back = poll_request_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("applied_version: 18446744073709551615 is outside"),
            std::string::npos)
      << back.error().message;
  j = poll_request_to_json(r);
  j["events"] = {{{"seq", 1}, {"key", "k"}, {"type", "exited"}, {"exit_code", 1e18}}};
  back = poll_request_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("exit_code: expected a whole number"), std::string::npos)
      << back.error().message;
  j = poll_request_to_json(r);
  j["gpus"] = {{{"index", 0}, {"utilization_pct", 1000}}};
  back = poll_request_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("utilization_pct: 1000 is outside 0..100"), std::string::npos)
      << back.error().message;
}

}  // namespace
}  // namespace gpucloud

namespace gpucloud {
namespace {

TEST(PollResponse, CarriesInterruptNoticesAndRefusesBadOnes) {
  PollResponse r;
  r.version = 3;
  r.interrupts["j.1.0"] = {"spot", 1'800'000'000'000, "the provider takes the node"};
  auto back = poll_response_from_json(nlohmann::json::parse(poll_response_to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->interrupts.size(), 1u);
  EXPECT_EQ(back->interrupts["j.1.0"].cause, "spot");
  EXPECT_EQ(back->interrupts["j.1.0"].deadline_ms, 1'800'000'000'000);
  EXPECT_EQ(interrupt_notice_to_json(back->interrupts["j.1.0"])["deadline"], 1'800'000'000);
  EXPECT_FALSE(poll_response_to_json(PollResponse{}).contains("interrupts")) << "older agents";
  auto j = poll_response_to_json(r);
  j["interrupts"]["j.1.0"]["deadline_ms"] = -5;
  EXPECT_FALSE(poll_response_from_json(j).ok());
  j["interrupts"]["j.1.0"] = {{"cause", std::string(100, 'x')}, {"deadline_ms", 1}};
  EXPECT_FALSE(poll_response_from_json(j).ok());
  j["interrupts"] = "now";
  EXPECT_FALSE(poll_response_from_json(j).ok());
}

TEST(ReplicaEvent, CarriesTheCheckpointAndTheInterruptionCause) {
  ReplicaEvent e{7, "j.1.0", "exited", 143};
  e.checkpoint_at = 1'700'000'000'000;
  e.checkpoint_bytes = 4096;
  e.interrupt_cause = "drain";
  auto back = replica_event_from_json(nlohmann::json::parse(replica_event_to_json(e).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->checkpoint_at, e.checkpoint_at);
  EXPECT_EQ(back->checkpoint_bytes, 4096);
  EXPECT_EQ(back->interrupt_cause, "drain");
}

TEST(PollRequest, CarriesASpotNoticeOnlyWhenThereIsOne) {
  PollRequest r;
  r.node_id = "n";
  EXPECT_FALSE(poll_request_to_json(r).contains("spot_notice")) << "older servers see no change";
  r.spot_notice = {1'764'612'345'678, "AWS spot terminate"};
  json j = poll_request_to_json(r);
  auto back = poll_request_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->has_spot_notice());
  EXPECT_EQ(back->spot_notice.deadline_ms, 1'764'612'345'678);
  EXPECT_EQ(back->spot_notice.reason, "AWS spot terminate");
  j.erase("spot_notice");
  auto older = poll_request_from_json(j);
  ASSERT_TRUE(older.ok());
  EXPECT_FALSE(older->has_spot_notice()) << "an older agent sends none";
}

TEST(PollRequest, RefusesAMalformedSpotNotice) {
  PollRequest r;
  r.node_id = "n";
  json base = poll_request_to_json(r);
  for (const json& bad :
       {json("soon"), json{{"reason", "no deadline"}}, json{{"deadline_ms", -5}},
        json{{"deadline_ms", 0}}, json{{"deadline_ms", 1e300}},
        json{{"deadline_ms", "1764612345678"}},
        json{{"deadline_ms", 1'764'612'345'678}, {"reason", std::string(257, 'x')}},
        json{{"deadline_ms", 1'764'612'345'678}, {"reason", 7}}}) {
    json j = base;
    j["spot_notice"] = bad;
    auto parsed = poll_request_from_json(j);
    EXPECT_FALSE(parsed.ok()) << bad.dump();
  }
}

TEST(PollResponse, TellsTheNodesStateAndOlderServersSayNothing) {
  PollResponse r;
  r.node_state = "interrupting";
  auto back = poll_response_from_json(poll_response_to_json(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->node_state, "interrupting");
  json older = poll_response_to_json(PollResponse{});
  EXPECT_FALSE(older.contains("node_state"));
  EXPECT_EQ(poll_response_from_json(older)->node_state, "");
}

}  // namespace
}  // namespace gpucloud
