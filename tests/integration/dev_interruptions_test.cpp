// The interruption protocol in a dev cluster: a checkpointing program (counts to N, checkpoints
// every K steps into $GPUCLOUD_CHECKPOINT_DIR, resumes from the last one) is drained off one
// node, preempted on the other and given a spot notice, and still prints what an uninterrupted run
// prints; each interruption reaches it through $GPUCLOUD_INTERRUPT with its cause, and `show` lists
// the attempts with their checkpoints.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "checkpoint_counter.h"
#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

bool running(const DevCluster& c, const std::string& id) {
  return c.job(id)["state"] == "running";
}

TEST(DevInterruptions, ACheckpointingJobSurvivesADrainAPreemptionAndASpotNoticeWithTheSameResult) {
  DevCluster cluster({"--sim-gpus", "1xA100-80GB", "--sim-nodes", "2"});
  std::string job = cluster.submit(
      {"--priority", "low", "--gpus", "1", "--", "python3", "-c", kCheckpointCounter});
  ASSERT_TRUE(wait_until([&] { return running(cluster, job); })) << cluster.job(job).dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a checkpoint or more
  std::string first_node = cluster.job(job)["replicas"][0]["node"];

  // 1. Drain: it moves to the other node and resumes there.
  ASSERT_EQ(cluster.cli({"node", "drain", first_node}).exit_code, 0);
  ASSERT_TRUE(wait_until([&] { return running(cluster, job) && cluster.job(job)["attempt"] == 2; },
                         std::chrono::seconds(40)))
      << cluster.job(job).dump();
  std::string second_node = cluster.job(job)["replicas"][0]["node"];
  EXPECT_NE(second_node, first_node);
  ASSERT_EQ(cluster.cli({"node", "uncordon", first_node}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  // 2. Preemption: a high-priority job takes the free node, a second one preempts the low one.
  std::string filler = cluster.submit({"--priority", "high", "--gpus", "1", "--", "sleep", "120"});
  ASSERT_TRUE(wait_until([&] { return running(cluster, filler); })) << cluster.job(filler).dump();
  std::string urgent = cluster.submit({"--priority", "high", "--gpus", "1", "--", "sleep", "120"});
  ASSERT_TRUE(wait_until([&] { return running(cluster, urgent); }, std::chrono::seconds(40)))
      << cluster.job(urgent).dump() << cluster.job(job).dump();
  EXPECT_EQ(cluster.job(job)["state"], "pending");
  cluster.cli({"cancel", urgent});
  ASSERT_TRUE(wait_until([&] { return running(cluster, job) && cluster.job(job)["attempt"] == 3; },
                         std::chrono::seconds(40)))
      << cluster.job(job).dump();
  cluster.cli({"cancel", filler});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  // 3. A spot notice: the node goes, the job resumes on the other one.
  std::string spot_node = cluster.job(job)["replicas"][0]["node"];
  auto bad = cluster.cli({"node", "interrupt", spot_node, "--in", "5h"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("must be a duration from 0s to 1h"), std::string::npos) << bad.err;
  auto unknown = cluster.cli({"node", "interrupt", "no-such-node"});
  EXPECT_NE(unknown.err.find("no node named 'no-such-node'"), std::string::npos) << unknown.err;
  auto notice = cluster.cli({"node", "interrupt", spot_node, "--in", "5s", "--reason", "test"});
  ASSERT_EQ(notice.exit_code, 0) << notice.err;
  EXPECT_NE(notice.out.find("1 job(s) interrupted"), std::string::npos) << notice.out;

  // 4. It finishes with the uninterrupted result.
  json done = cluster.wait_done(job, std::chrono::seconds(90));
  EXPECT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(done["attempt"], 4);
  EXPECT_NE(done["replicas"][0]["node"], spot_node);
  std::string log = cluster.cli({"logs", job}).out;
  EXPECT_NE(log.find("resumed at"), std::string::npos) << log;
  EXPECT_NE(log.find("result 820"), std::string::npos) << log;  // 1 + ... + 40

  const json& attempts = done["attempts"];
  ASSERT_EQ(attempts.size(), 4u) << done.dump(2);
  EXPECT_EQ(attempts[0]["cause"], "drain");
  EXPECT_EQ(attempts[1]["cause"], "preemption");
  EXPECT_EQ(attempts[2]["cause"], "spot");
  EXPECT_EQ(attempts[3]["cause"], "");
  for (int i : {0, 1, 2}) {
    EXPECT_TRUE(attempts[i]["checkpoint_committed"].get<bool>()) << attempts[i].dump();
    EXPECT_GT(attempts[i]["checkpoint_bytes"].get<int64_t>(), 0);
    // It checkpoints when told to stop: nothing is lost but the time since then.
    EXPECT_LT(attempts[i]["gpu_seconds_lost"].get<double>(), 2.0) << attempts[i].dump();
  }
  std::string shown = cluster.cli({"show", job}).out;
  EXPECT_NE(shown.find("attempts:"), std::string::npos) << shown;
  EXPECT_NE(shown.find("drain"), std::string::npos) << shown;
  EXPECT_NE(cluster.cli({"nodes"}).out.find("interrupting"), std::string::npos)
      << "no new work on it until the notice's deadline";
  EXPECT_TRUE(
      wait_until([&] { return cluster.cli({"nodes"}).out.find("gone") != std::string::npos; },
                 std::chrono::seconds(15)))
      << "the spot node is gone after its deadline: " << cluster.cli({"nodes"}).out;
}

TEST(DevInterruptions, AJobThatIgnoresSigtermIsKilledAtTheDeadlineAndStillRequeued) {
  DevCluster cluster({"--sim-gpus", "1xA100-80GB", "--sim-nodes", "2"});
  std::string job = cluster.submit({"--gpus", "1", "--grace", "2s", "--", "/bin/sh", "-c",
                                    "trap '' TERM; while :; do sleep 0.1; done"});
  ASSERT_TRUE(wait_until([&] { return running(cluster, job); })) << cluster.job(job).dump();
  std::string node = cluster.job(job)["replicas"][0]["node"];
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cluster.cli({"node", "interrupt", node, "--in", "1s"}).exit_code, 0);
  ASSERT_TRUE(wait_until([&] { return running(cluster, job) && cluster.job(job)["attempt"] == 2; },
                         std::chrono::seconds(20)))
      << cluster.job(job).dump();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(seconds, 0.9) << "it had until the notice's deadline";
  EXPECT_LT(seconds, 5.0) << "killed at the notice's deadline (1 s), not its grace (2 s) + more";
  json j = cluster.job(job);
  EXPECT_EQ(j["attempts"][0]["cause"], "spot");
  EXPECT_EQ(j["interruptions"], 1);
  cluster.cli({"cancel", job});
}

TEST(DevInterruptions, CheckpointCommitWritesTheMarkerAndNeedsADirectory) {
  TempDir dir;
  auto ok = run_command({GPUCLOUD_BINARY, "checkpoint", "commit"},
                        {{"GPUCLOUD_CHECKPOINT_DIR", dir.path()}, {"GPUCLOUD_ATTEMPT", "3"}});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  json marker = json::parse(std::ifstream(dir.path() + "/COMMITTED"));
  EXPECT_EQ(marker["attempt"], 3);
  auto outside =
      run_command({GPUCLOUD_BINARY, "checkpoint", "commit"}, {{"GPUCLOUD_CHECKPOINT_DIR", ""}});
  EXPECT_EQ(outside.exit_code, 2);
  EXPECT_NE(outside.err.find("GPUCLOUD_CHECKPOINT_DIR is not set"), std::string::npos)
      << outside.err;
  auto missing =
      run_command({GPUCLOUD_BINARY, "checkpoint", "commit", "--dir", dir.path() + "/nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("cannot commit the checkpoint"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace gpucloud::testing

namespace gpucloud::testing {
namespace {

// Writes checkpoint 1 and commits it, then a checkpoint too large for the disk, then tries to
// commit again: the write fails, the commit fails, the job exits 1.
constexpr const char* kDiskFiller = R"(
import os, subprocess, sys
ck = os.environ["GPUCLOUD_CHECKPOINT_DIR"]
os.makedirs(ck + "/ckpt-1")
open(ck + "/ckpt-1/data", "w").write("step 1")
subprocess.run([os.environ["CLI_BIN"], "checkpoint", "commit"], check=True)
print("committed 1", flush=True)
try:
    os.makedirs(ck + "/ckpt-2")
    with open(ck + "/ckpt-2/data", "wb") as f:
        f.write(b"x" * (8 << 20))
except OSError as e:
    print("write failed:", e.strerror, flush=True)
r = subprocess.run([os.environ["CLI_BIN"], "checkpoint", "commit"])
print("commit 2 exit", r.returncode, flush=True)
sys.exit(1)
)";

// A tmpfs of 1 MiB mounted over a directory for the length of a test (root only).
class SmallDisk {
 public:
  explicit SmallDisk(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    mounted_ = run_command({"/bin/mount", "-t", "tmpfs", "-o", "size=1m,mode=0711", "tmpfs", dir_})
                   .exit_code == 0;
  }
  ~SmallDisk() {
    if (mounted_) run_command({"/bin/umount", "-l", dir_});
  }
  bool mounted() const { return mounted_; }

 private:
  std::string dir_;
  bool mounted_ = false;
};

TEST(DevCheckpoints, AFullDiskEndsTheAttemptWithAClearReasonAndKeepsThePreviousCheckpoint) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  DevCluster cluster({"--sim-gpus", "1xA100-80GB"});
  std::string root = cluster.nodes_dir() + "/checkpoints";
  SmallDisk disk(root);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here";
  std::string job =
      cluster.submit({"--gpus", "1", "--env", std::string("CLI_BIN=") + GPUCLOUD_BINARY, "--",
                      "python3", "-c", kDiskFiller});
  json done = cluster.wait_done(job, std::chrono::seconds(60));
  EXPECT_EQ(done["state"], "failed") << done.dump(2);
  std::string message = done["message"];
  EXPECT_NE(message.find("checkpoint directory's file system is full"), std::string::npos)
      << message;
  EXPECT_NE(message.find("the last committed checkpoint is kept"), std::string::npos) << message;
  std::string log = cluster.cli({"logs", job}).out;
  EXPECT_NE(log.find("committed 1"), std::string::npos) << log;
  EXPECT_NE(log.find("write failed: No space left on device"), std::string::npos) << log;
  EXPECT_NE(log.find("commit 2 exit 1"), std::string::npos) << log;
  // The previous checkpoint is whole: its marker and its data.
  std::string dir = root + "/" + done["id"].get<std::string>();
  EXPECT_TRUE(std::filesystem::exists(dir + "/COMMITTED"));
  std::ifstream data(dir + "/ckpt-1/data");
  std::string text((std::istreambuf_iterator<char>(data)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "step 1");
  const json& attempt = done["attempts"][0];
  EXPECT_TRUE(attempt["checkpoint_committed"].get<bool>()) << attempt.dump();
}

}  // namespace
}  // namespace gpucloud::testing
