// The process executor: exit codes, output, environment, workdir, start failures, signals.
#include <signal.h>

#include <algorithm>
#include <cstdlib>

#include "exec/process/proc.h"
#include "test_support.h"

namespace gpucloud::exec::testing {
namespace {

using ProcessExecutorTest = ExecutorTest;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

TEST_F(ProcessExecutorTest, RecordsExitCodes) {
  ExitInfo ok = run(spec("ok", {"sh", "-c", "exit 0"}));
  EXPECT_EQ(ok.key, "ok");
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.signal, 0);
  EXPECT_FALSE(ok.lost);
  EXPECT_FALSE(ok.failed_to_start);

  ExitInfo three = run(spec("three", {"sh", "-c", "exit 3"}));
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_EQ(three.signal, 0);
  EXPECT_FALSE(three.failed_to_start);
  auto record = read_exit_record(tmp_.path() + "/attempts/three");
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->exit_code, 3);
}

TEST_F(ProcessExecutorTest, OutputLogHasStdoutAndStderr) {
  LaunchSpec s = spec("out", {"sh", "-c", "echo to-stdout; echo to-stderr >&2"});
  ASSERT_EQ(run(s).exit_code, 0);
  std::string log = slurp(s.attempt_dir + "/output.log");
  EXPECT_NE(log.find("to-stdout"), std::string::npos) << log;
  EXPECT_NE(log.find("to-stderr"), std::string::npos) << log;
  EXPECT_EQ(std::filesystem::status(s.attempt_dir + "/output.log").permissions() &
                std::filesystem::perms::all,
            std::filesystem::perms(0600));
}

TEST_F(ProcessExecutorTest, EnvironmentIsExactlyTheGivenOne) {
  ::setenv("GPUCLOUD_EXEC_TEST_AGENT_ONLY", "leaked", 1);
  ASSERT_NE(std::getenv("HOME"), nullptr) << "the test needs HOME set in the agent";
  LaunchSpec s = spec("env", {"/usr/bin/env"});
  s.env = {{"PATH", "/usr/bin:/bin"}, {"GREETING", "hello world"}};
  ASSERT_EQ(run(s).exit_code, 0);
  auto vars = lines(slurp(s.attempt_dir + "/output.log"));
  std::sort(vars.begin(), vars.end());
  EXPECT_EQ(vars, (std::vector<std::string>{"GREETING=hello world", "PATH=/usr/bin:/bin"}));
}

TEST_F(ProcessExecutorTest, CommandIsLookedUpInTheJobsPathWithADefault) {
  LaunchSpec s = spec("default-path", {"env"});
  s.env = {{"ONLY", "1"}};  // no PATH: /usr/local/bin:/usr/bin:/bin is searched
  ASSERT_EQ(run(s).exit_code, 0);
  EXPECT_EQ(lines(slurp(s.attempt_dir + "/output.log")), std::vector<std::string>{"ONLY=1"});
}

TEST_F(ProcessExecutorTest, WorkdirIsHonoured) {
  std::string workdir = tmp_.path() + "/work dir";
  std::filesystem::create_directories(workdir);
  LaunchSpec s = spec("pwd", {"pwd", "-P"});
  s.workdir = workdir;
  ASSERT_EQ(run(s).exit_code, 0);
  EXPECT_EQ(slurp(s.attempt_dir + "/output.log"),
            std::filesystem::canonical(workdir).string() + "\n");
}

TEST_F(ProcessExecutorTest, ARelativeCommandRunsFromTheWorkdir) {
  std::string workdir = tmp_.path() + "/project";
  std::filesystem::create_directories(workdir + "/scripts");
  std::string script = workdir + "/scripts/train.sh";
  std::ofstream(script) << "#!/bin/sh\necho trained in $(pwd -P)\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  LaunchSpec s = spec("relative", {"./scripts/train.sh"});
  s.workdir = workdir;
  ASSERT_EQ(run(s).exit_code, 0) << slurp(s.attempt_dir + "/output.log");
  EXPECT_EQ(slurp(s.attempt_dir + "/output.log"),
            "trained in " + std::filesystem::canonical(workdir).string() + "\n");
}

TEST_F(ProcessExecutorTest, MissingWorkdirFailsToStart) {
  LaunchSpec s = spec("no-workdir", {"true"});
  s.workdir = tmp_.path() + "/missing";
  ExitInfo info = run(s);
  EXPECT_TRUE(info.failed_to_start);
  EXPECT_FALSE(info.lost);
  EXPECT_NE(info.exit_code, 0);
  EXPECT_EQ(info.message, "workdir " + s.workdir + " does not exist");
}

TEST_F(ProcessExecutorTest, MissingCommandFailsToStart) {
  ExitInfo info = run(spec("no-cmd", {"nosuchcmd-gpucloud", "arg"}));
  EXPECT_TRUE(info.failed_to_start);
  EXPECT_EQ(info.exit_code, 127);
  EXPECT_NE(info.message.find("command 'nosuchcmd-gpucloud' not found"), std::string::npos)
      << info.message;
  EXPECT_NE(info.message.find("/usr/bin:/bin"), std::string::npos) << info.message;
}

TEST_F(ProcessExecutorTest, NonExecutableFileFailsToStart) {
  std::string script = tmp_.path() + "/not-executable";
  std::ofstream(script) << "#!/bin/sh\nexit 0\n";
  ExitInfo info = run(spec("no-exec", {script}));
  EXPECT_TRUE(info.failed_to_start);
  EXPECT_EQ(info.exit_code, 126);
  EXPECT_NE(info.message.find("is not executable"), std::string::npos) << info.message;
}

