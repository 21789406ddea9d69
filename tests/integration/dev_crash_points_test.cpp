// At most once: `gpucloud dev` (server and agent in one process) or a job's shim crashes at
// each named point of the start path (GPUCLOUD_CRASH_AT, see src/exec/process/crash_point.h);
// after a restart without the crash, every job's command has run at most once, and a job is
// re-run only where its first attempt provably never started.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct CrashCase {
  const char* point;
  // What the user sees in the end: the job's state, and how many times its command ran.
  const char* state;
  int runs;
  // Attempts the job may end at: 1 when the first attempt ran, 2 (or more) when attempts
  // provably never started and were re-queued; {1, 2} where the restarted agent may win the
  // claim or not.
  std::vector<int> attempts;
};

void PrintTo(const CrashCase& c, std::ostream* os) {
  *os << c.point;
}

int lines_in(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// A directory the job's user may write to (jobs run as their tenant's user): it counts the
// command's runs there.
std::string open_dir(const DevCluster& cluster) {
  std::string dir = cluster.work_dir() + "/shared";
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);
  return dir;
}

class CrashPointTest : public ::testing::TestWithParam<CrashCase> {};

TEST_P(CrashPointTest, TheCommandRunsAtMostOnceAndOnlyANeverStartedAttemptIsRerun) {
  const CrashCase& c = GetParam();
  TempDir marks;
  std::string crashed = marks.path() + "/crashed";
  DevCluster cluster({"--sim-gpus", "1xA100-80GB"},
                     {{"GPUCLOUD_CRASH_AT", c.point}, {"GPUCLOUD_CRASH_ONCE", crashed}});
  std::string shared = open_dir(cluster);
  std::string counter = shared + "/runs";
  // Restart policy never: a job that was lost after starting is not re-run, so any second run
  // of the command could only come from an attempt wrongly taken for one that never started.
  std::string id = cluster.submit({"--restart", "never", "--workdir", shared, "--", "sh", "-c",
                                   "echo ran >> " + counter + "; sleep 0.3"});
  ASSERT_TRUE(wait_until([&] { return fs::exists(crashed); })) << "never reached " << c.point;

  // Whatever crashed, the dev process goes down too (when the agent crashed, it already has),
  // and comes back without the crash.
  cluster.kill9();
  cluster.set_env({});
  cluster.start();
  json job = cluster.wait_done(id);
  EXPECT_EQ(job["state"], c.state) << job.dump();
  EXPECT_EQ(lines_in(counter), c.runs) << job.dump();
  int attempt = job["attempt"].get<int>();
  EXPECT_NE(std::find(c.attempts.begin(), c.attempts.end(), attempt), c.attempts.end())
      << "attempt " << attempt << ": " << job.dump();
  if (attempt > 1) {
    EXPECT_NE(job["message"].get<std::string>().find("did not start"), std::string::npos)
        << job.dump();
  }
  // Every attempt's directory, also one that never started, is removed once its end is
  // recorded.
  std::string attempts = cluster.nodes_dir() + "/dev-0/attempts";
  EXPECT_TRUE(wait_until([&] {
    for (const auto& e : fs::directory_iterator(attempts))
      if (e.path().filename().string().rfind(id, 0) == 0) return false;
    return true;
  })) << "an attempt directory of job "
      << id << " was left in " << attempts;
}

// A machine restart loses what had not reached the disk, claims included (they are not
// fsync'ed). Simulated: the agent crashes with the command running and the shim's pid unsaved;
// then the shim and the job vanish, the claim is gone and the boot id has changed. A missing
// claim then proves nothing: the attempt is lost, never re-run as if it had not started.
TEST(CrashPointReboot, AfterAMachineRestartAMissingClaimIsNotTakenForNeverStarted) {
  TempDir marks;
  std::string crashed = marks.path() + "/crashed";
  DevCluster cluster({"--sim-gpus", "1xA100-80GB"},
                     {{"GPUCLOUD_CRASH_AT", "agent.started"}, {"GPUCLOUD_CRASH_ONCE", crashed}});
  std::string shared = open_dir(cluster);
  std::string counter = shared + "/runs";
  std::string id = cluster.submit({"--restart", "never", "--workdir", shared, "--", "sh", "-c",
                                   "echo ran >> " + counter + "; sleep 60"});
  ASSERT_TRUE(wait_until([&] { return fs::exists(crashed) && lines_in(counter) == 1; }));
  cluster.kill9();

  std::string agent_dir = cluster.nodes_dir() + "/dev-0";
  int claims = 0;
  for (const auto& e : fs::recursive_directory_iterator(agent_dir + "/attempts")) {
    if (e.path().filename() != "claim") continue;
    std::string dir = e.path().parent_path().string();
    std::ifstream claim(e.path());
    std::string kind;
    int shim = 0, job = 0;
    claim >> kind >> shim;
    std::ifstream(dir + "/pid") >> job;
    ASSERT_GT(shim, 0);
    ASSERT_GT(job, 0);
    ::kill(shim, SIGKILL);
    ::kill(-job, SIGKILL);
    fs::remove(e.path());
    fs::remove(dir + "/pid");
    ++claims;
  }
  ASSERT_EQ(claims, 1);
  for (const char* slot : {".0", ".1"}) {
    std::string path = agent_dir + "/agent-state.json" + slot;
    if (!fs::exists(path)) continue;
    json state = json::parse(std::ifstream(path));
    state["boot_id"] = "a-boot-before-the-machine-restarted";
    std::ofstream(path, std::ios::trunc) << state.dump();
  }

  cluster.set_env({});
  cluster.start();
  json job = cluster.wait_done(id);
  EXPECT_EQ(job["state"], "lost") << job.dump();
  EXPECT_EQ(job["attempt"], 1) << job.dump();
  EXPECT_EQ(lines_in(counter), 1);
}

INSTANTIATE_TEST_SUITE_P(
    StartPath, CrashPointTest,
    ::testing::Values(
        // The agent had saved the replica but spawned nothing: re-queued, runs once.
        CrashCase{"agent.before_start", "succeeded", 1, {2}},
        CrashCase{"exec.before_shim", "succeeded", 1, {2}},
        // The shim was spawned, its pid saved nowhere: whoever claims first decides.
        CrashCase{"exec.shim_spawned", "succeeded", 1, {1, 2}},
        // The shim died before its claim: the command provably never ran; re-queued. The
        // dev process, killed a moment later, may cut attempt 2's start short as well.
        CrashCase{"shim.before_claim", "succeeded", 1, {2, 3}},
        // The shim died after its claim: nobody can prove the command did not run, so the
        // attempt is lost and (restart policy never) not re-run.
        CrashCase{"shim.claimed", "lost", 0, {1}},
        // The command ran; the agent had not saved the shim's pid: re-adopted from the claim.
        CrashCase{"agent.started", "succeeded", 1, {1}},
        CrashCase{"agent.start_saved", "succeeded", 1, {1}}),
    [](const ::testing::TestParamInfo<CrashCase>& info) {
      std::string name = info.param.point;
      for (char& ch : name)
        if (ch == '.') ch = '_';
      return name;
    });

}  // namespace
}  // namespace gpucloud::testing
