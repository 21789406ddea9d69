// The scheduler's rules, one small scenario each: quotas and borrowing, fair share, gangs,
// backfill, preemption, and the pending reasons a user reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "cluster.h"
#include "sched/scheduler.h"

namespace gpucloud::sched {
namespace {

using namespace testing;
using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr TimeMs kMinute = 60'000;

JobRequest for_tenant(JobRequest j, const std::string& tenant, TimeMs created_at = 0) {
  j.tenant = tenant;
  j.created_at = created_at;
  return j;
}

TenantSpec tenant(const std::string& name, const std::string& cohort, int a100_quota,
                  int borrowing_limit = -1, double weight = 1) {
  TenantSpec t;
  t.name = name;
  t.cohort = cohort;
  t.weight = weight;
  t.has_quota = true;
  t.quota["A100"] = a100_quota;
  if (borrowing_limit >= 0) t.borrowing_limit["A100"] = borrowing_limit;
  return t;
}

std::unique_ptr<Scheduler> make(const std::string& policy = "default") {
  PolicySettings settings;
  settings.policy = policy;
  auto s = create_scheduler(settings);
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

std::set<std::string> preempted(const Plan& plan) {
  std::set<std::string> out;
  for (const auto& p : plan.preemptions) out.insert(p.job_id);
  return out;
}

TEST(Quotas, ATenantAtItsQuotaWaitsWithTheNumbers) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("vision", "", 2)});
  ASSERT_TRUE(s->submit(for_tenant(job("a", 2), "vision", 1)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("b", 1), "vision", 2)).ok());
  Plan plan = s->schedule(0);
  EXPECT_NE(placement_of(plan, "a"), nullptr);
  EXPECT_EQ(placement_of(plan, "b"), nullptr);
  EXPECT_EQ(reason_of(plan, "b"),
            "tenant vision: A100 quota 2 in use of 2, no cohort to borrow from");
}

TEST(Quotas, BorrowingStopsAtTheBorrowingLimit) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8), gpu_node("n2", 8)});
  s->set_tenants({tenant("vision", "ml", 2, 2), tenant("nlp", "ml", 6)});
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(s->submit(for_tenant(job("v" + std::to_string(i), 2), "vision", i)).ok());
  Plan plan = s->schedule(0);
  EXPECT_NE(placement_of(plan, "v0"), nullptr);
  EXPECT_NE(placement_of(plan, "v1"), nullptr) << "borrows 2 of nlp's unused 6";
  EXPECT_EQ(placement_of(plan, "v2"), nullptr);
  EXPECT_EQ(reason_of(plan, "v2"),
            "tenant vision: A100 quota 4 in use of 2, borrowing limit 2 reached in cohort ml");
  bool found = false;
  for (const auto& u : s->tenant_usage())
    if (u.tenant == "vision" && u.gpu_model == "A100") {
      found = true;
      EXPECT_EQ(u.used_milli, 4000);
      EXPECT_EQ(u.quota_milli, 2000);
      EXPECT_EQ(u.borrowed_milli, 2000);
    }
  EXPECT_TRUE(found);
}

TEST(Quotas, NothingToBorrowWhenTheCohortUsesItsQuota) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8), gpu_node("n2", 8)});
  s->set_tenants({tenant("vision", "ml", 2), tenant("nlp", "ml", 6)});
  ASSERT_TRUE(s->submit(for_tenant(job("n", 6), "nlp", 0)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("v", 4), "vision", 1)).ok());
  Plan plan = s->schedule(0);
  EXPECT_NE(placement_of(plan, "n"), nullptr);
  EXPECT_EQ(reason_of(plan, "v"),
            "tenant vision: A100 quota 0 in use of 2, cohort ml can lend only 2");
}

TEST(Quotas, AGangOverTheQuotaIsToldAboutTheWholeGang) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("vision", "", 4)});
  JobRequest gang = for_tenant(job("gang", 2), "vision");
  gang.replicas = 3;
  ASSERT_TRUE(s->submit(gang).ok());
  Plan plan = s->schedule(0);
  EXPECT_EQ(placement_of(plan, "gang"), nullptr);
  EXPECT_EQ(reason_of(plan, "gang"),
            "tenant vision: A100 quota 0 in use of 4, no cohort to borrow from");
}

TEST(Quotas, SharesAreCountedInFractionsOfAGpu) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("vision", "", 1)});
  ASSERT_TRUE(s->submit(for_tenant(share("a", 750), "vision", 0)).ok());
  ASSERT_TRUE(s->submit(for_tenant(share("b", 500), "vision", 1)).ok());
  Plan plan = s->schedule(0);
  EXPECT_NE(placement_of(plan, "a"), nullptr);
  EXPECT_EQ(reason_of(plan, "b"),
            "tenant vision: A100 quota 0.75 in use of 1, no cohort to borrow from");
}

TEST(Quotas, TenantsWithoutQuotaAreNotLimited) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("vision", "", 1)});
  ASSERT_TRUE(s->submit(for_tenant(job("free", 8), "research", 0)).ok());
  EXPECT_NE(placement_of(s->schedule(0), "free"), nullptr);
}

TEST(Quotas, ALenderReclaimsWhatItLentByPreemptingTheBorrower) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("vision", "ml", 4), tenant("nlp", "ml", 4)});
  ASSERT_TRUE(s->submit(for_tenant(job("v-own", 4), "vision", 0)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("v-borrowed", 4), "vision", 1)).ok());
  Plan first = s->schedule(0);
  ASSERT_EQ(first.placements.size(), 2u) << "vision borrows nlp's idle quota";
  ASSERT_TRUE(s->submit(for_tenant(job("n", 4), "nlp", 2)).ok());
  Plan plan = s->schedule(kMinute);
  EXPECT_EQ(preempted(plan), std::set<std::string>{"v-borrowed"});
  EXPECT_THAT(plan.preemptions.at(0).reason, HasSubstr("reclaiming quota lent to tenant vision"));
  EXPECT_THAT(reason_of(plan, "n"), HasSubstr("preempting 1 job to start (v-borrowed)"));
  s->finish("v-borrowed");
  plan = s->schedule(2 * kMinute);
  EXPECT_NE(placement_of(plan, "n"), nullptr);
}

