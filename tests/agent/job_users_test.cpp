// Which user a tenant's jobs run as on a node: configured, allowed root, or picked from the range.
#include "agent/job_users.h"

#include <gtest/gtest.h>

#include <set>

namespace gpucloud::agent {
namespace {

Allocation for_tenant(const std::string& tenant, int64_t uid = -1, bool allow_root = false) {
  Allocation a;
  a.tenant = tenant;
  a.uid = uid;
  a.gid = uid;
  a.allow_root = allow_root;
  return a;
}

auto none_taken = [](int64_t) { return false; };

TEST(JobUsers, EachTenantGetsItsOwnStableUidFromTheRange) {
  std::map<std::string, int64_t> uids;
  JobUidRange range{60000, 60999};
  auto vision = job_ids_for(for_tenant("vision"), range, uids, none_taken);
  auto nlp = job_ids_for(for_tenant("nlp"), range, uids, none_taken);
  ASSERT_TRUE(vision.ok() && nlp.ok());
  EXPECT_GE(vision->uid, 60000);
  EXPECT_LE(vision->uid, 60999);
  EXPECT_EQ(vision->gid, vision->uid);
  EXPECT_NE(nlp->uid, vision->uid);
  // Again, and after a restart (the map is what the agent state persists): the same uid.
  std::map<std::string, int64_t> reloaded = uids;
  EXPECT_EQ(job_ids_for(for_tenant("vision"), range, reloaded, none_taken)->uid, vision->uid);
  EXPECT_EQ(job_ids_for(for_tenant("nlp"), range, reloaded, none_taken)->uid, nlp->uid);
}

TEST(JobUsers, NodesThatSeeTenantsInAnotherOrderMostlyAgree) {
  JobUidRange range{60000, 60999};
  std::map<std::string, int64_t> node_a, node_b;
  for (const char* t : {"vision", "nlp", "speech"})
    ASSERT_TRUE(job_ids_for(for_tenant(t), range, node_a, none_taken).ok());
  for (const char* t : {"speech", "nlp", "vision"})
    ASSERT_TRUE(job_ids_for(for_tenant(t), range, node_b, none_taken).ok());
  EXPECT_EQ(node_a, node_b);
}

TEST(JobUsers, IdsTheHostUsesAreSkipped) {
  std::map<std::string, int64_t> uids;
  int64_t free_uid = job_ids_for(for_tenant("vision"), {60000, 60999}, uids, none_taken)->uid;
  uids.clear();
  auto taken = [&](int64_t id) { return id == free_uid; };
  auto next = job_ids_for(for_tenant("vision"), {60000, 60999}, uids, taken);
  ASSERT_TRUE(next.ok());
  EXPECT_NE(next->uid, free_uid);
  EXPECT_TRUE(host_id_taken(0)) << "root is in /etc/passwd";
}

TEST(JobUsers, ConfiguredUidsAndRootWin) {
  std::map<std::string, int64_t> uids;
  JobUidRange range{60000, 60999};
  auto configured = job_ids_for(for_tenant("vision", 5000), range, uids, none_taken);
  ASSERT_TRUE(configured.ok());
  EXPECT_EQ(configured->uid, 5000);
  // A tenant picked later never gets a uid another tenant has here.
  std::map<std::string, int64_t> alone;
  int64_t nlp_alone = job_ids_for(for_tenant("nlp"), range, alone, none_taken)->uid;
  uids["other"] = nlp_alone;
  auto nlp = job_ids_for(for_tenant("nlp"), range, uids, none_taken);
  ASSERT_TRUE(nlp.ok());
  EXPECT_NE(nlp->uid, nlp_alone);
  auto root = job_ids_for(for_tenant("ops", -1, true), range, uids, none_taken);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->uid, 0);
  EXPECT_EQ(root->gid, 0);
}

TEST(JobUsers, AConfiguredUidThisNodeGaveAnotherTenantIsRefused) {
  std::map<std::string, int64_t> uids = {{"nlp", 60000}};
  auto clash = job_ids_for(for_tenant("vision", 60000), {60000, 60999}, uids, none_taken);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("tenant vision is configured with uid 60000, which this "
                                       "node gave to tenant nlp"),
            std::string::npos)
      << clash.error().message;
}

TEST(JobUsers, AnExhaustedRangeSaysWhatToDo) {
  std::map<std::string, int64_t> uids;
  JobUidRange range{60000, 60000};
  ASSERT_TRUE(job_ids_for(for_tenant("a"), range, uids, none_taken).ok());
  auto full = job_ids_for(for_tenant("b"), range, uids, none_taken);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find("widen the range"), std::string::npos);
}

TEST(JobUsers, ParsesRanges) {
  auto r = parse_job_uid_range("60000-60999");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, 60000);
  EXPECT_EQ(r->last, 60999);
  for (const char* bad : {"", "60000", "0-10", "10-5", "a-b", "1-4294967295", "1-2x"}) {
    auto parsed = parse_job_uid_range(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_NE(parsed.error().message.find("FIRST-LAST"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace gpucloud::agent
