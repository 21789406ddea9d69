// max_price (docs/jobspec.md): a job is kept off nodes whose known price per GPU-hour exceeds
// its limit, waits with the price in its reason, and nodes of different prices are not
// grouped as equal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cluster.h"
#include "sched/scheduler.h"

namespace gpucloud::sched {
namespace {

using namespace testing;
using ::testing::HasSubstr;

std::unique_ptr<Scheduler> make() {
  auto s = create_scheduler(PolicySettings{});
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

NodeState priced(const std::string& name, double per_gpu_hour) {
  NodeState n = gpu_node(name, 8);
  n.price_per_gpu_hour = per_gpu_hour;
  return n;
}

TEST(MaxPrice, AJobAvoidsTheNodeAboveItsLimitAndUsesTheCheapOne) {
  auto s = make();
  // The same machines, only the price differs: if they were one class, the expensive node
  // (first in name order) could be chosen for a job that may not use it.
  add_nodes(*s, {priced("a-expensive", 3.06), priced("b-cheap", 1.50)});
  JobRequest j = job("capped", 8);
  j.max_price = 2.0;
  ASSERT_TRUE(s->submit(j).ok());
  Plan plan = s->schedule(0);
  const Placement* p = placement_of(plan, "capped");
  ASSERT_NE(p, nullptr) << reason_of(plan, "capped");
  EXPECT_EQ(p->replicas.at(0).node_id, "id-b-cheap");
}

TEST(MaxPrice, AJobWaitsWithThePriceAndTheLimitWhenEveryNodeCostsMore) {
  auto s = make();
  add_nodes(*s, {priced("n1", 3.06)});
  JobRequest j = job("capped", 1);
  j.max_price = 2.0;
  ASSERT_TRUE(s->submit(j).ok()) << "prices change: the job waits rather than being refused";
  Plan plan = s->schedule(0);
  EXPECT_EQ(placement_of(plan, "capped"), nullptr);
  EXPECT_THAT(reason_of(plan, "capped"),
              HasSubstr("node price $3.06/GPU-hour exceeds the job's max_price $2.00"));
}

TEST(MaxPrice, NodesWithoutAPriceAndJobsWithoutALimitAreNotFiltered) {
  auto s = make();
  add_nodes(*s, {gpu_node("unpriced", 8), priced("pricey", 50)});
  JobRequest capped = job("capped", 8);
  capped.max_price = 0.5;
  capped.created_at = 0;
  JobRequest free_spender = job("any", 8);
  free_spender.created_at = 1;  // after capped
  ASSERT_TRUE(s->submit(capped).ok());
  ASSERT_TRUE(s->submit(free_spender).ok());
  Plan plan = s->schedule(0);
  ASSERT_NE(placement_of(plan, "capped"), nullptr) << reason_of(plan, "capped");
  EXPECT_EQ(placement_of(plan, "capped")->replicas.at(0).node_id, "id-unpriced");
  ASSERT_NE(placement_of(plan, "any"), nullptr) << reason_of(plan, "any");
  EXPECT_EQ(placement_of(plan, "any")->replicas.at(0).node_id, "id-pricey");
}

}  // namespace
}  // namespace gpucloud::sched

namespace gpucloud::sched {
namespace {

NodeState labelled(const std::string& name, const std::string& capacity) {
  NodeState n = gpu_node(name, 8);
  n.labels["capacity-class"] = capacity;
  return n;
}

// Where one 4-GPU job lands on a cluster of an on-demand and a spot node, named so that
// either comes first.
std::string landing(bool spot_first, double max_price) {
  auto s = make();
  add_nodes(*s,
            {labelled(spot_first ? "a-spot" : "a-on-demand", spot_first ? "spot" : "on-demand"),
             labelled(spot_first ? "b-on-demand" : "b-spot", spot_first ? "on-demand" : "spot")});
  JobRequest j = job("j", 4);
  j.max_price = max_price;
  EXPECT_TRUE(s->submit(j).ok());
  Plan plan = s->schedule(0);
  const Placement* p = placement_of(plan, "j");
  EXPECT_NE(p, nullptr) << reason_of(plan, "j");
  return p ? p->replicas.at(0).node_id : "";
}

TEST(AnyCapacityClass, AJobWithAPriceCapPrefersSpotNodesAndOthersKeepThePolicysOrder) {
  for (bool spot_first : {false, true})
    EXPECT_THAT(landing(spot_first, 10), HasSubstr("spot")) << "spot first: " << spot_first;
  // Without a cap the policy's order decides, and in one of the two namings it is on-demand.
  bool on_demand_somewhere = false;
  for (bool spot_first : {false, true})
    on_demand_somewhere |= landing(spot_first, 0).find("on-demand") != std::string::npos;
  EXPECT_TRUE(on_demand_somewhere);
}

TEST(AnyCapacityClass, AJobWithAPriceCapRunsOnDemandWhenNoSpotNodeFits) {
  auto s = make();
  add_nodes(*s, {labelled("a-on-demand", "on-demand"), labelled("b-spot", "spot")});
  ASSERT_TRUE(s->submit(job("filler", 8)).ok());
  Plan first = s->schedule(0);
  ASSERT_NE(placement_of(first, "filler"), nullptr);
  JobRequest cheap = job("cheap", 8);
  cheap.max_price = 10;
  cheap.created_at = 5;
  ASSERT_TRUE(s->submit(cheap).ok());
  Plan plan = s->schedule(1);
  ASSERT_NE(placement_of(plan, "cheap"), nullptr) << reason_of(plan, "cheap");
  EXPECT_NE(placement_of(plan, "cheap")->replicas.at(0).node_id,
            placement_of(first, "filler")->replicas.at(0).node_id);
}

TEST(MaxCost, WithAMaxRuntimeItCapsThePricePerGpuHour) {
  JobSpec spec;
  spec.gpus = 2;
  spec.replicas = 2;
  spec.max_runtime_ms = 2 * 3'600'000;
  spec.max_cost = 40;  // 40 USD over 2 h on 4 GPUs: 5 USD per GPU-hour
  JobRequest r = JobRequest::from_spec("j", spec, 0, 100);
  EXPECT_DOUBLE_EQ(r.max_price, 5.0);
  EXPECT_TRUE(r.price_cap_from_cost);
  // The job's own lower max_price stays in force.
  spec.max_price = 3;
  r = JobRequest::from_spec("j", spec, 0, 100);
  EXPECT_DOUBLE_EQ(r.max_price, 3.0);
  EXPECT_FALSE(r.price_cap_from_cost);
  // Without a max_runtime there is no worst case to cap: only the stop at max_cost applies.
  spec.max_price = 0;
  spec.max_runtime_ms = 0;
  EXPECT_DOUBLE_EQ(JobRequest::from_spec("j", spec, 0, 100).max_price, 0.0);
  // A share counts its fraction: 250 milli for 1 h at 1 USD is 4 USD per GPU-hour.
  JobSpec share;
  share.gpus = 1;
  share.gpu_milli = 250;
  share.max_runtime_ms = 3'600'000;
  share.max_cost = 1;
  EXPECT_DOUBLE_EQ(JobRequest::from_spec("s", share, 0, 100).max_price, 4.0);
}

TEST(MaxCost, AJobWaitsWithAReasonThatNamesItsMaxCost) {
  auto s = make();
  add_nodes(*s, {priced("n1", 3.06)});
  JobSpec spec;
  spec.gpus = 1;
  spec.max_runtime_ms = 3'600'000;
  spec.max_cost = 2;
  ASSERT_TRUE(s->submit(JobRequest::from_spec("capped", spec, 0, 100)).ok());
  Plan plan = s->schedule(0);
  EXPECT_EQ(placement_of(plan, "capped"), nullptr);
  EXPECT_THAT(reason_of(plan, "capped"),
              HasSubstr("node price $3.06/GPU-hour could take the job past its max_cost within "
                        "its max_runtime (at most $2.00/GPU-hour)"));
}

}  // namespace
}  // namespace gpucloud::sched