// A borrower of a higher priority keeps what it borrowed: reclaimed, it would preempt the
// lender's job back by priority, and the two would take turns forever.
TEST(Quotas, ALenderDoesNotReclaimFromABorrowerOfAHigherPriority) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->set_tenants({tenant("vision", "ml", 4), tenant("nlp", "ml", 4)});
  for (const char* id : {"v-a", "v-b"}) {
    JobRequest urgent = for_tenant(job(id, 4), "vision", 0);
    urgent.priority = 1000;
    ASSERT_TRUE(s->submit(urgent).ok());
  }
  ASSERT_EQ(s->schedule(0).placements.size(), 2u) << "vision borrows nlp's idle quota";
  ASSERT_TRUE(s->submit(for_tenant(job("n", 4), "nlp", 2)).ok());
  Plan plan = s->schedule(kMinute);
  EXPECT_TRUE(plan.preemptions.empty()) << *preempted(plan).begin();
  EXPECT_THAT(reason_of(plan, "n"), HasSubstr("needs 4×GPU on one node"));
}

// A gang may spread over GPU models, each replica charged to its own model's quota: it starts
// when a GPU of each frees up, though neither model's quota allows the whole gang.
TEST(Quotas, AGangSpreadOverTwoModelsStartsWhenAGpuOfEachFreesUp) {
  auto s = make();
  add_nodes(*s, {gpu_node("a", 1), gpu_node("h", 1, "H100")});
  TenantSpec vision = tenant("vision", "", 1);
  vision.quota["H100"] = 1;
  s->set_tenants({vision});
  ASSERT_TRUE(s->submit(for_tenant(job("other-a", 1), "research", 0)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("other-h", 1), "research", 1)).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 2u);
  JobRequest gang = for_tenant(job("gang", 1), "vision", 2);
  gang.replicas = 2;
  ASSERT_TRUE(s->submit(gang).ok());
  ASSERT_EQ(placement_of(s->schedule(kMinute), "gang"), nullptr);
  s->finish("other-a");
  s->finish("other-h");
  EXPECT_NE(placement_of(s->schedule(2 * kMinute), "gang"), nullptr);
}

// A lender's job that waited for GPUs while a cohort member borrowed its idle quota reclaims
// that quota once GPUs it fits free up (free GPUs wake the jobs only reclaiming lets start).
TEST(Quotas, ALenderWhoseGpusFreeUpReclaimsTheQuotaItLent) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 2), gpu_node("x", 1)});
  s->set_tenants({tenant("vision", "ml", 2), tenant("nlp", "ml", 0)});
  ASSERT_TRUE(s->submit(for_tenant(job("other", 2), "research", 0)).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 1u);
  ASSERT_TRUE(s->submit(for_tenant(job("v", 2), "vision", 1)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("n", 1), "nlp", 2)).ok());
  Plan plan = s->schedule(kMinute);
  ASSERT_NE(placement_of(plan, "n"), nullptr) << "nlp borrows vision's idle quota";
  ASSERT_EQ(placement_of(plan, "v"), nullptr) << "no node has 2 GPUs free";
  s->finish("other");
  plan = s->schedule(2 * kMinute);
  EXPECT_EQ(preempted(plan), std::set<std::string>{"n"});
  EXPECT_THAT(reason_of(plan, "v"), HasSubstr("preempting 1 job to start (n)"));
}

// Starts the job on the node's GPUs at `gpus`, as a caller that placed it would.
Status start_on(Scheduler& s, JobRequest j, int priority, const NodeState& node,
                const std::vector<int>& gpus) {
  j.priority = priority;
  ReplicaPlacement rp{0, node.id, {}, 0, 0};
  for (int i : gpus) rp.gpus.push_back({node.gpus[i].index, node.gpus[i].uuid, 1000});
  return s.start(j, {j.job_id, {rp}}, 0);
}

// Registers `count` nodes of 2 GPUs named prefix00, prefix01, ...
std::vector<NodeState> add_two_gpu_nodes(Scheduler& s, const std::string& prefix, int count) {
  std::vector<NodeState> nodes;
  for (int i = 0; i < count; ++i)
    nodes.push_back(gpu_node(prefix + (i < 10 ? "0" : "") + std::to_string(i), 2));
  add_nodes(s, nodes);
  return nodes;
}

// Submits "high", one GPU at priority 1000, and schedules a minute in.
Plan submit_high_and_schedule(Scheduler& s) {
  JobRequest high = job("high", 1);
  high.priority = 1000;
  EXPECT_TRUE(s.submit(high).ok());
  return s.schedule(kMinute);
}

// Starts a share of `milli` at priority 0 on the node's GPU at `gpu`.
Status start_share_on(Scheduler& s, const std::string& id, int milli, const NodeState& node,
                      int gpu) {
  JobRequest j = share(id, milli);
  j.priority = 0;
  ReplicaPlacement rp{0, node.id, {{node.gpus[gpu].index, node.gpus[gpu].uuid, milli}}, 0, 0};
  return s.start(j, {j.job_id, {rp}}, 0);
}

// vision's job "v" (priority 1) waits behind nlp-old (priority 5, outranking it); nlp-old ends
// and nlp-new (priority 1, borrowing) takes its GPUs in the pass where v is decided too (nlp,
// the smaller share, goes first). Returns the plan of the pass after: nlp-new is now a
// possible victim.
Plan lender_waits_while_nlp_borrows(Scheduler& s, int v_gpus) {
  JobRequest v = for_tenant(job("v", v_gpus), "vision", 1);
  v.priority = 1;
  EXPECT_TRUE(s.submit(v).ok());
  Plan plan = s.schedule(kMinute);
  EXPECT_EQ(placement_of(plan, "v"), nullptr);
  EXPECT_TRUE(plan.preemptions.empty()) << "nlp-old outranks v";
  s.finish("nlp-old");
  JobRequest nlp_new = for_tenant(job("nlp-new", 2), "nlp", 2);
  nlp_new.priority = 1;
  EXPECT_TRUE(s.submit(nlp_new).ok());
  plan = s.schedule(2 * kMinute);
  EXPECT_NE(placement_of(plan, "nlp-new"), nullptr);
  EXPECT_TRUE(plan.preemptions.empty());
  return s.schedule(3 * kMinute);
}

