// Re-adoption: jobs outlive the executor that started them and are picked up by the next one.
#include <signal.h>
#include <sys/wait.h>

#include "exec/process/proc.h"
#include "test_support.h"

namespace gpucloud::exec::testing {
namespace {

using AdoptTest = ExecutorTest;

// A job that waits for the file "go" in its workdir, then exits with `code`.
LaunchSpec waiting_job(LaunchSpec s, int code) {
  s.argv = {"sh", "-c", "while [ ! -e go ]; do sleep 0.02; done; exit " + std::to_string(code)};
  return s;
}

TEST_F(AdoptTest, NewExecutorAdoptsARunningJobAndReportsItsExit) {
  LaunchSpec s = waiting_job(spec("survivor", {}), 7);
  ProcessRef ref = start(s);
  ASSERT_GT(job_pid(ref), 0);

  executor_.reset();  // the agent goes away; its monitor thread ends
  EXPECT_EQ(::kill(ref.shim_pid, 0), 0) << "the shim died with its executor";
  EXPECT_EQ(exits_.count("survivor"), 0);

  executor_ = make_executor();
  ASSERT_TRUE(executor_->adopt(ref).ok());
  EXPECT_TRUE(executor_->adopt(ref).ok()) << "adopting the same process twice is harmless";
  std::ofstream(s.workdir + "/go") << "";
  auto info = exits_.wait_for("survivor");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->exit_code, 7);
  EXPECT_FALSE(info->lost);
}

TEST_F(AdoptTest, AdoptReportsTheExitRecordedWhileNobodyWatched) {
  LaunchSpec s = waiting_job(spec("ended", {}), 5);
  ProcessRef ref = start(s);
  ASSERT_GT(job_pid(ref), 0);
  executor_.reset();

  std::ofstream(s.workdir + "/go") << "";
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(ref.attempt_dir + "/exit.json"); }));
  // The shim is this test's child: reap it so its pid is really gone, as after an agent restart.
  ASSERT_EQ(::waitpid(ref.shim_pid, nullptr, 0), ref.shim_pid);

  executor_ = make_executor();
  ASSERT_TRUE(executor_->adopt(ref).ok());
  auto info = exits_.wait_for("ended");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->exit_code, 5);
  EXPECT_FALSE(info->lost);
}

TEST_F(AdoptTest, AdoptOfAZombieShimReportsItsExit) {
  LaunchSpec s = waiting_job(spec("zombie", {}), 4);
  ProcessRef ref = start(s);
  ASSERT_GT(job_pid(ref), 0);
  executor_.reset();
  std::ofstream(s.workdir + "/go") << "";
  ASSERT_TRUE(wait_until([&] {
    auto st = read_proc_stat(ref.shim_pid);
    return st.ok() && st->state == 'Z';
  }));

  executor_ = make_executor();
  ASSERT_TRUE(executor_->adopt(ref).ok());
  auto info = exits_.wait_for("zombie");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->exit_code, 4);
  EXPECT_TRUE(wait_until([&] { return !read_proc_stat(ref.shim_pid).ok(); })) << "not reaped";
}

TEST_F(AdoptTest, AdoptOfAVanishedProcessWithoutRecordIsLost) {
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);

  ProcessRef ref;
  ref.key = "vanished";
  ref.shim_pid = gone;
  ref.shim_start_ticks = 12345;
  ref.attempt_dir = tmp_.path() + "/empty-attempt";
  std::filesystem::create_directories(ref.attempt_dir);
  ASSERT_TRUE(executor_->adopt(ref).ok());
  auto info = exits_.wait_for("vanished");
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->lost);
  EXPECT_EQ(info->message, "process vanished while the agent was down");
}

TEST_F(AdoptTest, AdoptDoesNotTrustAReusedPid) {
  auto self = read_proc_stat(::getpid());
  ASSERT_TRUE(self.ok());
  ProcessRef ref;
  ref.key = "reused";
  ref.shim_pid = ::getpid();  // alive, but not the process that was started
  ref.shim_start_ticks = self->start_ticks + 1;
  ref.attempt_dir = tmp_.path() + "/reused-attempt";
  std::filesystem::create_directories(ref.attempt_dir);
  ASSERT_TRUE(executor_->adopt(ref).ok());
  auto info = exits_.wait_for("reused");
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->lost);
}

}  // namespace
}  // namespace gpucloud::exec::testing
