#include "model/job.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpucloud {
namespace {

using json = nlohmann::json;

Job finished_job() {
  Job job;
  job.id = "0190a1b2c3d47000800000000000abcd";
  job.spec.name = "train";
  job.spec.command = {"python", "train.py"};
  job.spec.replicas = 2;
  job.spec.gpus = 2;
  job.spec.tenant = "nlp";
  job.state = JobState::kFailed;
  job.exit_code = 3;
  job.message = "replica 1 exited with code 3";
  job.attempt = 2;
  job.created_at = 1'700'000'000'000;
  job.started_at = 1'700'000'005'250;
  job.finished_at = 1'700'000'600'999;
  job.cancel_requested = true;
  job.submitted_by = "ada";
  ReplicaAssignment r0;
  r0.rank = 0;
  r0.node_id = "node-id-0";
  r0.node_name = "gpu-a";
  r0.gpus = {{0, "GPU-aaaa", 1000}, {1, "GPU-bbbb", 1000}};
  r0.cpu_milli = 4000;
  r0.memory_mib = 8192;
  r0.state = ReplicaState::kExited;
  r0.exit_code = 0;
  ReplicaAssignment r1 = r0;
  r1.rank = 1;
  r1.node_id = "node-id-1";
  r1.node_name = "gpu-b";
  r1.gpus = {{6, "GPU-cccc", 500}};
  r1.exit_code = 3;
  r1.lost = true;
  r1.message = "node went away";
  job.replicas = {r0, r1};
  return job;
}

TEST(JobJson, HasTheDocumentedPublicKeys) {
  json j = job_to_json(finished_job());
  for (const char* key : {"id", "name", "tenant", "state", "exit_code", "pending_reason", "attempt",
                          "replicas", "created_at", "started_at", "finished_at", "spec", "message"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["id"], "0190a1b2c3d47000800000000000abcd");
  EXPECT_EQ(j["name"], "train");
  EXPECT_EQ(j["tenant"], "nlp");
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_TRUE(j["pending_reason"].is_null()) << "only pending jobs have a pending reason";
  EXPECT_EQ(j["attempt"], 2);
  EXPECT_EQ(j["created_at"], "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(j["started_at"], "2023-11-14T22:13:25.250Z");
  ASSERT_EQ(j["replicas"].size(), 2u);
  const json& r1 = j["replicas"][1];
  EXPECT_EQ(r1["rank"], 1);
  EXPECT_EQ(r1["node"], "gpu-b");
  ASSERT_EQ(r1["gpus"].size(), 1u);
  EXPECT_EQ(r1["gpus"][0]["uuid"], "GPU-cccc");
  EXPECT_EQ(r1["gpus"][0]["milli"], 500);
  EXPECT_EQ(j["spec"]["command"], json({"python", "train.py"}));
}

TEST(JobJson, APendingJobShowsItsReasonAndNullTimes) {
  Job job;
  job.id = "abcd";
  job.spec.command = {"sleep", "1"};
  job.spec.name = "sleep";
  job.pending_reason = "needs 8×A100 on one node; largest free block is 4 (gpu-a)";
  job.created_at = 1'700'000'000'000;
  json j = job_to_json(job);
  EXPECT_EQ(j["state"], "pending");
  EXPECT_EQ(j["pending_reason"], job.pending_reason);
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_TRUE(j["started_at"].is_null());
  EXPECT_TRUE(j["finished_at"].is_null());
  EXPECT_TRUE(j["replicas"].empty());
}

TEST(JobJson, RoundTrips) {
  Job a = finished_job();
  auto r = job_from_json(job_to_json(a));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Job& b = *r;
  EXPECT_EQ(b.id, a.id);
  EXPECT_EQ(b.spec.name, a.spec.name);
  EXPECT_EQ(b.spec.command, a.spec.command);
  EXPECT_EQ(b.spec.replicas, 2);
  EXPECT_EQ(b.spec.gpus, 2);
  EXPECT_EQ(b.spec.tenant, "nlp");
  EXPECT_EQ(b.state, JobState::kFailed);
  EXPECT_EQ(b.exit_code, 3);
  EXPECT_EQ(b.message, a.message);
  EXPECT_EQ(b.attempt, 2);
  EXPECT_EQ(b.created_at, a.created_at);
  EXPECT_EQ(b.started_at, a.started_at);
  EXPECT_EQ(b.finished_at, a.finished_at);
  EXPECT_TRUE(b.cancel_requested);
  EXPECT_EQ(b.submitted_by, "ada");
  ASSERT_EQ(b.replicas.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& x = a.replicas[i];
    const auto& y = b.replicas[i];
    EXPECT_EQ(y.rank, x.rank);
    EXPECT_EQ(y.node_id, x.node_id);
    EXPECT_EQ(y.node_name, x.node_name);
    EXPECT_EQ(y.cpu_milli, x.cpu_milli);
    EXPECT_EQ(y.memory_mib, x.memory_mib);
    EXPECT_EQ(y.state, x.state);
    EXPECT_EQ(y.exit_code, x.exit_code);
    EXPECT_EQ(y.lost, x.lost);
    EXPECT_EQ(y.message, x.message);
    ASSERT_EQ(y.gpus.size(), x.gpus.size());
    for (size_t g = 0; g < x.gpus.size(); ++g) {
      EXPECT_EQ(y.gpus[g].index, x.gpus[g].index);
      EXPECT_EQ(y.gpus[g].uuid, x.gpus[g].uuid);
      EXPECT_EQ(y.gpus[g].milli, x.gpus[g].milli);
    }
  }
}

TEST(JobJson, RoundTripsAPendingJobWithoutExitCode) {
  Job a;
  a.id = "beef";
  a.spec.command = {"x"};
  a.spec.name = "x";
  a.pending_reason = "waiting for resources";
  auto r = job_from_json(job_to_json(a));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->state, JobState::kPending);
  EXPECT_FALSE(r->exit_code.has_value());
  EXPECT_EQ(r->pending_reason, "waiting for resources");
  EXPECT_EQ(r->started_at, 0);
}

TEST(JobJson, MalformedRecordsAreErrorsNotExceptions) {
  json j = job_to_json(finished_job());
  j["attempt"] = "two";
  EXPECT_FALSE(job_from_json(j).ok());
  j = job_to_json(finished_job());
  j.erase("spec");
  EXPECT_FALSE(job_from_json(j).ok());
  j = job_to_json(finished_job());
  j["state"] = "exploded";
  auto r = job_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exploded"), std::string::npos);
  EXPECT_FALSE(job_from_json(json::array()).ok());
}

TEST(JobState, NamesRoundTripAndTerminalStatesAreTheEndedOnes) {
  for (auto s : {JobState::kPending, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                 JobState::kCancelled, JobState::kLost}) {
    auto back = job_state_from_string(to_string(s));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(is_terminal(JobState::kPending));
  EXPECT_FALSE(is_terminal(JobState::kRunning));
  EXPECT_TRUE(is_terminal(JobState::kSucceeded));
  EXPECT_TRUE(is_terminal(JobState::kCancelled));
  EXPECT_TRUE(is_terminal(JobState::kLost));
}

}  // namespace
}  // namespace gpucloud