// A lender within its nominal quota preempts a borrower of its cohort where that frees enough
// GPUs, even when reclaiming could not give it all the quota it asks (a borrower that outranks it
// holds the rest): a pass deciding every job does, so the borrower's node wakes it.
TEST(Quotas, ALenderPreemptsABorrowerOnANodeThatWouldThenFitIt) {
  auto s = make();
  NodeState x = with_used(gpu_node("x", 4), {3});  // 3 GPUs for jobs
  NodeState y = gpu_node("y", 2);
  add_nodes(*s, {x, y});
  s->set_tenants({tenant("vision", "ml", 4), tenant("nlp", "ml", 0), tenant("speech", "ml", 0)});
  ASSERT_TRUE(start_on(*s, for_tenant(job("speech", 2), "speech", 0), 10, y, {0, 1}).ok());
  ASSERT_TRUE(start_on(*s, for_tenant(job("nlp-old", 2), "nlp", 0), 5, x, {0, 1}).ok());
  // The cohort's quota is all in use (speech 2, nlp 2): reclaiming nlp-new would give vision 2
  // of the 3 it asks.
  Plan plan = lender_waits_while_nlp_borrows(*s, 3);
  EXPECT_EQ(preempted(plan), std::set<std::string>{"nlp-new"})
      << "x fits v once nlp-new is gone, and v is within its nominal quota";
}

// The same lender, where what frees enough is a borrower of its cohort together with a job it
// outranks: both are preempted, and the node wakes it for both.
TEST(Quotas, ALenderPreemptsABorrowerAndAnOutrankedJobTogether) {
  auto s = make();
  NodeState x = with_used(gpu_node("x", 6), {4, 5});  // 4 GPUs for jobs
  add_nodes(*s, {x});
  s->set_tenants({tenant("vision", "ml", 4), tenant("nlp", "ml", 0)});
  // research has no quota and priority 0.
  ASSERT_TRUE(start_on(*s, for_tenant(job("research", 2), "research", 0), 0, x, {0, 1}).ok());
  ASSERT_TRUE(start_on(*s, for_tenant(job("nlp-old", 2), "nlp", 0), 5, x, {2, 3}).ok());
  Plan plan = lender_waits_while_nlp_borrows(*s, 4);
  EXPECT_EQ(preempted(plan), (std::set<std::string>{"nlp-new", "research"}));
}

// While a lender waits for the borrowers it preempted to stop, what they free is not lent again:
// a stopped borrower that comes back waits instead of taking it (and being preempted again).
TEST(Quotas, QuotaBeingReclaimedIsNotLentAgain) {
  auto s = make();
  // n2's GPUs are free, but vision's use (8) is the cohort's whole nominal quota.
  add_nodes(*s, {gpu_node("n1", 8), gpu_node("n2", 2)});
  s->set_tenants({tenant("vision", "ml", 4), tenant("nlp", "ml", 4)});
  ASSERT_TRUE(s->submit(for_tenant(job("v-own", 4), "vision", 0)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("v-a", 2), "vision", 1)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("v-b", 2), "vision", 2)).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 3u);
  ASSERT_TRUE(s->submit(for_tenant(job("n", 4), "nlp", 3)).ok());
  Plan plan = s->schedule(kMinute);
  ASSERT_EQ(preempted(plan), (std::set<std::string>{"v-a", "v-b"}));
  // v-a stops first and is queued again (n2 would take it); v-b still runs.
  s->finish("v-a");
  ASSERT_TRUE(s->submit(for_tenant(job("v-a", 2), "vision", 1)).ok());
  plan = s->schedule(2 * kMinute);
  EXPECT_EQ(placement_of(plan, "v-a"), nullptr) << "took back the quota nlp reclaims";
  EXPECT_THAT(reason_of(plan, "v-a"), HasSubstr("tenant nlp is taking back quota it lent"));
  s->finish("v-b");
  plan = s->schedule(3 * kMinute);
  EXPECT_NE(placement_of(plan, "n"), nullptr);
  EXPECT_EQ(placement_of(plan, "v-a"), nullptr);
}

// Jobs of many shapes that only reclaiming could let start, while the borrower outranks them:
// a node freeing GPUs and a job it could preempt wakes them all, and each waits for quota
// again, decided without placing it or asking the index once per job.
TEST(Quotas, WokenJobsTheQuotaHoldsBackWaitWithoutAQueryEach) {
  auto s = make();
  NodeState n1 = gpu_node("n1", 2), n2 = gpu_node("n2", 2), n3 = gpu_node("n3", 2);
  add_nodes(*s, {n1, n2, n3, gpu_node("spare", 1)});
  s->set_tenants({tenant("vision", "ml", 2), tenant("nlp", "ml", 0)});
  // nlp borrows vision's whole quota at a priority vision's jobs cannot reclaim from.
  ASSERT_TRUE(start_on(*s, for_tenant(job("nlp-1", 2), "nlp"), 5, n1, {0, 1}).ok());
  ASSERT_TRUE(start_on(*s, for_tenant(job("hold", 2), "research"), 10, n2, {0, 1}).ok());
  ASSERT_TRUE(start_on(*s, for_tenant(job("low", 1), "research"), 0, n3, {0}).ok());
  ASSERT_TRUE(start_on(*s, for_tenant(job("other", 1), "research"), 10, n3, {1}).ok());
  constexpr int kJobs = 20;
  for (int i = 0; i < kJobs; ++i) {
    JobRequest v = for_tenant(job("v" + std::to_string(i), 1), "vision", i);
    v.priority = 1;
    v.cpu_milli = 1000 * (i + 1);  // a shape of its own
    ASSERT_TRUE(s->submit(v).ok());
  }
  Plan plan = s->schedule(kMinute);
  ASSERT_TRUE(plan.placements.empty() && plan.preemptions.empty());
  ASSERT_THAT(reason_of(plan, "v7"), HasSubstr("tenant vision: A100 quota"));
  // n3 frees a GPU and could free another by preempting "low": every vision job may fit there.
  s->finish("other");
  plan = s->schedule(2 * kMinute);
  EXPECT_TRUE(plan.placements.empty());
  EXPECT_TRUE(plan.preemptions.empty());
  PassStats stats = s->last_pass();
  EXPECT_EQ(stats.woken, kJobs);
  EXPECT_EQ(stats.decisions, kJobs);
  EXPECT_LE(stats.wake_queries, 4) << "a query per woken job";
  EXPECT_LE(stats.preemption_searches, 1);
}

