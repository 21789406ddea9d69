// Jobs with a user (LaunchSpec::uid): they run as that user with no privileges, their own
// /tmp and umask 077, and reach nothing of the shim's files or of other users' jobs.
#include <sys/resource.h>
#include <sys/stat.h>

#include "exec/process/job_child.h"
#include "test_support.h"

namespace gpucloud::exec::testing {
namespace {

constexpr int64_t kUidA = 61001;
constexpr int64_t kUidB = 61002;

// Outside /tmp: the job's own /tmp then shows nothing of the test's files.
class JobUserTest : public ExecutorTest {
 protected:
  JobUserTest() : ExecutorTest("/var/tmp") {}
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "switching users needs root";
    ExecutorTest::SetUp();
    ::chmod(tmp_.path().c_str(), 0711);  // job users pass through to their attempt dirs
  }

  LaunchSpec as_user(const std::string& key, int64_t uid, std::vector<std::string> argv) {
    LaunchSpec s = spec(key, std::move(argv));
    s.uid = uid;
    s.gid = uid;
    s.workdir = job_dir_of(s.attempt_dir);
    return s;
  }

  std::string output(const LaunchSpec& s) { return slurp(s.attempt_dir + "/" + kOutputLog); }
};

unsigned mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

uid_t owner_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

TEST_F(JobUserTest, RunsAsItsUserWithoutCapabilitiesOrNewPrivileges) {
  LaunchSpec s =
      as_user("who", kUidA,
              {"sh", "-c",
               "echo uid=$(id -u) gid=$(id -g) groups=$(id -G) umask=$(umask) pwd=$(pwd); "
               "grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; "
               "touch made; stat -c 'made=%a %u' made"});
  ExitInfo info = run(s);
  ASSERT_EQ(info.exit_code, 0) << output(s);
  std::string out = output(s);
  std::string id = std::to_string(kUidA);
  EXPECT_NE(out.find("uid=" + id + " gid=" + id + " groups=" + id +
                     " umask=0077 pwd=" + job_dir_of(s.attempt_dir)),
            std::string::npos)
      << out;
  for (const char* line :
       {"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
        "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "made=600 61001"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << " in\n" << out;
  }
}

TEST_F(JobUserTest, TheShimsFilesAreClosedToTheJob) {
  // The shim writes its pid file once the job runs: the job waits for it (up to 10 s) before
  // trying to read it.
  LaunchSpec s = as_user("closed", kUidA,
                         {"sh", "-c",
                          "i=0; while [ ! -e ../pid ] && [ $i -lt 200 ]; do sleep 0.05; "
                          "i=$((i+1)); done; "
                          "ls ..; cat ../launch.json; cat ../pid; echo x >> ../output.log; "
                          "cat ../shim.log; echo done"});
  s.env["SECRET"] = "hunter2";
  ASSERT_EQ(run(s).exit_code, 0) << output(s);
  std::string out = output(s);
  EXPECT_EQ(out.find("hunter2"), std::string::npos) << out;
  size_t denied = 0;
  for (size_t at = out.find("Permission denied"); at != std::string::npos;
       at = out.find("Permission denied", at + 1))
    ++denied;
  EXPECT_EQ(denied, 5u) << out;
  EXPECT_EQ(mode_of(s.attempt_dir), 0711u);
  EXPECT_EQ(mode_of(tmp_.path() + "/attempts"), 0711u);
  for (const char* file : {kLaunchFile, kPidFile, kExitFile, kOutputLog, kShimLog}) {
    EXPECT_EQ(mode_of(s.attempt_dir + "/" + file), 0600u) << file;
    EXPECT_EQ(owner_of(s.attempt_dir + "/" + file), 0u) << file;
  }
  EXPECT_EQ(mode_of(job_dir_of(s.attempt_dir)), 0700u);
  EXPECT_EQ(owner_of(job_dir_of(s.attempt_dir)), static_cast<uid_t>(kUidA));
  EXPECT_EQ(owner_of(job_tmp_dir_of(s.attempt_dir)), static_cast<uid_t>(kUidA));
}

TEST_F(JobUserTest, EachJobHasItsOwnTmp) {
  std::string marker = "gpucloud-job-user-test-" + std::to_string(::getpid());
  LaunchSpec a =
      as_user("tmp-a", kUidA, {"sh", "-c", "echo secret > /tmp/" + marker + "; ls -ld /tmp"});
  ASSERT_EQ(run(a).exit_code, 0) << output(a);
  EXPECT_TRUE(std::filesystem::exists(job_tmp_dir_of(a.attempt_dir) + "/" + marker)) << output(a);
  EXPECT_FALSE(std::filesystem::exists("/tmp/" + marker)) << "the job wrote the host's /tmp";
  LaunchSpec b = as_user("tmp-b", kUidB, {"sh", "-c", "ls -A /tmp; cat /tmp/" + marker});
  ASSERT_NE(run(b).exit_code, 0) << output(b);
  EXPECT_NE(output(b).find("No such file"), std::string::npos) << output(b);
}

TEST_F(JobUserTest, AnotherUsersJobCannotBeSignalledOrRead) {
  LaunchSpec a = as_user("victim", kUidA, {"sleep", "30"});
  a.env["SECRET"] = "hunter2";
  ProcessRef ref = start(a);
  int pid = job_pid(ref);
  ASSERT_GT(pid, 0);
  std::string p = std::to_string(pid);
  LaunchSpec b = as_user("attacker", kUidB,
                         {"sh", "-c",
                          "kill -9 " + p + "; cat /proc/" + p + "/environ; ls /proc/" + p +
                              "/fd; ls " + job_dir_of(a.attempt_dir) + "; echo done"});
  ASSERT_EQ(run(b).exit_code, 0) << output(b);
  std::string out = output(b);
  EXPECT_NE(out.find("Operation not permitted"), std::string::npos) << out;
  EXPECT_NE(out.find("Permission denied"), std::string::npos) << out;
  EXPECT_EQ(out.find("hunter2"), std::string::npos) << out;
  EXPECT_EQ(::kill(pid, 0), 0) << "the other user's job was killed";
  ASSERT_TRUE(executor_->stop("victim", 0).ok());
  EXPECT_TRUE(exits_.wait_for("victim").has_value());
}

TEST_F(JobUserTest, AWorkdirTheUserCannotEnterFailsTheStartClearly) {
  std::string closed = tmp_.path() + "/closed";
  std::filesystem::create_directory(closed);
  ::chmod(closed.c_str(), 0700);
  LaunchSpec s = as_user("closed-workdir", kUidA, {"true"});
  s.workdir = closed;
  ExitInfo info = run(s);
  EXPECT_TRUE(info.failed_to_start);
  EXPECT_NE(info.message.find("workdir " + closed + " is not accessible to the job's user (uid " +
                              std::to_string(kUidA)),
            std::string::npos)
      << info.message;
}

TEST_F(JobUserTest, ItsDirsUnderTheHostsTmpStayVisibleInItsOwnTmp) {
  TempDir host_tmp("/tmp");
  ::chmod(host_tmp.path().c_str(), 0711);
  std::string workdir = host_tmp.path() + "/work";
  std::filesystem::create_directory(workdir);
  std::filesystem::permissions(workdir, std::filesystem::perms::all);
  std::ofstream(host_tmp.path() + "/other") << "not for the job\n";
  LaunchSpec s = as_user("under-tmp", kUidA,
                         {"sh", "-c",
                          "echo pwd=$(pwd); echo hi > out; echo mine > $GPUCLOUD_ATTEMPT_DIR/f; "
                          "cat " +
                              host_tmp.path() + "/other"});
  s.attempt_dir = host_tmp.path() + "/attempts/under-tmp";
  s.workdir = workdir;
  s.env["GPUCLOUD_ATTEMPT_DIR"] = job_dir_of(s.attempt_dir);
  ExitInfo info = run(s);
  std::string out = output(s);
  EXPECT_NE(info.exit_code, 0) << "the rest of the host's /tmp is hidden: " << out;
  EXPECT_NE(out.find("pwd=" + workdir), std::string::npos) << out;
  EXPECT_NE(out.find("No such file"), std::string::npos) << out;
  EXPECT_EQ(slurp(workdir + "/out"), "hi\n");
  EXPECT_EQ(slurp(job_dir_of(s.attempt_dir) + "/f"), "mine\n");
}

TEST_F(JobUserTest, AWorkdirUnderTheHostsTmpBehindADirTheUserCannotSearchIsNotMadeVisible) {
  TempDir closed("/tmp");  // 0700, root's: the job's user may not pass through it
  std::string workdir = closed.path() + "/work";
  std::filesystem::create_directory(workdir);
  std::filesystem::permissions(workdir, std::filesystem::perms::all);
  LaunchSpec s = as_user("behind-closed", kUidA, {"sh", "-c", "echo reached > reached"});
  s.workdir = workdir;
  ExitInfo info = run(s);
  EXPECT_FALSE(std::filesystem::exists(workdir + "/reached")) << "the job wrote behind a 0700 dir";
  EXPECT_TRUE(info.failed_to_start) << output(s);
  EXPECT_NE(info.message.find("workdir " + workdir + " is not accessible to the job's user (uid " +
                              std::to_string(kUidA)),
            std::string::npos)
      << info.message;
}

TEST_F(JobUserTest, ItsJobDirUnderTheHostsTmpBehindADirTheUserCannotSearchIsLeftOut) {
  TempDir closed("/tmp");  // 0700, root's
  LaunchSpec s = as_user("job-dir-behind-closed", kUidA, {"sh", "-c", "ls \"$JOB_DIR\""});
  s.attempt_dir = closed.path() + "/attempts/job-dir-behind-closed";
  s.workdir = tmp_.path();  // reachable: 0711, outside /tmp
  s.env["JOB_DIR"] = job_dir_of(s.attempt_dir);
  ExitInfo info = run(s);
  std::string out = output(s);
  EXPECT_NE(info.exit_code, 0) << "the job listed a dir behind a 0700 dir: " << out;
  EXPECT_NE(out.find("gpucloud: cannot open " + job_dir_of(s.attempt_dir) +
                     " as the job's user: Permission denied; it is not visible in the job's /tmp"),
            std::string::npos)
      << out;
}

TEST_F(JobUserTest, AWorkdirThroughASymbolicLinkInTheHostsTmpIsRefused) {
  TempDir host_tmp("/tmp");
  ::chmod(host_tmp.path().c_str(), 0711);
  std::string real = host_tmp.path() + "/real";
  std::filesystem::create_directory(real);
  std::filesystem::permissions(real, std::filesystem::perms::all);
  std::string link = host_tmp.path() + "/link";
  std::filesystem::create_directory_symlink(real, link);
  LaunchSpec s = as_user("through-link", kUidA, {"sh", "-c", "echo reached > reached"});
  s.workdir = link;
  ExitInfo info = run(s);
  EXPECT_FALSE(std::filesystem::exists(real + "/reached")) << output(s);
  EXPECT_TRUE(info.failed_to_start) << output(s);
  EXPECT_NE(info.message.find("workdir " + link + " has a symbolic link in its path"),
            std::string::npos)
      << info.message;
}

TEST_F(JobUserTest, RootFollowsNoSymbolicLinkInTheJobsTmpDirToMakeItsMountPoints) {
  TempDir host_tmp("/tmp");
  ::chmod(host_tmp.path().c_str(), 0711);
  std::string workdir = host_tmp.path() + "/work";
  std::filesystem::create_directory(workdir);
  std::filesystem::permissions(workdir, std::filesystem::perms::all);
  std::string victim = tmp_.path() + "/victim";  // stands for /etc
  std::filesystem::create_directory(victim);
  LaunchSpec s = as_user("planted", kUidA, {"true"});
  s.workdir = workdir;
  // Another job of the tenant, which reaches this job's tmp dir, planted a link where the mount
  // point of the workdir goes.
  std::string tmp_dir = job_tmp_dir_of(s.attempt_dir);
  std::filesystem::create_directories(tmp_dir);
  std::string planted = tmp_dir + "/" + std::filesystem::path(host_tmp.path()).filename().string();
  std::filesystem::create_directory_symlink(victim, planted);
  ExitInfo info = run(s);
  EXPECT_FALSE(std::filesystem::exists(victim + "/work")) << "root made a dir through the link";
  // Each start gets a fresh tmp dir, so the planted link is gone before the job starts; a link
  // planted during the start itself is not followed either (the mount points are made with
  // mkdirat and O_NOFOLLOW opens), and fails the start naming it.
  EXPECT_FALSE(info.failed_to_start) << info.message << output(s);
  EXPECT_EQ(info.exit_code, 0) << output(s);
  EXPECT_FALSE(std::filesystem::is_symlink(planted));
}

TEST_F(JobUserTest, RootsGroupIsRefusedForAJobWithAUser) {
  LaunchSpec s = as_user("root-group", kUidA, {"true"});
  s.gid = 0;
  auto ref = executor_->start(s);
  ASSERT_FALSE(ref.ok()) << "a job of uid " << kUidA << " was started with gid 0";
  EXPECT_EQ(ref.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(ref.error().message.find("gid: 0 (root's group) for job root-group with uid " +
                                     std::to_string(kUidA)),
            std::string::npos)
      << ref.error().message;
}

TEST_F(JobUserTest, AJobWithAUserStartsWithAConventionalSoftLimitOnOpenFiles) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max <= kJobOpenFilesSoftLimit) GTEST_SKIP() << "the hard limit is 1024 or less";
  rlimit raised = limit;
  raised.rlim_cur = limit.rlim_max;  // as the server does at its start
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &raised), 0);
  LaunchSpec s = as_user("nofile", kUidA, {"sh", "-c", "ulimit -Sn; ulimit -Hn"});
  ExitInfo info = run(s);
  ::setrlimit(RLIMIT_NOFILE, &limit);
  ASSERT_EQ(info.exit_code, 0) << output(s);
  std::string hard = limit.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(limit.rlim_max);
  EXPECT_EQ(output(s), "1024\n" + hard + "\n");
}

TEST_F(JobUserTest, ARootJobKeepsRootButGetsItsOwnTmpAndUmask) {
  LaunchSpec s = as_user("root", 0, {"sh", "-c", "echo uid=$(id -u) umask=$(umask); touch /tmp/x"});
  ASSERT_EQ(run(s).exit_code, 0) << output(s);
  EXPECT_NE(output(s).find("uid=0 umask=0077"), std::string::npos) << output(s);
  EXPECT_TRUE(std::filesystem::exists(job_tmp_dir_of(s.attempt_dir) + "/x"));
}

TEST_F(JobUserTest, AJobWithAMemoryLimitSwitchesUserToo) {
  LaunchSpec s = as_user("limited", kUidA, {"sh", "-c", "id -u"});
  s.memory_limit_mib = 256;
  ASSERT_EQ(run(s).exit_code, 0) << output(s);
  EXPECT_NE(output(s).find(std::to_string(kUidA)), std::string::npos) << output(s);
}

}  // namespace
}  // namespace gpucloud::exec::testing
