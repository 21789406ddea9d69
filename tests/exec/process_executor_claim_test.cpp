// At most once: an attempt's command runs only after its shim has claimed the attempt, and a
// start cut short at any point is settled for certain by recover_start().
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "exec/process/claim.h"
#include "test_support.h"

extern char** environ;

namespace gpucloud::exec::testing {
namespace {

// Sets an environment variable for the shims started during one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

class ClaimedStartTest : public ExecutorTest {
 protected:
  // A job that appends a line to `runs` in the test dir each time its command runs, then waits
  // for the file "go" and exits with `code`.
  LaunchSpec counting_job(const std::string& key, int code) {
    return spec(key, {"sh", "-c",
                      "echo ran >> runs; while [ ! -e go ]; do sleep 0.02; done; exit " +
                          std::to_string(code)});
  }
  int runs() {
    std::string text = slurp(tmp_.path() + "/runs");
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  void let_go() { std::ofstream(tmp_.path() + "/go") << ""; }

  // Runs `<this binary> shim DIR` as the agent would, and returns its exit status.
  int run_shim_directly(const std::string& dir) {
    char self[4096];
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    std::string exe(self, static_cast<size_t>(n > 0 ? n : 0));
    std::string arg1 = "shim", arg2 = dir;
    char* argv[] = {exe.data(), arg1.data(), arg2.data(), nullptr};
    pid_t pid = 0;
    if (::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, environ) != 0) return -1;
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

TEST_F(ClaimedStartTest, TheShimClaimsTheAttemptBeforeTheCommandRuns) {
  LaunchSpec s = counting_job("claimed", 0);
  ProcessRef ref = start(s);
  ASSERT_GT(job_pid(ref), 0);
  auto claim = read_claim(ref.attempt_dir);
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_FALSE(claim->abandoned);
  EXPECT_EQ(claim->shim_pid, ref.shim_pid);
  EXPECT_EQ(claim->shim_start_ticks, ref.shim_start_ticks);
  let_go();
  ASSERT_TRUE(exits_.wait_for("claimed").has_value());
}

TEST_F(ClaimedStartTest, AnAttemptIsNeverStartedTwice) {
  LaunchSpec s = counting_job("once", 0);
  let_go();
  EXPECT_EQ(run(s).exit_code, 0);
  executor_ = make_executor();  // a restarted agent that was told to start it again
  auto again = executor_->start(s);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kConflict);
  EXPECT_NE(again.error().message.find("claim"), std::string::npos) << again.error().message;
  EXPECT_EQ(runs(), 1);
}

// The agent stopped after recording the replica but before its shim claimed it: the recovery
// wins the claim, reports it never started, and a late shim then refuses to run the command.
TEST_F(ClaimedStartTest, RecoveryBeforeTheShimClaimsMeansItNeverRuns) {
  LaunchSpec s = counting_job("late", 0);
  std::filesystem::create_directories(s.attempt_dir);
  LaunchFile launch{s.key, s.argv, s.env, s.workdir, {}, ""};
  std::ofstream(s.attempt_dir + "/launch.json") << launch_file_to_json(launch);

  auto recovered = executor_->recover_start(s.key, s.attempt_dir);
  ASSERT_TRUE(recovered.ok()) << recovered.error().message;
  EXPECT_TRUE(recovered->never_started);
  EXPECT_EQ(run_shim_directly(s.attempt_dir), 3);
  EXPECT_EQ(runs(), 0) << "the command ran after its attempt was given up";
  EXPECT_FALSE(std::filesystem::exists(s.attempt_dir + "/exit.json"));
  auto again = executor_->recover_start(s.key, s.attempt_dir);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->never_started) << "a second recovery must come to the same answer";
  EXPECT_EQ(exits_.count("late"), 0);
}

// A start by an executor from before claims (an agent upgraded while starting a job): its shim
// never claims, so nothing proves the command did not run; never reported as never started.
TEST_F(ClaimedStartTest, RecoveryOfAStartWhoseShimDoesNotClaimIsNeverCalledNeverStarted) {
  LaunchSpec s = counting_job("older", 0);
  std::filesystem::create_directories(s.attempt_dir);
  LaunchFile launch{s.key, s.argv, s.env, s.workdir, {}, ""};
  auto json = nlohmann::json::parse(launch_file_to_json(launch));
  json.erase("claims");
  std::ofstream(s.attempt_dir + "/launch.json") << json.dump();

  auto recovered = executor_->recover_start(s.key, s.attempt_dir);
  ASSERT_FALSE(recovered.ok());
  EXPECT_EQ(recovered.error().code, ErrorCode::kConflict);
  EXPECT_FALSE(std::filesystem::exists(s.attempt_dir + "/claim"));
}

// A start cut short before it even made the attempt directory never ran either.
TEST_F(ClaimedStartTest, RecoveryOfAStartWithoutADirectorySaysNeverStarted) {
  auto recovered = executor_->recover_start("nothing", tmp_.path() + "/attempts/nothing");
  ASSERT_TRUE(recovered.ok()) << recovered.error().message;
  EXPECT_TRUE(recovered->never_started);
}

// The agent stopped after spawning the shim, before saving its pid: the recovery finds the
// shim through its claim and adopts it; the command ran once and its exit is reported.
TEST_F(ClaimedStartTest, RecoveryAdoptsTheRunningShimThatClaimedTheAttempt) {
  LaunchSpec s = counting_job("running", 6);
  ProcessRef ref = start(s);
  ASSERT_GT(job_pid(ref), 0);
  executor_ = make_executor();

  auto recovered = executor_->recover_start(s.key, s.attempt_dir);
  ASSERT_TRUE(recovered.ok()) << recovered.error().message;
  EXPECT_FALSE(recovered->never_started);
  EXPECT_EQ(recovered->ref.shim_pid, ref.shim_pid);
  EXPECT_EQ(recovered->ref.shim_start_ticks, ref.shim_start_ticks);
  let_go();
  auto info = exits_.wait_for("running");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->exit_code, 6);
  EXPECT_FALSE(info->lost);
  EXPECT_EQ(runs(), 1);
}

// ... or, when the job has meanwhile finished, reports the exit the shim recorded: a finished
// attempt is never taken for one that did not start.
TEST_F(ClaimedStartTest, RecoveryReportsTheRecordedExitOfAFinishedAttempt) {
  LaunchSpec s = counting_job("finished", 5);
  ProcessRef ref = start(s);
  ASSERT_GT(job_pid(ref), 0);
  executor_.reset();
  let_go();
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(ref.attempt_dir + "/exit.json"); }));
  ASSERT_EQ(::waitpid(ref.shim_pid, nullptr, 0), ref.shim_pid);
  executor_ = make_executor();

  auto recovered = executor_->recover_start(s.key, s.attempt_dir);
  ASSERT_TRUE(recovered.ok()) << recovered.error().message;
  EXPECT_FALSE(recovered->never_started);
  auto info = exits_.wait_for("finished");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->exit_code, 5);
  EXPECT_FALSE(info->lost);
  EXPECT_FALSE(info->never_started);
  EXPECT_EQ(runs(), 1);
}