// A job ahead in the queue is decided first even when a wake-up finds a later one of its tenant
// that waits for quota: here it takes a GPU of the node that made the later one quota's to hold
// back, and the later one then preempts instead.
TEST(Quotas, AJobAheadIsDecidedBeforeALaterOneWaitsForQuota) {
  auto s = make();
  NodeState a = gpu_node("a", 2), b = gpu_node("b", 2), c = gpu_node("c", 3);
  b.cpu_milli = 8000;
  add_nodes(*s, {a, b, c});
  s->set_tenants({tenant("vision", "ml", 4), tenant("nlp", "ml", 0)});
  // nlp borrows 3 of vision's 4 GPUs, at a priority vision's jobs cannot reclaim from.
  ASSERT_TRUE(start_on(*s, for_tenant(job("nlp-1", 3), "nlp"), 5, c, {0, 1, 2}).ok());
  ASSERT_TRUE(start_on(*s, for_tenant(job("low", 1), "research"), 0, b, {0}).ok());
  ASSERT_TRUE(start_on(*s, for_tenant(job("other", 1), "research"), 10, b, {1}).ok());
  // "first" and "q" differ only in CPUs (a wait of one says nothing of the other): both fit a,
  // and wait for quota (2 GPUs, 1 allowed).
  JobRequest first = for_tenant(job("first", 2), "vision", 1);
  JobRequest q = for_tenant(job("q", 2), "vision", 3);
  first.priority = q.priority = 1;
  first.cpu_milli = 2000;
  q.cpu_milli = 1000;
  ASSERT_TRUE(s->submit(first).ok());
  ASSERT_TRUE(s->submit(q).ok());
  Plan plan = s->schedule(kMinute);
  ASSERT_TRUE(plan.placements.empty() && plan.preemptions.empty());
  ASSERT_THAT(reason_of(plan, "q"), HasSubstr("tenant vision: A100 quota"));
  // b frees a GPU, and could free "low"'s: first and q are woken. "ahead", queued between them,
  // needs more CPUs than b has: it takes a GPU of a, where q no longer fits without preempting.
  s->finish("other");
  JobRequest ahead = for_tenant(job("ahead", 1), "vision", 2);
  ahead.priority = 1;
  ahead.cpu_milli = 32000;
  ASSERT_TRUE(s->submit(ahead).ok());
  plan = s->schedule(2 * kMinute);
  ASSERT_NE(placement_of(plan, "ahead"), nullptr);
  EXPECT_EQ(placement_of(plan, "ahead")->replicas.at(0).node_id, "id-a");
  EXPECT_EQ(preempted(plan), std::set<std::string>{"low"}) << reason_of(plan, "q");
}

TEST(FairShare, TheTenantWithTheSmallerDominantShareGoesFirst) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  ASSERT_TRUE(s->submit(for_tenant(job("a-running", 6), "a", 0)).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 1u);
  ASSERT_TRUE(s->submit(for_tenant(job("a-old", 2), "a", 1)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("b-new", 2), "b", 2)).ok());
  Plan plan = s->schedule(1);
  EXPECT_NE(placement_of(plan, "b-new"), nullptr) << "b uses nothing, a uses 6 of 8 GPUs";
  EXPECT_EQ(placement_of(plan, "a-old"), nullptr);
}

TEST(FairShare, SharesFollowTheCapacityOfNodesThatJoinAndLeave) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  JobRequest cpu_heavy = for_tenant(job("c-running", 2), "c", 0);
  cpu_heavy.cpu_milli = 40'000;
  ASSERT_TRUE(s->submit(for_tenant(job("g-running", 4), "g", 0)).ok());
  ASSERT_TRUE(s->submit(cpu_heavy).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 2u);
  // g: 4 of 8 GPUs (0.5). c: 40 of 64 CPUs (0.625), until a node of 256 CPUs joins (40 of 320:
  // its 2 of 8 GPUs dominate, 0.25). Two GPUs are left on n1.
  NodeState big = gpu_node("big", 0);
  big.cpu_milli = 256'000;
  add_nodes(*s, {big});
  ASSERT_TRUE(s->submit(for_tenant(job("g-next", 2), "g", 1)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("c-next", 2), "c", 2)).ok());
  Plan plan = s->schedule(1);
  EXPECT_NE(placement_of(plan, "c-next"), nullptr) << "c's share fell when the node joined";
  EXPECT_EQ(placement_of(plan, "g-next"), nullptr);
  // The node leaves: c's share is 0.625 again, above g's.
  s->finish("c-next");
  s->remove_node(big.id);
  ASSERT_TRUE(s->submit(for_tenant(job("c-again", 2), "c", 3)).ok());
  plan = s->schedule(2);
  EXPECT_NE(placement_of(plan, "g-next"), nullptr) << "c's share rose when the node left";
  EXPECT_EQ(placement_of(plan, "c-again"), nullptr);
}

TEST(FairShare, WeightsDivideTheShare) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8), gpu_node("n2", 8)});
  TenantSpec heavy;
  heavy.name = "heavy";
  heavy.weight = 4;
  s->set_tenants({heavy});
  ASSERT_TRUE(s->submit(for_tenant(job("h-running", 8), "heavy", 0)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("l-running", 4), "light", 0)).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 2u);
  // heavy: 8/16 / 4 = 0.125; light: 4/16 / 1 = 0.25. One slot of 4 GPUs is left.
  ASSERT_TRUE(s->submit(for_tenant(job("l-next", 4), "light", 1)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("h-next", 4), "heavy", 2)).ok());
  Plan plan = s->schedule(1);
  EXPECT_NE(placement_of(plan, "h-next"), nullptr);
  EXPECT_EQ(placement_of(plan, "l-next"), nullptr);
}

TEST(Gangs, AGangThatFitsOnOneNodeStaysThere) {
  JobRequest gang = job("gang", 4);
  gang.replicas = 2;
  Plan plan = schedule({gpu_node("a", 8), gpu_node("b", 8)}, {gang});
  const Placement* p = placement_of(plan, "gang");
  ASSERT_NE(p, nullptr) << reason_of(plan, "gang");
  ASSERT_EQ(p->replicas.size(), 2u);
  EXPECT_EQ(p->replicas[0].node_id, p->replicas[1].node_id);
}

TEST(Gangs, AGangStaysInOneZoneWhenOneZoneCanHoldIt) {
  std::vector<NodeState> nodes;
  for (int i = 0; i < 5; ++i) {
    NodeState n = gpu_node("n" + std::to_string(i), 8);
    n.labels["zone"] = i < 2 ? "a-small" : "b-large";
    nodes.push_back(n);
  }
  JobRequest gang = job("gang", 8);
  gang.replicas = 3;
  Plan plan = schedule(nodes, {gang});
  const Placement* p = placement_of(plan, "gang");
  ASSERT_NE(p, nullptr) << reason_of(plan, "gang");
  for (const auto& r : p->replicas)
    EXPECT_THAT(r.node_id, AnyOf("id-n2", "id-n3", "id-n4")) << "zone a-small has only 2 nodes";
}