TEST_F(ProcessExecutorTest, StartRejectsBadSpecsAndDuplicateKeys) {
  auto empty = executor_->start(spec("empty", {}));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, ErrorCode::kInvalidArgument);
  LaunchSpec relative = spec("relative", {"true"});
  relative.workdir = "relative/dir";
  auto rel = executor_->start(relative);
  ASSERT_FALSE(rel.ok());
  EXPECT_NE(rel.error().message.find("absolute"), std::string::npos) << rel.error().message;

  LaunchSpec s = spec("twice", {"sleep", "60"});
  start(s);
  auto again = executor_->start(s);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kConflict);
  ASSERT_TRUE(executor_->stop("twice", 5000).ok());
  EXPECT_TRUE(exits_.wait_for("twice").has_value());
}

TEST_F(ProcessExecutorTest, JobRunsInItsOwnSessionAndProcessGroup) {
  ProcessRef ref = start(spec("group", {"sleep", "60"}));
  EXPECT_GT(ref.shim_start_ticks, 0u);
  int pid = job_pid(ref);
  ASSERT_GT(pid, 0);
  auto job = read_proc_stat(pid);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->pgrp, pid);
  EXPECT_EQ(job->session, pid);
  EXPECT_EQ(job->ppid, ref.shim_pid);
  auto shim = read_proc_stat(ref.shim_pid);
  ASSERT_TRUE(shim.ok());
  EXPECT_EQ(shim->session, ref.shim_pid) << "the shim is not in its own session";
  EXPECT_NE(shim->pgrp, ::getpgrp());
  ASSERT_TRUE(executor_->stop("group", 5000).ok());
  EXPECT_TRUE(exits_.wait_for("group").has_value());
}

TEST_F(ProcessExecutorTest, StopKillsAJobThatIgnoresTermAfterTheGrace) {
  LaunchSpec s = spec("stubborn", {"sh", "-c", "trap '' TERM; echo ready; sleep 60"});
  ProcessRef ref = start(s);
  ASSERT_TRUE(wait_until([&] { return file_contains(s.attempt_dir + "/output.log", "ready"); }));
  ASSERT_TRUE(executor_->stop("stubborn", 300).ok());
  auto info = exits_.wait_for("stubborn");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->exit_code, 137);
  EXPECT_EQ(info->signal, SIGKILL);
  EXPECT_FALSE(info->lost);
}

TEST_F(ProcessExecutorTest, StopEndsAJobThatExitsOnTerm) {
  start(spec("polite", {"sleep", "60"}));
  ASSERT_TRUE(executor_->stop("polite", 20000).ok());
  auto info = exits_.wait_for("polite");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->exit_code, 143);
  EXPECT_EQ(info->signal, SIGTERM);
  // Once its exit is reported the executor forgets the job.
  auto again = executor_->stop("polite", 1000);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
}

TEST_F(ProcessExecutorTest, SignalReachesTheJob) {
  start(spec("usr1", {"sleep", "60"}));
  ASSERT_TRUE(executor_->signal("usr1", SIGUSR1).ok());
  auto info = exits_.wait_for("usr1");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->exit_code, 128 + SIGUSR1);
  EXPECT_EQ(info->signal, SIGUSR1);
  auto unknown = executor_->signal("no-such-job", SIGTERM);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
}

TEST_F(ProcessExecutorTest, StatsReportCpuAndMemory) {
  LaunchSpec s = spec("busy", {"sh", "-c", "echo ready; while :; do :; done"});
  start(s);
  ASSERT_TRUE(wait_until([&] { return file_contains(s.attempt_dir + "/output.log", "ready"); }));
  ASSERT_TRUE(wait_until([&] {
    auto stats = executor_->stats("busy");
    return stats.ok() && stats->cpu_seconds >= 0.2;
  }));

  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  LaunchSpec hog = spec("hog", {std::string(self, static_cast<size_t>(n)), "hog", "48", "hold"});
  start(hog);
  ASSERT_TRUE(wait_until([&] { return file_contains(hog.attempt_dir + "/output.log", "ready"); }));
  auto stats = executor_->stats("hog");
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_GE(stats->memory_rss_mib, 48);
  EXPECT_LT(stats->memory_rss_mib, 1024);

  ASSERT_TRUE(executor_->stop("busy", 0).ok());
  ASSERT_TRUE(executor_->stop("hog", 0).ok());
  EXPECT_EQ(exits_.wait_for("busy").value_or(ExitInfo{}).exit_code, 137);
  EXPECT_EQ(exits_.wait_for("hog").value_or(ExitInfo{}).exit_code, 137);
}

TEST_F(ProcessExecutorTest, ShimKilledIsReportedLostAndItsJobKilled) {
  ProcessRef ref = start(spec("orphan", {"sleep", "60"}));
  int pid = job_pid(ref);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(ref.shim_pid, SIGKILL), 0);
  auto info = exits_.wait_for("orphan");
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->lost);
  EXPECT_EQ(info->message, "the shim exited without recording an exit status");
  EXPECT_TRUE(wait_until([&] {
    auto st = read_proc_stat(pid);
    return !st.ok() || st->state == 'Z' || st->pgrp != pid;
  })) << "the orphaned job "
      << pid << " is still running";
}

}  // namespace
}  // namespace gpucloud::exec::testing
