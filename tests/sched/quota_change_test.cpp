// What a change of quotas (a reload, a quota window) does to running jobs: use above the new
// nominal quota is borrowed and reclaimed by lenders; use above nominal + borrowing limit is
// reclaimed at the next pass, lowest priority first, and jobs that fit stay.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cluster.h"
#include "sched/scheduler.h"

namespace gpucloud::sched {
namespace {

using ::testing::HasSubstr;
using namespace testing;

constexpr TimeMs kMinute = 60'000;

TenantSpec tenant(const std::string& name, const std::string& cohort, int a100_quota,
                  int borrowing_limit = -1) {
  TenantSpec t;
  t.name = name;
  t.cohort = cohort;
  t.has_quota = true;
  t.quota["A100"] = a100_quota;
  if (borrowing_limit >= 0) t.borrowing_limit["A100"] = borrowing_limit;
  return t;
}

JobRequest running_job(const std::string& id, int gpus, int priority, const std::string& tenant,
                       TimeMs created_at) {
  JobRequest j = job(id, gpus);
  j.tenant = tenant;
  j.priority = priority;
  j.created_at = created_at;
  return j;
}

std::set<std::string> preempted(const Plan& plan) {
  std::set<std::string> out;
  for (const auto& p : plan.preemptions) out.insert(p.job_id);
  return out;
}

std::unique_ptr<Scheduler> make() {
  PolicySettings settings;
  auto s = create_scheduler(settings);
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

// inference runs 6 A100 in 4 jobs: low-a (2, priority 0), low-b (1, 0), mid (2, 100), high (1,
// 1000).
void start_inference(Scheduler& s) {
  for (const auto& j :
       {running_job("low-a", 2, 0, "inference", 1), running_job("low-b", 1, 0, "inference", 2),
        running_job("mid", 2, 100, "inference", 3), running_job("high", 1, 1000, "inference", 4)})
    ASSERT_TRUE(s.submit(j).ok());
  Plan plan = s.schedule(0);
  ASSERT_EQ(plan.placements.size(), 4u);
}

TEST(QuotaChange, AShrunkQuotaWithoutCohortReclaimsExactlyTheExcessLowestPriorityFirst) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("inference", "", 6)});
  start_inference(*s);
  s->set_tenants({tenant("inference", "", 3)});  // the window ends: 3 of 6 must go
  Plan plan = s->schedule(kMinute);
  EXPECT_EQ(preempted(plan), (std::set<std::string>{"low-a", "low-b"}));
  for (const auto& p : plan.preemptions)
    EXPECT_THAT(p.reason, HasSubstr("quota reclaim, tenant inference holds 3 A100 GPUs above"));
  // The victims end: nothing more is reclaimed.
  s->finish("low-a");
  s->finish("low-b");
  EXPECT_TRUE(s->schedule(2 * kMinute).preemptions.empty());
}

TEST(QuotaChange, AQuotaThatStillFitsReclaimsNothing) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("inference", "", 8)});
  start_inference(*s);
  s->set_tenants({tenant("inference", "", 6)});
  EXPECT_TRUE(s->schedule(kMinute).preemptions.empty());
}

TEST(QuotaChange, UseWithinTheBorrowingLimitIsBorrowedAndReclaimedWhenTheLenderNeedsIt) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("inference", "ml", 8), tenant("training", "ml", 0)});
  start_inference(*s);
  // Night: inference 2 (6 in use: 4 borrowed from training), training 6.
  s->set_tenants({tenant("inference", "ml", 2), tenant("training", "ml", 6)});
  EXPECT_TRUE(s->schedule(kMinute).preemptions.empty()) << "borrowed quota stays until needed";
  ASSERT_TRUE(s->submit(running_job("train", 4, 100, "training", 10)).ok());
  Plan plan = s->schedule(2 * kMinute);
  // 2 GPUs are free; 2 more come from inference's cheapest borrowed jobs.
  EXPECT_EQ(preempted(plan), (std::set<std::string>{"low-a"}));
  EXPECT_THAT(plan.preemptions.at(0).reason,
              HasSubstr("reclaiming quota lent to tenant inference"));
}

TEST(QuotaChange, UseAboveTheBorrowingLimitIsReclaimedAtOnce) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("inference", "ml", 6, 0), tenant("training", "ml", 2)});
  start_inference(*s);
  // inference may hold 2 + 1 borrowed: 3 of its 6 go at once.
  s->set_tenants({tenant("inference", "ml", 2, 1), tenant("training", "ml", 6)});
  Plan plan = s->schedule(kMinute);
  EXPECT_EQ(preempted(plan), (std::set<std::string>{"low-a", "low-b"}));
}

}  // namespace
}  // namespace gpucloud::sched