TEST(Gangs, TwoGangsThatCannotBothFitNeverHoldHalves) {
  JobRequest g1 = job("g1", 8), g2 = job("g2", 8);
  g1.replicas = g2.replicas = 2;
  g2.created_at = 1;
  Plan plan = schedule({gpu_node("a", 8), gpu_node("b", 8), gpu_node("c", 8)}, {g1, g2});
  ASSERT_NE(placement_of(plan, "g1"), nullptr);
  EXPECT_EQ(placement_of(plan, "g1")->replicas.size(), 2u);
  EXPECT_EQ(placement_of(plan, "g2"), nullptr);
  EXPECT_THAT(reason_of(plan, "g2"), HasSubstr("gang of 2 replicas, 1 placeable now"));
}

TEST(Backfill, AJobThatCouldNeverStartGetsAReservationOnceAJobWithoutAnEndLeaves) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  JobRequest endless = job("endless", 4), timed = job("timed", 4);
  timed.max_runtime_ms = 60 * kMinute;
  ASSERT_TRUE(s->submit(endless).ok());
  ASSERT_TRUE(s->submit(timed).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 2u);
  JobRequest big = job("big", 8);
  big.created_at = 1;
  ASSERT_TRUE(s->submit(big).ok());
  // "endless" declared no end: no start can be promised.
  Plan plan = s->schedule(kMinute);
  EXPECT_THAT(reason_of(plan, "big"), Not(HasSubstr("reserved start")));
  // Once it leaves, "timed"'s end frees the rest.
  s->finish("endless");
  plan = s->schedule(2 * kMinute);
  EXPECT_THAT(reason_of(plan, "big"), HasSubstr("reserved start in ~58 min on n1"));
}

TEST(Backfill, TheBlockedJobGetsAReservationAndShortJobsRunBeforeIt) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  JobRequest running = job("running", 4);
  running.max_runtime_ms = 60 * kMinute;
  ASSERT_TRUE(s->submit(running).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 1u);
  JobRequest big = job("big", 8), quick = job("quick", 1), endless = job("endless", 1);
  big.created_at = 1;
  quick.created_at = 2;
  quick.max_runtime_ms = 30 * kMinute;
  endless.created_at = 3;
  for (const auto& j : {big, quick, endless}) ASSERT_TRUE(s->submit(j).ok());
  Plan plan = s->schedule(0);
  EXPECT_EQ(placement_of(plan, "big"), nullptr);
  EXPECT_EQ(reason_of(plan, "big"),
            "needs 8×GPU on one node; largest free block is 4 (n1); reserved start in ~60 min on "
            "n1");
  EXPECT_NE(placement_of(plan, "quick"), nullptr) << "ends before the reservation";
  EXPECT_EQ(placement_of(plan, "endless"), nullptr);
  EXPECT_EQ(reason_of(plan, "endless"),
            "waiting behind job big (reserved start in ~60 min); jobs whose max_runtime ends "
            "before that may start first");
}

// Submits an 8×H100 job behind the running ones; its reason after the next pass.
std::string reason_of_h100_job_behind(Scheduler& s) {
  JobRequest big = job("big", 8, "H100");
  big.created_at = 1;
  EXPECT_TRUE(s.submit(big).ok());
  return reason_of(s.schedule(0), "big");
}

// Nodes `a100` (8×A100) and "h1" (8×H100), each filled by a job: "soon" on the A100 node ends in
// 10 minutes, "later" on h1 in 60.
std::unique_ptr<Scheduler> a100_ending_before_h100(const std::string& a100) {
  auto s = make();
  add_nodes(*s, {gpu_node(a100, 8, "A100"), gpu_node("h1", 8, "H100")});
  JobRequest soon = job("soon", 8, "A100"), later = job("later", 8, "H100");
  soon.max_runtime_ms = 10 * kMinute;
  later.max_runtime_ms = 60 * kMinute;
  EXPECT_TRUE(s->submit(soon).ok());
  EXPECT_TRUE(s->submit(later).ok());
  EXPECT_EQ(s->schedule(0).placements.size(), 2u);
  return s;
}

TEST(Backfill, AReservationCountsOnlyJobsEndingOnNodesTheJobCanRunOn) {
  auto s = a100_ending_before_h100("a1");
  // The A100 node frees first, but the waiting job needs H100s: its start is the H100 job's end.
  EXPECT_THAT(reason_of_h100_job_behind(*s), HasSubstr("reserved start in ~60 min on h1"));
}

TEST(Backfill, AReservationCountsTheReplicasOfAGangOnNodesTheJobCanRunOn) {
  auto s = make();
  add_nodes(*s, {gpu_node("a1", 8, "A100"), gpu_node("a2", 8, "A100"), gpu_node("h1", 8, "H100")});
  // A100 "soon" ends first; the gang holds the other A100 node and the H100 one.
  JobRequest soon = job("soon", 8, "A100"), gang = job("gang", 8);
  soon.max_runtime_ms = 10 * kMinute;
  soon.created_at = -1;
  gang.replicas = 2;
  gang.max_runtime_ms = 30 * kMinute;
  ASSERT_TRUE(s->submit(soon).ok());
  ASSERT_TRUE(s->submit(gang).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 2u);
  EXPECT_THAT(reason_of_h100_job_behind(*s), HasSubstr("reserved start in ~30 min on h1"));
}

TEST(Backfill, AReservationCountsJobsOnANodeThatChangedKindWhileTheyRun) {
  auto s = a100_ending_before_h100("x1");
  // x1 now reports H100s; "soon" keeps running there and frees it first.
  s->upsert_node(gpu_node("x1", 8, "H100"));
  EXPECT_THAT(reason_of_h100_job_behind(*s), HasSubstr("reserved start in ~10 min on x1"));
}

