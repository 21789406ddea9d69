// The replay on tiny hand-made clusters, where each job's queueing delay is known.
#include "sim/replay.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "replay_test_helpers.h"
#include "sim/replay_report.h"

namespace gpucloud::sim {
namespace {

SimCluster one_node(int gpus, std::map<std::string, std::string> labels = {}) {
  SimCluster c;
  c.nodes.push_back(make_node("n1", gpus, "A100", 81920, 32000, 262144));
  c.nodes[0].labels = std::move(labels);
  return c;
}

using test_helpers::job;
using test_helpers::trace;

TEST(ReplayTest, JobsWaitForTheGpusToFreeUp) {
  auto r =
      run_replay(one_node(2), trace("a,t,0,100,,2,,,,\nb,t,10,50,,1,,,,\nc,t,20,30,,1,,,,\n"), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(job(*r, "a").waited_ms, 0);
  EXPECT_EQ(job(*r, "a").end_ms, 100'000);
  EXPECT_EQ(job(*r, "b").waited_ms, 90'000);
  EXPECT_EQ(job(*r, "b").end_ms, 150'000);
  EXPECT_EQ(job(*r, "c").waited_ms, 80'000);
  EXPECT_EQ(job(*r, "c").end_ms, 130'000);
  auto j = replay_json(*r, nullptr);
  EXPECT_DOUBLE_EQ(j["queueing_delay_s"]["mean"].get<double>(), (0 + 90 + 80) / 3.0);
  EXPECT_DOUBLE_EQ(j["queueing_delay_s"]["p99"].get<double>(), 90);
  EXPECT_DOUBLE_EQ(j["completion_time_s"]["p50"].get<double>(), 110);
  // 2 GPUs for 100 s, then 2 for 30 s, then 1 for 20 s: of 150 s.
  EXPECT_NEAR(j["gpu_allocation_pct"]["time_weighted_mean"].get<double>(),
              100 * (100 + 30 + 0.5 * 20) / 150.0, 1e-9);
  EXPECT_NEAR(j["tenants"][0]["gpu_hours"].get<double>(), (200 + 50 + 30) / 3600.0, 1e-9);
}

TEST(ReplayTest, AJobLongerThanItsMaxRuntimeIsStoppedThere) {
  auto r = run_replay(one_node(1), trace("a,t,0,100,40,1,,,,\nb,t,0,10,,1,,,,\n"), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(job(*r, "a").end_ms, 40'000);
  EXPECT_TRUE(job(*r, "a").stopped_at_max_runtime);
  EXPECT_EQ(job(*r, "b").first_start_ms, 40'000);
  EXPECT_EQ(job(*r, "b").end_ms, 50'000);
}

TEST(ReplayTest, SharesOfOneGpuRunSideBySide) {
  auto r = run_replay(one_node(1), trace("a,t,0,100,,1,500,,,\nb,t,0,100,,1,500,,,\n"), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(job(*r, "a").waited_ms, 0);
  EXPECT_EQ(job(*r, "b").waited_ms, 0);
  EXPECT_NEAR(replay_json(*r, nullptr)["gpu_allocation_pct"]["time_weighted_mean"].get<double>(),
              100, 1e-9);
}

TEST(ReplayTest, APreemptedJobGoesBackToTheQueueAndRunsAgain) {
  auto r = run_replay(one_node(1, {{"capacity-class", "spot"}}),
                      trace("low,t,0,100,,1,,,low,spot\nhigh,t,10,20,,1,,,high,\n"), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_EQ(job(*r, "high").waited_ms, 0);
  EXPECT_EQ(job(*r, "high").end_ms, 30'000);
  const JobOutcome& low = job(*r, "low");
  EXPECT_EQ(low.attempts, 2);
  EXPECT_EQ(low.waited_ms, 20'000);  // pending from 10 s to 30 s
  EXPECT_EQ(low.end_ms, 130'000);    // its full 100 s again, from 30 s
  // GPU-hours count the preempted run: 10 s + 100 s of low, 20 s of high.
  EXPECT_NEAR(r->gpu_hours.at("t").at("A100"), 130 / 3600.0, 1e-9);
}

TEST(ReplayTest, APreemptedJobResumesFromItsLastCheckpointAfterTheRestartCost) {
  ReplayOptions o;
  o.checkpoint_interval_ms = 30'000;
  o.restart_cost_ms = 5'000;
  auto r = run_replay(one_node(1, {{"capacity-class", "spot"}}),
                      trace("low,t,0,100,,1,,,low,spot\nhigh,t,70,20,,1,,,high,\n"), o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const JobOutcome& low = job(*r, "low");
  EXPECT_EQ(low.attempts, 2);
  // 70 s of work, checkpoints at 30 and 60 s: 40 s left after high ends at 90 s, plus 5 s to
  // restart.
  EXPECT_EQ(low.end_ms, 135'000);
}

TEST(ReplayTest, LasLetsAShortJobPassALongOneThatDroppedALevel) {
  // One GPU; a long job, then a short one. fifo: the short one waits for the long one.
  const std::string rows = "long,t,0,1000,,1,,,,\nshort,t,10,30,,1,,,,\n";
  auto fifo = run_replay(one_node(1), trace(rows), {});
  ASSERT_TRUE(fifo.ok()) << fifo.error().message;
  EXPECT_EQ(job(*fifo, "short").end_ms, 1'030'000);
  ReplayOptions o;
  o.queue_policy = "las";
  o.las_thresholds_gpu_s = {60};
  o.checkpoint_interval_ms = 10'000;
  auto las = run_replay(one_node(1), trace(rows), o);
  ASSERT_TRUE(las.ok()) << las.error().message;
  // At 60 s "long" has had 60 GPU-seconds and drops a level: "short" preempts it.
  EXPECT_EQ(las->preemptions, 1);
  EXPECT_EQ(job(*las, "short").first_start_ms, 60'000);
  EXPECT_EQ(job(*las, "short").end_ms, 90'000);
  // "long" resumes from its checkpoint at 60 s: 940 s more.
  EXPECT_EQ(job(*las, "long").end_ms, 1'030'000);
  EXPECT_EQ(job(*las, "long").attempts, 2);
}

TEST(ReplayTest, SpotInterruptionsCostAtMostACheckpointIntervalEach) {
  ReplayOptions o;
  o.spot_interrupt_rate_per_hour = 2;
  o.spot_downtime_ms = 60'000;
  o.checkpoint_interval_ms = 300'000;
  o.restart_cost_ms = 10'000;
  auto r =
      run_replay(one_node(1, {{"capacity-class", "spot"}}), trace("long,t,0,3600,,1,,,,\n"), o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const JobOutcome& j = job(*r, "long");
  ASSERT_GE(r->spot_interruptions, 1) << "2 per hour over more than an hour (seed 42)";
  EXPECT_EQ(r->jobs_spot_interrupted, r->spot_interruptions) << "the job was always running";
  EXPECT_EQ(j.attempts, 1 + r->jobs_spot_interrupted);
  ASSERT_GT(j.end_ms, 0) << "it finishes on the replacement nodes";
  // Each interruption costs the node's downtime, at most one checkpoint interval of work and
  // the restart.
  int64_t n = r->spot_interruptions;
  EXPECT_GE(j.end_ms, 3'600'000 + n * (60'000 + 10'000));
  EXPECT_LE(j.end_ms, 3'600'000 + n * (60'000 + 10'000 + 300'000));
  EXPECT_GT(r->gpu_hours_lost, 0);
  EXPECT_LE(r->gpu_hours_lost, n * (300'000 + 10'000) / 3'600'000.0 + 1e-9);
  auto none = run_replay(one_node(1), trace("long,t,0,3600,,1,,,,\n"), o);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->spot_interruptions, 0) << "only nodes labelled spot are taken";
}

TEST(ReplayTest, JobsThatCanNeverFitAreReportedWithWhereTheyWereRead) {
  auto r =
      run_replay(one_node(2), trace("a,t,0,10,,4,,,,\nb,t,0,10,,1,,H100,,\nc,t,0,10,,1,,,,\n"), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->never_fit.size(), 2u);
  EXPECT_EQ(r->never_fit[0].id, "a");
  EXPECT_EQ(r->never_fit[0].message.rfind("t.csv:2:11: job a: ", 0), 0u) << r->never_fit[0].message;
  EXPECT_EQ(r->never_fit[1].message,
            "t.csv:3:14: job b: gpu_model 'H100': no node has this GPU model");
  ASSERT_EQ(r->jobs.size(), 1u);
  EXPECT_EQ(r->jobs[0].end_ms, 10'000);
}

TEST(ReplayTest, ANeverFitMessagePointsAtTheCellItIsAbout) {
  auto t = CsvTable::parse("id,gpus,cpu_milli,submit_s,duration_s\na,1,999000,0,1\n", "c.csv");
  ASSERT_TRUE(t.ok());
  auto tr = load_canonical_trace(*t);
  ASSERT_TRUE(tr.ok()) << tr.error().message;
  auto r = run_replay(one_node(2), *tr, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->never_fit.size(), 1u);
  EXPECT_EQ(r->never_fit[0].message.rfind("c.csv:2:5: job a: cpus: 999 requested", 0), 0u)
      << r->never_fit[0].message;
}

TEST(ReplayTest, UnknownPolicyIsAnError) {
  auto r = run_replay(one_node(1), trace("a,t,0,10,,1,,,,\n"), {"no-such-policy", 1});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no-such-policy"), std::string::npos);
}

TEST(ReplayTest, SameInputsGiveTheSameResultForEveryPolicy) {
  std::string rows;
  for (int i = 0; i < 60; ++i)
    rows += fmt::format("j{},t{},{},{},,{},{},,,\n", i, i % 3, i * 7, 20 + (i * 37) % 90, 1 + i % 2,
                        i % 4 == 0 ? 300 : 0);
  for (const char* policy : {"first-fit", "random", "best-fit", "fgd", "default"}) {
    auto a = run_replay(one_node(4), trace(rows), {policy, 3});
    auto b = run_replay(one_node(4), trace(rows), {policy, 3});
    ASSERT_TRUE(a.ok()) << policy << ": " << a.error().message;
    EXPECT_EQ(replay_json(*a, nullptr).dump(), replay_json(*b, nullptr).dump()) << policy;
    for (const JobOutcome& j : a->jobs) EXPECT_GE(j.end_ms, j.submit_ms) << policy << " " << j.id;
  }
}

}  // namespace
}  // namespace gpucloud::sim
