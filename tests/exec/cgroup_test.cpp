// Finding the memory controller and naming job cgroups.
#include "exec/process/cgroup.h"

#include "test_support.h"

namespace gpucloud::exec::testing {
namespace {

TEST(CgroupTest, FindsV1MemoryControllerInTheMountTable) {
  TempDir tmp;
  std::ofstream(tmp.path() + "/mounts") << "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n"
                                           "cgroup /cg/cpu cgroup rw,relatime,cpu 0 0\n"
                                           "cgroup /cg/memory cgroup rw,relatime,memory 0 0\n"
                                           "cgroup2 " +
                                               tmp.path() + "/none cgroup2 rw 0 0\n";
  auto root = find_memory_cgroup_root(tmp.path() + "/mounts");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->version, CgroupVersion::kV1);
  EXPECT_EQ(root->path, "/cg/memory");
}

TEST(CgroupTest, PrefersV2WhenItHasTheMemoryController) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.path() + "/unified");
  std::ofstream(tmp.path() + "/unified/cgroup.controllers") << "cpuset cpu io memory pids\n";
  std::ofstream(tmp.path() + "/mounts") << "cgroup /cg/memory cgroup rw,memory 0 0\n"
                                           "cgroup2 " +
                                               tmp.path() + "/unified cgroup2 rw 0 0\n";
  auto root = find_memory_cgroup_root(tmp.path() + "/mounts");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->version, CgroupVersion::kV2);
  EXPECT_EQ(root->path, tmp.path() + "/unified");
}

TEST(CgroupTest, NoMemoryControllerMeansNone) {
  TempDir tmp;
  std::ofstream(tmp.path() + "/mounts") << "cgroup /cg/cpu cgroup rw,cpu 0 0\n";
  EXPECT_FALSE(find_memory_cgroup_root(tmp.path() + "/mounts").has_value());
  EXPECT_FALSE(find_memory_cgroup_root(tmp.path() + "/no-such-file").has_value());
}

TEST(CgroupTest, KeysBecomeSafeDirectoryNames) {
  EXPECT_EQ(cgroup_name_for_key("job-1.2.0"), "job-1.2.0");
  EXPECT_EQ(cgroup_name_for_key("a/../b c"), "a_.._b_c");
  EXPECT_EQ(cgroup_name_for_key(".."), "job..");
  EXPECT_EQ(cgroup_name_for_key(""), "job");
  EXPECT_LE(cgroup_name_for_key(std::string(500, 'x')).size(), 200u);
  EXPECT_NE(cgroup_name_for_key(std::string(500, 'x')), cgroup_name_for_key(std::string(501, 'x')));
}

}  // namespace
}  // namespace gpucloud::exec::testing

namespace gpucloud::exec::testing {
namespace {

// A directory tree shaped like a cgroup hierarchy: the control files exist, as the kernel
// would create them, so the writes can be checked.
void touch(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "";
}

TEST(CgroupTest, CreatesAV2CgroupWithTheControllerEnabledOnTheWayDown) {
  TempDir tmp;
  std::string root = tmp.path();
  touch(root + "/cgroup.subtree_control");
  touch(root + "/gpucloud/cgroup.subtree_control");
  touch(root + "/gpucloud/j.1.0/cgroup.controllers");
  touch(root + "/gpucloud/j.1.0/memory.max");
  touch(root + "/gpucloud/j.1.0/memory.swap.max");
  auto cgroup = create_memory_cgroup({CgroupVersion::kV2, root}, "gpucloud", "j.1.0", 64);
  ASSERT_TRUE(cgroup.ok()) << cgroup.error().message;
  EXPECT_EQ(*cgroup, root + "/gpucloud/j.1.0");
  EXPECT_EQ(slurp(root + "/cgroup.subtree_control"), "+memory");
  EXPECT_EQ(slurp(root + "/gpucloud/cgroup.subtree_control"), "+memory");
  EXPECT_EQ(slurp(*cgroup + "/memory.max"), "67108864");
  EXPECT_EQ(slurp(*cgroup + "/memory.swap.max"), "0");
  EXPECT_EQ(cgroup_memory_limit_bytes(*cgroup), std::optional<int64_t>(64 << 20));
}

TEST(CgroupTest, CreatesAV1CgroupWithItsLimit) {
  TempDir tmp;
  std::string root = tmp.path();
  touch(root + "/a/b/job/memory.limit_in_bytes");
  auto cgroup = create_memory_cgroup({CgroupVersion::kV1, root}, "a/b", "job", 3);
  ASSERT_TRUE(cgroup.ok()) << cgroup.error().message;
  EXPECT_EQ(*cgroup, root + "/a/b/job");
  EXPECT_EQ(slurp(*cgroup + "/memory.limit_in_bytes"), std::to_string(3 << 20));
}

TEST(CgroupTest, ReadsOomKillsFromEitherVersion) {
  TempDir tmp;
  touch(tmp.path() + "/v2/cgroup.controllers");
  std::ofstream(tmp.path() + "/v2/memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n";
  std::filesystem::create_directories(tmp.path() + "/v1");
  std::ofstream(tmp.path() + "/v1/memory.oom_control")
      << "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n";
  EXPECT_EQ(cgroup_oom_kills(tmp.path() + "/v2"), 2);
  EXPECT_EQ(cgroup_oom_kills(tmp.path() + "/v1"), 1);
  EXPECT_EQ(cgroup_oom_kills(tmp.path() + "/none"), 0);
}

}  // namespace
}  // namespace gpucloud::exec::testing