TEST(Preemption, AJobThatStartsOrEndsOnANodeIsSeenByTheNextSearchThere) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  auto submit = [&](const std::string& id, int gpus, int priority) {
    JobRequest r = job(id, gpus);
    r.priority = priority;
    ASSERT_TRUE(s->submit(r).ok());
  };
  // A first search looks at the node's jobs: "low-a" goes for "high-x".
  submit("low-a", 4, 0);
  ASSERT_EQ(s->schedule(0).placements.size(), 1u);
  submit("high-x", 6, 1000);
  Plan plan = s->schedule(kMinute);
  EXPECT_EQ(preempted(plan), std::set<std::string>{"low-a"});
  s->finish("low-a");
  ASSERT_NE(placement_of(s->schedule(2 * kMinute), "high-x"), nullptr);
  // A job that starts there afterwards is a victim for the next search...
  submit("low-b", 2, 0);
  ASSERT_NE(placement_of(s->schedule(3 * kMinute), "low-b"), nullptr);
  submit("high-y", 2, 1000);
  plan = s->schedule(4 * kMinute);
  EXPECT_EQ(preempted(plan), std::set<std::string>{"low-b"});
  s->finish("low-b");
  ASSERT_NE(placement_of(s->schedule(5 * kMinute), "high-y"), nullptr);
  // ...and one that ended is not: only jobs of its own priority are left.
  submit("high-z", 1, 1000);
  plan = s->schedule(6 * kMinute);
  EXPECT_TRUE(plan.preemptions.empty());
  EXPECT_EQ(placement_of(plan, "high-z"), nullptr);
}

TEST(Preemption, TheSmallestSetOfLowerPriorityVictims) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  JobRequest l4 = job("low-4", 4), l2a = job("low-2a", 2), l2b = job("low-2b", 2);
  l4.priority = l2a.priority = l2b.priority = 0;
  for (const auto& j : {l4, l2a, l2b}) ASSERT_TRUE(s->submit(j).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 3u);
  JobRequest high = job("high", 2);
  high.priority = 1000;
  ASSERT_TRUE(s->submit(high).ok());
  Plan plan = s->schedule(kMinute);
  EXPECT_EQ(plan.preemptions.size(), 1u);
  EXPECT_THAT(preempted(plan),
              AnyOf(std::set<std::string>{"low-2a"}, std::set<std::string>{"low-2b"}));
  EXPECT_THAT(reason_of(plan, "high"), HasSubstr("preempting 1 job to start"));
  // While the victim stops, no further victims are chosen.
  Plan again = s->schedule(kMinute + 1);
  EXPECT_TRUE(again.preemptions.empty());
  // The freed GPUs go to the preemptor, not to a normal job submitted meanwhile.
  ASSERT_TRUE(s->submit(job("normal", 2)).ok());
  s->finish(*preempted(plan).begin());
  Plan after = s->schedule(2 * kMinute);
  EXPECT_NE(placement_of(after, "high"), nullptr);
  EXPECT_EQ(placement_of(after, "normal"), nullptr);
}

// Among many full nodes, the preemptor takes the cheapest option (the fewest victims, then the
// least GPU milli they hold, then the node with the fewest jobs): here one 300-milli share on
// a node of two jobs, though another node runs a 300-milli share too (with three jobs), one
// frees a GPU only with two shares gone, and every other GPU holds a whole job.
TEST(Preemption, TheCheapestVictimAmongManyNodes) {
  auto s = make();
  const std::vector<NodeState> nodes = add_two_gpu_nodes(*s, "n", 24);
  for (int i = 0; i < 24; ++i) {
    const NodeState& n = nodes[i];
    const std::string& name = n.name;
    if (i == 3) {  // a 300-milli share, and two of 500 on the other GPU: three jobs
      ASSERT_TRUE(start_share_on(*s, "s300-n03", 300, n, 0).ok());
      ASSERT_TRUE(start_share_on(*s, "s500a-n03", 500, n, 1).ok());
      ASSERT_TRUE(start_share_on(*s, "s500b-n03", 500, n, 1).ok());
      continue;
    }
    if (i == 5) {  // two shares of 400 together on GPU 0: two victims to free it
      ASSERT_TRUE(start_share_on(*s, "s400a-n05", 400, n, 0).ok());
      ASSERT_TRUE(start_share_on(*s, "s400b-n05", 400, n, 0).ok());
    } else if (i == 11) {
      ASSERT_TRUE(start_share_on(*s, "s600-n11", 600, n, 0).ok());
    } else if (i == 17) {
      ASSERT_TRUE(start_share_on(*s, "s300-n17", 300, n, 0).ok());
    } else {
      ASSERT_TRUE(start_on(*s, job("w0-" + name, 1), 0, n, {0}).ok());
    }
    ASSERT_TRUE(start_on(*s, job("w1-" + name, 1), 0, n, {1}).ok());
  }
  Plan plan = submit_high_and_schedule(*s);
  EXPECT_EQ(preempted(plan), std::set<std::string>{"s300-n17"});
  EXPECT_THAT(reason_of(plan, "high"), HasSubstr("preempting 1 job to start (s300-n17)"));
}

// One victim beats several that hold less, and the smaller of two single victims wins: on nodes
// whose GPUs each run four 250-milli shares a whole GPU takes four victims; one node runs a
// 1-GPU job on each GPU (one victim of 1 GPU), another one job on both (one victim of 2 GPUs).
TEST(Preemption, OneVictimBeatsSeveralSmallerOnes) {
  auto s = make();
  const std::vector<NodeState> nodes = add_two_gpu_nodes(*s, "m", 20);
  for (int i = 0; i < 20; ++i) {
    const NodeState& n = nodes[i];
    if (i == 5) {
      ASSERT_TRUE(start_on(*s, job("pair-m05", 2), 0, n, {0, 1}).ok());
      continue;
    }
    for (int gpu = 0; gpu < 2; ++gpu) {
      if (i == 13) {
        ASSERT_TRUE(start_on(*s, job("w" + std::to_string(gpu) + "-m13", 1), 0, n, {gpu}).ok());
        continue;
      }
      for (int k = 0; k < 4; ++k) {
        const std::string id = n.name + "-" + std::to_string(gpu) + "-" + std::to_string(k);
        ASSERT_TRUE(start_share_on(*s, id, 250, n, gpu).ok());
      }
    }
  }
  Plan plan = submit_high_and_schedule(*s);
  EXPECT_THAT(preempted(plan),
              AnyOf(std::set<std::string>{"w0-m13"}, std::set<std::string>{"w1-m13"}));
}

