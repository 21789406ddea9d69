// The replay's controls: progress reports, a stop time (--until) and a stop request (Ctrl-C).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>

#include "sim/replay.h"
#include "sim/replay_report.h"

namespace gpucloud::sim {
namespace {

SimCluster one_node(int gpus) {
  SimCluster c;
  c.nodes.push_back(make_node("n1", gpus, "A100", 81920, 32000, 262144));
  return c;
}

Trace trace(const std::string& rows) {
  auto t = CsvTable::parse("id,tenant,submit_s,duration_s,gpus\n" + rows, "t.csv");
  EXPECT_TRUE(t.ok());
  auto tr = load_canonical_trace(*t);
  EXPECT_TRUE(tr.ok()) << tr.error().message;
  return *tr;
}

// On one GPU: a runs 0-100 s, b waits and runs 100-150 s, c waits and runs 150-180 s.
const char* kThreeJobs = "a,t,0,100,1\nb,t,10,50,1\nc,t,20,30,1\n";

TEST(ReplayControlTest, ProgressIsReportedInTimeOrderWithTheFinalCounts) {
  std::vector<ReplayProgress> seen;
  ReplayOptions options;
  options.progress = [&](const ReplayProgress& p) { seen.push_back(p); };
  auto r = run_replay(one_node(1), trace(kThreeJobs), options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_GE(seen.size(), 2u);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_LE(seen[i - 1].sim_ms, seen[i].sim_ms);
    EXPECT_LE(seen[i - 1].done, seen[i].done);
    EXPECT_EQ(seen[i].final, i + 1 == seen.size());
  }
  // At 20 s all three have arrived: a runs, b and c wait.
  auto at20 = std::find_if(seen.begin(), seen.end(), [](auto& p) { return p.sim_ms == 20'000; });
  ASSERT_NE(at20, seen.end());
  EXPECT_EQ(at20->submitted, 3);
  EXPECT_EQ(at20->queued, 2);
  EXPECT_EQ(at20->running, 1);
  const ReplayProgress& last = seen.back();
  EXPECT_EQ(last.sim_ms, 180'000);
  EXPECT_EQ(last.submitted, 3);
  EXPECT_EQ(last.done, 3);
  EXPECT_EQ(last.queued, 0);
  EXPECT_EQ(last.running, 0);
}

TEST(ReplayControlTest, UntilStopsThereAndCountsWhatWasLeft) {
  ReplayOptions options;
  options.until_ms = 120'000;  // a is done at 100 s, b runs since then, c waits
  auto r = run_replay(one_node(1), trace(kThreeJobs + std::string("d,t,500,10,1\n")), options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->stopped.has_value());
  EXPECT_EQ(r->stopped->at_ms, 120'000);
  EXPECT_EQ(r->stopped->reason, "--until");
  EXPECT_EQ(r->stopped->running, 1);
  EXPECT_EQ(r->stopped->pending, 1);
  EXPECT_EQ(r->stopped->not_arrived, 1);
  // a ran 100 s, b 20 s of its 50 by the stop time.
  EXPECT_NEAR(r->gpu_hours.at("t").at("A100"), 120 / 3600.0, 1e-9);
  auto j = replay_json(*r, nullptr);
  EXPECT_EQ(j["partial"], true);
  EXPECT_EQ(j["stopped"]["at_s"], 120.0);
  EXPECT_EQ(j["jobs"]["completed"], 1);
  EXPECT_EQ(j["jobs"]["unfinished"], 3);
  EXPECT_EQ(j["makespan_s"], 120.0);
  // The GPU was busy for all 120 s.
  EXPECT_NEAR(j["gpu_allocation_pct"]["time_weighted_mean"].get<double>(), 100, 1e-9);
  std::string text = format_replay_report(*r, nullptr);
  EXPECT_NE(text.find("partial: stopped at simulated time 2m (--until): 1 jobs running, 1 "
                      "pending, 1 not yet arrived"),
            std::string::npos)
      << text;
}

TEST(ReplayControlTest, UntilAfterTheEndGivesTheFullReport) {
  ReplayOptions options;
  options.until_ms = 180'000;  // c ends exactly then
  auto r = run_replay(one_node(1), trace(kThreeJobs), options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->stopped.has_value());
  auto j = replay_json(*r, nullptr);
  EXPECT_EQ(j["partial"], false);
  EXPECT_TRUE(j["stopped"].is_null());
  EXPECT_EQ(j["jobs"]["completed"], 3);
}

TEST(ReplayControlTest, AStopRequestEndsTheReplayAtTheNextEventWithAPartialReport) {
  std::atomic<bool> stop{false};
  ReplayOptions options;
  options.stop_requested = &stop;
  int64_t calls_after_stop = 0;
  options.progress = [&](const ReplayProgress& p) {
    if (stop && !p.final) ++calls_after_stop;
    if (p.sim_ms == 100'000) stop = true;  // as a Ctrl-C handler would, after a ends
  };
  auto r = run_replay(one_node(1), trace(kThreeJobs), options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(calls_after_stop, 0);  // no instant was processed after the request
  ASSERT_TRUE(r->stopped.has_value());
  EXPECT_EQ(r->stopped->reason, "interrupted");
  EXPECT_EQ(r->stopped->at_ms, 100'000);
  EXPECT_EQ(r->stopped->running, 1);  // b started at 100 s
  EXPECT_EQ(r->stopped->pending, 1);  // c
  EXPECT_EQ(r->stopped->not_arrived, 0);
  auto j = replay_json(*r, nullptr);
  EXPECT_EQ(j["jobs"]["completed"], 1);
  EXPECT_EQ(j["jobs"]["unfinished"], 2);
}

}  // namespace
}  // namespace gpucloud::sim
