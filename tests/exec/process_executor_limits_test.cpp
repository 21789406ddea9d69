// Resource limits of the process executor: CPU pinning and the memory cgroup.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "exec/process/cgroup.h"
#include "exec/process/job_child.h"
#include "exec/process/proc.h"
#include "test_support.h"

namespace gpucloud::exec::testing {
namespace {

using LimitsTest = ExecutorTest;

std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// The memory controller when this process may create cgroups in it, else nullopt.
std::optional<MemoryCgroupRoot> writable_memory_cgroup() {
  auto root = find_memory_cgroup_root();
  if (!root || ::access(root->path.c_str(), W_OK) != 0) return std::nullopt;
  return root;
}

TEST_F(LimitsTest, CpuAffinityIsApplied) {
  LaunchSpec s = spec("pinned", {"grep", "Cpus_allowed_list", "/proc/self/status"});
  s.cpus = {0};
  ASSERT_EQ(run(s).exit_code, 0);
  EXPECT_EQ(slurp(s.attempt_dir + "/output.log"), "Cpus_allowed_list:\t0\n");
}

TEST_F(LimitsTest, AJobStartsWithAConventionalSoftLimitOnOpenFilesNotTheServersRaisedOne) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max <= kJobOpenFilesSoftLimit) GTEST_SKIP() << "the hard limit is 1024 or less";
  rlimit raised = limit;
  raised.rlim_cur = limit.rlim_max;  // as the server does at its start (`gpucloud dev`)
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &raised), 0);
  LaunchSpec s = spec("nofile", {"sh", "-c", "ulimit -Sn; ulimit -Hn"});
  ExitInfo info = run(s);
  ::setrlimit(RLIMIT_NOFILE, &limit);
  ASSERT_EQ(info.exit_code, 0) << slurp(s.attempt_dir + "/output.log");
  std::string hard = limit.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(limit.rlim_max);
  EXPECT_EQ(slurp(s.attempt_dir + "/output.log"), "1024\n" + hard + "\n")
      << "the job can raise its soft limit up to the hard one itself";
}

TEST_F(LimitsTest, JobWithAMemoryLimitRunsInACgroupWithThatLimit) {
  auto root = writable_memory_cgroup();
  if (!root) GTEST_SKIP() << "no writable memory cgroup (v2 or v1) on this machine";
  std::string parent = "gpucloud-test-" + std::to_string(::getpid());
  executor_ = make_executor(parent);

  LaunchSpec s = spec("limited", {"sleep", "60"});
  s.memory_limit_mib = 64;
  ProcessRef ref = start(s);
  ASSERT_FALSE(ref.cgroup.empty()) << "a writable cgroup exists but the job has none";
  EXPECT_EQ(ref.cgroup, root->path + "/" + parent + "/limited");
  EXPECT_EQ(cgroup_memory_limit_bytes(ref.cgroup), std::optional<int64_t>(64 << 20));
  int pid = job_pid(ref);
  ASSERT_GT(pid, 0);
  auto pids = cgroup_pids(ref.cgroup);
  EXPECT_NE(std::find(pids.begin(), pids.end(), pid), pids.end())
      << "job " << pid << " not in the cgroup";
  auto stats = executor_->stats("limited");
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_LT(stats->memory_rss_mib, 64);

  ASSERT_TRUE(executor_->stop("limited", 5000).ok());
  ASSERT_TRUE(exits_.wait_for("limited").has_value());
  EXPECT_TRUE(wait_until([&] { return !std::filesystem::exists(ref.cgroup); }))
      << "cgroup left behind";
  ::rmdir((root->path + "/" + parent).c_str());
}

TEST_F(LimitsTest, JobAboveItsMemoryLimitIsKilledWithAClearMessage) {
  auto root = writable_memory_cgroup();
  if (!root) GTEST_SKIP() << "no writable memory cgroup (v2 or v1) on this machine";
  if (slurp("/proc/swaps").find('\n') != slurp("/proc/swaps").rfind('\n')) {
    GTEST_SKIP() << "swap is on: a job over its limit may swap instead of being killed";
  }
  std::string parent = "gpucloud-test-" + std::to_string(::getpid());
  executor_ = make_executor(parent);

  LaunchSpec s = spec("hog", {self_exe(), "hog", "256"});
  s.memory_limit_mib = 32;
  ExitInfo info = run(s);
  EXPECT_EQ(info.signal, SIGKILL);
  EXPECT_EQ(info.exit_code, 137);
  EXPECT_NE(info.message.find("OOM killer"), std::string::npos) << info.message;
  EXPECT_NE(info.message.find("32 MiB"), std::string::npos) << info.message;
  EXPECT_TRUE(
      wait_until([&] { return !std::filesystem::exists(root->path + "/" + parent + "/hog"); }));
  ::rmdir((root->path + "/" + parent).c_str());
}

}  // namespace
}  // namespace gpucloud::exec::testing