// A job whose two replicas share one GPU frees all of it as one victim: it holds 800 milli
// there, less than any whole 1-GPU job elsewhere.
TEST(Preemption, AJobWhoseReplicasShareAGpuIsOneVictimForAllOfIt) {
  auto s = make();
  const std::vector<NodeState> nodes = add_two_gpu_nodes(*s, "x", 6);
  for (int i = 0; i < 6; ++i) {
    const NodeState& n = nodes[i];
    if (i == 3) {
      JobRequest pair = share("pair", 400);
      pair.replicas = 2;
      pair.priority = 0;
      std::vector<ReplicaPlacement> replicas;
      for (int rank = 0; rank < 2; ++rank)
        replicas.push_back({rank, n.id, {{n.gpus[0].index, n.gpus[0].uuid, 400}}, 0, 0});
      ASSERT_TRUE(s->start(pair, {pair.job_id, replicas}, 0).ok());
    } else {
      ASSERT_TRUE(start_on(*s, job("w0-" + n.name, 1), 0, n, {0}).ok());
    }
    ASSERT_TRUE(start_on(*s, job("w1-" + n.name, 1), 0, n, {1}).ok());
  }
  EXPECT_EQ(preempted(submit_high_and_schedule(*s)), std::set<std::string>{"pair"});
}

TEST(Preemption, AVictimOnANodeThatJoinedLaterIsFound) {
  // The victim candidates of priority 1000 are found on n1 first; n2 joins afterwards and runs
  // the only job left to preempt.
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  JobRequest low1 = job("low-1", 8);
  ASSERT_TRUE(s->submit(low1).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 1u);
  JobRequest high1 = job("high-1", 8);
  high1.priority = 1000;
  ASSERT_TRUE(s->submit(high1).ok());
  ASSERT_EQ(preempted(s->schedule(kMinute)), std::set<std::string>{"low-1"});
  s->finish("low-1");
  ASSERT_NE(placement_of(s->schedule(2 * kMinute), "high-1"), nullptr);
  add_nodes(*s, {gpu_node("n2", 8)});
  ASSERT_TRUE(s->submit(job("low-2", 8)).ok());
  Plan plan = s->schedule(3 * kMinute);
  ASSERT_NE(placement_of(plan, "low-2"), nullptr);
  EXPECT_EQ(placement_of(plan, "low-2")->replicas[0].node_id, "id-n2");
  JobRequest high2 = job("high-2", 8);
  high2.priority = 1000;
  ASSERT_TRUE(s->submit(high2).ok());
  plan = s->schedule(4 * kMinute);
  EXPECT_EQ(preempted(plan), std::set<std::string>{"low-2"});
}

TEST(Preemption, APreemptorStartsOnItsHeldNodeBeforeTheRestOfTheQueue) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  JobRequest low = job("low", 8);
  low.priority = 0;
  ASSERT_TRUE(s->submit(low).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 1u);
  JobRequest preemptor = job("preemptor", 8);
  preemptor.tenant = "b";
  preemptor.priority = 100;
  ASSERT_TRUE(s->submit(preemptor).ok());
  ASSERT_EQ(preempted(s->schedule(kMinute)), std::set<std::string>{"low"});
  // A job of higher priority, of a tenant served first, arrives while the victim stops: the
  // node is still the preemptor's.
  JobRequest urgent = job("urgent", 8);
  urgent.tenant = "a";
  urgent.priority = 1000;
  ASSERT_TRUE(s->submit(urgent).ok());
  s->finish("low");
  Plan after = s->schedule(2 * kMinute);
  EXPECT_NE(placement_of(after, "preemptor"), nullptr);
  EXPECT_EQ(placement_of(after, "urgent"), nullptr);
  EXPECT_THAT(reason_of(after, "urgent"), HasSubstr("needs 8×GPU on one node"));
}

TEST(Preemption, EqualPreemptorsInSuccessivePassesChooseDifferentVictims) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8), gpu_node("n2", 8), gpu_node("n3", 8)});
  for (const char* id : {"low-1", "low-2", "low-3"}) {
    JobRequest low = job(id, 8);
    low.priority = 0;
    ASSERT_TRUE(s->submit(low).ok());
  }
  ASSERT_EQ(s->schedule(0).placements.size(), 3u);
  // Each pass decides one new preemptor of the same shape, tenant and priority; nothing starts
  // or ends in between, so only the victims already chosen tell them apart.
  std::set<std::string> victims;
  for (int i = 0; i < 3; ++i) {
    JobRequest high = job("high-" + std::to_string(i), 8);
    high.priority = 1000;
    ASSERT_TRUE(s->submit(high).ok());
    Plan plan = s->schedule(kMinute + i);
    ASSERT_EQ(plan.preemptions.size(), 1u) << "preemptor " << i;
    EXPECT_TRUE(victims.insert(plan.preemptions[0].job_id).second)
        << plan.preemptions[0].job_id << " was chosen twice";
  }
  // A fourth finds no victims left and says so.
  JobRequest extra = job("high-3", 8);
  extra.priority = 1000;
  ASSERT_TRUE(s->submit(extra).ok());
  Plan plan = s->schedule(2 * kMinute);
  EXPECT_TRUE(plan.preemptions.empty());
  EXPECT_THAT(reason_of(plan, "high-3"), HasSubstr("needs 8×GPU on one node"));
}

TEST(Preemption, AJobPlacedInOnePassIsAVictimFromTheNext) {
  // The preemptor looks for victims in the pass that places the low-priority job, when that
  // job may not be preempted yet (no churn); in the next pass it may.
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  JobRequest low = for_tenant(job("low", 8), "a"), high = for_tenant(job("high", 8), "b");
  low.priority = 0;
  high.priority = 1000;
  ASSERT_TRUE(s->submit(low).ok());
  ASSERT_TRUE(s->submit(high).ok());
  Plan first = s->schedule(0);  // tenant a's job is decided first: both use nothing yet
  ASSERT_NE(placement_of(first, "low"), nullptr);
  EXPECT_TRUE(first.preemptions.empty());
  Plan second = s->schedule(kMinute);
  EXPECT_EQ(preempted(second), std::set<std::string>{"low"});
  EXPECT_THAT(reason_of(second, "high"), HasSubstr("preempting 1 job to start (low)"));
}

