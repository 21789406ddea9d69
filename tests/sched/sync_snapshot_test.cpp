// sync_snapshot and sync_jobs: the events a caller's changed state turns into.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster.h"
#include "sched/scheduler.h"

namespace gpucloud::sched {
namespace {

using testing::gpu_node;
using testing::job;

// A Scheduler that records the events it is given, as "kind id" strings.
class RecordingScheduler : public Scheduler {
 public:
  std::vector<std::string> events;

  std::string name() const override { return "recording"; }
  void upsert_node(const NodeState& node) override { events.push_back("node " + node.id); }
  void remove_node(const std::string& id) override { events.push_back("remove " + id); }
  void set_tenants(const std::vector<TenantSpec>&) override {}
  Status submit(const JobRequest& j) override {
    events.push_back("submit " + j.job_id);
    return {};
  }
  Status start(const JobRequest& j, const Placement&, TimeMs) override {
    events.push_back("start " + j.job_id);
    return {};
  }
  void finish(const std::string& id) override { events.push_back("finish " + id); }
  Plan schedule(TimeMs) override { return {}; }
  size_t pending_count() const override { return 0; }
  size_t running_count() const override { return 0; }
  std::vector<TenantUsage> tenant_usage() const override { return {}; }
};

RunningJob running(const std::string& id, const std::string& node_id, int gpu) {
  RunningJob r;
  r.request = job(id, 1);
  r.placement.job_id = id;
  r.placement.replicas.push_back({0, node_id, {{gpu, "", 1000}}, 0, 0});
  return r;
}

Snapshot cluster_of_two_jobs() {
  Snapshot s;
  s.nodes.push_back(gpu_node("n1", 8));
  s.running.push_back(running("run", "id-n1", 0));
  s.pending.push_back(job("wait", 2));
  return s;
}

TEST(SyncSnapshot, ReportsNewStateOnceAndChangesAfter) {
  RecordingScheduler scheduler;
  SyncState known;
  Snapshot s = cluster_of_two_jobs();
  EXPECT_EQ(sync_snapshot(scheduler, s, known), 3u);
  EXPECT_EQ(scheduler.events, (std::vector<std::string>{"node id-n1", "start run", "submit wait"}));

  scheduler.events.clear();
  EXPECT_EQ(sync_snapshot(scheduler, s, known), 0u) << "nothing changed";
  EXPECT_TRUE(scheduler.events.empty());

  // "run" moved to another GPU, "wait" ended: the ended and changed jobs are finished first.
  s.running[0] = running("run", "id-n1", 3);
  s.pending.clear();
  EXPECT_EQ(sync_snapshot(scheduler, s, known), 3u);
  EXPECT_EQ(scheduler.events, (std::vector<std::string>{"finish run", "finish wait", "start run"}));
}

TEST(SyncSnapshot, SyncJobsComparesOnlyTheNamedJobs) {
  RecordingScheduler scheduler;
  SyncState known;
  ASSERT_EQ(sync_snapshot(scheduler, cluster_of_two_jobs(), known), 3u);
  scheduler.events.clear();

  // Only "wait" is named: it now runs. "run" is not in the snapshot, but unnamed, so it is
  // left running (a full sync would have finished it).
  Snapshot changed;
  changed.running.push_back(running("wait", "id-n1", 1));
  EXPECT_EQ(sync_jobs(scheduler, changed, known, {"wait"}), 2u);
  EXPECT_EQ(scheduler.events, (std::vector<std::string>{"finish wait", "start wait"}));
  EXPECT_TRUE(known.running.count("run"));

  // A named job absent from the snapshot has ended; a new named one is submitted, an unnamed
  // one is not.
  scheduler.events.clear();
  Snapshot next;
  next.pending.push_back(job("new", 1));
  next.pending.push_back(job("unnamed", 1));
  EXPECT_EQ(sync_jobs(scheduler, next, known, {"run", "new"}), 2u);
  EXPECT_EQ(scheduler.events, (std::vector<std::string>{"finish run", "submit new"}));
  next.pending.pop_back();

  // The same state again: nothing to report, named or not.
  scheduler.events.clear();
  EXPECT_EQ(sync_jobs(scheduler, next, known, {"run", "new"}), 0u);
  Snapshot all;
  all.running.push_back(running("wait", "id-n1", 1));
  all.pending.push_back(job("new", 1));
  EXPECT_EQ(sync_snapshot(scheduler, all, known), 1u) << "jobs unchanged; the node left";
  EXPECT_EQ(scheduler.events, (std::vector<std::string>{"remove id-n1"}));
}

}  // namespace
}  // namespace gpucloud::sched
