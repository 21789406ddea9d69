#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cluster.h"
#include "sched/scheduler.h"

namespace gpucloud::sched {
namespace {

using namespace testing;
using ::testing::HasSubstr;

TEST(CheckSatisfiable, RejectsMoreGpusThanTheLargestNodeHas) {
  Status s = check_satisfiable(job("j", 12), {gpu_node("a", 8), gpu_node("b", 4)});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnsatisfiable);
  EXPECT_THAT(s.error().message, HasSubstr("largest"));
  EXPECT_THAT(s.error().message, HasSubstr("8"));
  EXPECT_THAT(s.error().message, HasSubstr("12"));
}

TEST(CheckSatisfiable, RejectsAGpuModelNoNodeHas) {
  Status s = check_satisfiable(job("j", 1, "V100"), {gpu_node("a", 8, "A100")});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnsatisfiable);
  EXPECT_THAT(s.error().message, HasSubstr("V100"));
}

TEST(CheckSatisfiable, RejectsMoreCpusThanAnyNode) {
  JobRequest j = job("j", 1);
  j.cpu_milli = 200'000;
  Status s = check_satisfiable(j, {gpu_node("a", 8)});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("cpus: 200"));
}

TEST(CheckSatisfiable, AcceptsAFittingJobEvenWhenTheClusterIsBusy) {
  NodeState busy = with_used(gpu_node("a", 8), {0, 1, 2, 3, 4, 5, 6, 7});
  busy.schedulable = false;
  EXPECT_TRUE(check_satisfiable(job("j", 8, "A100"), {busy}).ok());
  EXPECT_TRUE(check_satisfiable(share("s", 250), {busy}).ok());
}

TEST(CheckSatisfiable, AcceptsAnythingWhenNoNodesExist) {
  EXPECT_TRUE(check_satisfiable(job("j", 64, "B200"), {}).ok());
}

}  // namespace
}  // namespace gpucloud::sched