TEST(Preemption, AJobStartedBetweenPassesIsAVictim) {
  // Victims are looked for in the first pass (by a job pinned to a full zone); then the server
  // reports a low-priority job it started on the other node. A later preemptor finds it.
  auto s = make();
  NodeState n1 = with_used(gpu_node("n1", 8), {0, 1, 2, 3, 4, 5, 6, 7}), n2 = gpu_node("n2", 8);
  n1.labels["zone"] = "z1";
  n2.labels["zone"] = "z2";
  add_nodes(*s, {n1, n2});
  JobRequest pinned = job("pinned", 8);
  pinned.priority = 1000;
  pinned.node_selector["zone"] = "z1";
  ASSERT_TRUE(s->submit(pinned).ok());
  Plan first = s->schedule(0);
  EXPECT_TRUE(first.placements.empty());
  EXPECT_TRUE(first.preemptions.empty());

  JobRequest low = job("low", 8);
  low.priority = 0;
  ReplicaPlacement rp{0, n2.id, {}, 0, 0};
  for (const auto& g : n2.gpus) rp.gpus.push_back({g.index, g.uuid, 1000});
  ASSERT_TRUE(s->start(low, {"low", {rp}}, kMinute).ok());
  JobRequest high = job("high", 8);
  high.priority = 1000;
  ASSERT_TRUE(s->submit(high).ok());
  Plan second = s->schedule(2 * kMinute);
  EXPECT_EQ(preempted(second), std::set<std::string>{"low"});
  EXPECT_THAT(reason_of(second, "high"), HasSubstr("preempting 1 job to start (low)"));
  EXPECT_THAT(reason_of(second, "pinned"), Not(HasSubstr("preempting")));
}

TEST(Preemption, NeverWhenTheJobStillWouldNotFit) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  JobRequest low = job("low", 4), top = job("top", 4);
  low.priority = 0;
  top.priority = 5000;
  ASSERT_TRUE(s->submit(low).ok());
  ASSERT_TRUE(s->submit(top).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 2u);
  JobRequest high = job("high", 8);
  high.priority = 1000;
  ASSERT_TRUE(s->submit(high).ok());
  Plan plan = s->schedule(kMinute);
  EXPECT_TRUE(plan.preemptions.empty()) << "preempting low alone frees only 4 of the 8";
  EXPECT_THAT(reason_of(plan, "high"), HasSubstr("needs 8×GPU on one node"));
}

TEST(Preemption, SpotJobsMakeWayForOtherWorkOfTheSamePriority) {
  auto s = make();
  NodeState spot_node = gpu_node("n1", 8);
  spot_node.labels["capacity-class"] = "spot";
  add_nodes(*s, {spot_node});
  JobRequest spot = job("spot", 8);
  spot.capacity_class = CapacityClass::kSpot;
  ASSERT_TRUE(s->submit(spot).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 1u);
  ASSERT_TRUE(s->submit(job("steady", 4)).ok());
  EXPECT_EQ(preempted(s->schedule(1)), std::set<std::string>{"spot"});
}

TEST(Preemption, AWholeGangIsOneVictim) {
  auto s = make();
  add_nodes(*s, {gpu_node("a", 8), gpu_node("b", 8)});
  JobRequest gang = job("gang", 8);
  gang.replicas = 2;
  gang.priority = 0;
  ASSERT_TRUE(s->submit(gang).ok());
  ASSERT_EQ(s->schedule(0).placements.size(), 1u);
  JobRequest high = job("high", 8);
  high.priority = 1000;
  ASSERT_TRUE(s->submit(high).ok());
  Plan plan = s->schedule(1);
  EXPECT_EQ(preempted(plan), std::set<std::string>{"gang"});
}

TEST(Incremental, APassWithNothingFreedDecidesOnlyNewJobs) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 2)});
  ASSERT_TRUE(s->submit(job("fits", 2)).ok());
  ASSERT_TRUE(s->submit(for_tenant(job("waits", 2), "default", 1)).ok());
  Plan first = s->schedule(0);
  EXPECT_FALSE(reason_of(first, "waits").empty());
  ASSERT_TRUE(s->submit(for_tenant(job("new", 1), "default", 2)).ok());
  Plan second = s->schedule(1);
  EXPECT_EQ(reason_of(second, "waits"), "") << "unchanged reasons are not repeated";
  EXPECT_FALSE(reason_of(second, "new").empty());
  s->finish("fits");
  Plan third = s->schedule(2);
  EXPECT_NE(placement_of(third, "waits"), nullptr);
}

TEST(Events, BadRequestsAreRefusedWithTheField) {
  auto s = make();
  JobRequest bad = job("bad", 1);
  bad.gpu_milli = 1500;
  auto st = s->submit(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().message, HasSubstr("gpu_milli: 1500"));
  ASSERT_TRUE(s->submit(job("dup", 1)).ok());
  EXPECT_FALSE(s->submit(job("dup", 1)).ok());
  JobRequest none = job("none", 1);
  none.replicas = 0;
  EXPECT_FALSE(s->submit(none).ok());
  JobRequest lowest = job("lowest", 1);
  lowest.priority = std::numeric_limits<int>::min();
  st = s->submit(lowest);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().message, HasSubstr("priority: -2147483648 is outside"));
  Placement nowhere{"x", {{0, "no-such-node", {}, 0, 0}}};
  EXPECT_FALSE(s->start(job("x", 0), nowhere, 0).ok());
}

TEST(Events, ANodeThatLeavesTakesNoNewWork) {
  auto s = make();
  add_nodes(*s, {gpu_node("n1", 8)});
  s->remove_node("id-n1");
  ASSERT_TRUE(s->submit(job("j", 1)).ok());
  Plan plan = s->schedule(0);
  EXPECT_EQ(placement_of(plan, "j"), nullptr);
  EXPECT_THAT(reason_of(plan, "j"), HasSubstr("no nodes registered"));
}

TEST(Policies, EveryPolicyPlacesWhatFits) {
  for (const auto& name : scheduler_policy_names()) {
    Plan plan = schedule({gpu_node("a", 8), with_used(gpu_node("b", 8), {0, 1})},
                         {job("one", 1), share("half", 500), job("four", 4)}, name);
    EXPECT_EQ(plan.placements.size(), 3u) << name;
  }
}

TEST(Policies, FirstFitTakesTheFirstNodeThatFits) {
  Plan plan = schedule({gpu_node("a", 8), with_used(gpu_node("b", 8), {0, 1, 2, 3, 4, 5})},
                       {job("j", 1)}, "first-fit");
  ASSERT_NE(placement_of(plan, "j"), nullptr);
  EXPECT_EQ(placement_of(plan, "j")->replicas[0].node_id, "id-a");
}

}  // namespace
}  // namespace gpucloud::sched