// A shim that dies before its claim never ran the command: reported lost and never started.
TEST_F(ClaimedStartTest, AShimThatDiesBeforeItsClaimIsReportedNeverStarted) {
  ScopedEnv crash("GPUCLOUD_CRASH_AT", "shim.before_claim");
  LaunchSpec s = counting_job("unclaimed", 0);
  start(s);
  auto info = exits_.wait_for("unclaimed");
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->lost);
  EXPECT_TRUE(info->never_started) << info->message;
  EXPECT_EQ(runs(), 0);
  auto claim = read_claim(s.attempt_dir);
  ASSERT_TRUE(claim.ok());
  EXPECT_TRUE(claim->abandoned);
}

// A shim that dies after its claim may have run the command, as far as anyone can prove: lost,
// and not "never started", so it is never re-run as if it had not started.
TEST_F(ClaimedStartTest, AShimThatDiesAfterItsClaimIsLost) {
  ScopedEnv crash("GPUCLOUD_CRASH_AT", "shim.claimed");
  LaunchSpec s = counting_job("claimed-then-died", 0);
  start(s);
  auto info = exits_.wait_for("claimed-then-died");
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->lost);
  EXPECT_FALSE(info->never_started) << info->message;
  EXPECT_EQ(runs(), 0);
}

}  // namespace
}  // namespace gpucloud::exec::testing
