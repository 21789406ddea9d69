// Container jobs end to end (docs/containers.md): a real `gpucloud dev` whose agent runs jobs
// with `image:` in podman, driven through the real CLI and API.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "checkpoint_counter.h"
#include "container_image.h"
#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The names of the containers podman has (running or not) for a replica key.
std::string containers_of(const std::string& key) {
  return trim(run_command({kPodman, "ps", "--all", "--filter", "label=gpucloud.key=" + key,
                           "--format", "{{.Names}}"})
                  .out);
}

class DevContainers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    problem_ = ensure_test_image(&podman_missing_);
    if (problem_.empty()) cluster_ = new DevCluster({"--sim-gpus", "4xA100-80GB"});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (podman_missing_) GTEST_SKIP() << "container tests need podman: " << problem_;
    ASSERT_TRUE(problem_.empty()) << problem_;
  }
  static std::vector<std::string> image_run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--image", kTestImage});
    return args;
  }
  static DevCluster* cluster_;
  static std::string problem_;
  static bool podman_missing_;
};
DevCluster* DevContainers::cluster_ = nullptr;
std::string DevContainers::problem_;
bool DevContainers::podman_missing_ = false;

TEST_F(DevContainers, OutputReachesLogsAndTheExitCodeIsTheJobs) {
  auto& c = *cluster_;
  std::vector<std::string> run = {"run", "--wait"};
  for (auto& a : image_run({"--", "sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"}))
    run.push_back(a);
  auto r = c.cli(run);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  std::string id = trim(r.out);
  json job = c.job(id);
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["exit_code"], 3);
  auto logs = c.cli({"logs", id}).out;
  EXPECT_NE(logs.find("to-stdout"), std::string::npos) << logs;
  EXPECT_NE(logs.find("to-stderr"), std::string::npos) << logs;
}

TEST_F(DevContainers, RunsAsTheTenantsJobUserNotRoot) {
  auto& c = *cluster_;
  // A process job of the same tenant says which uid the tenant's jobs get.
  std::string process = c.submit({"--", "sh", "-c", "id -u; id -g"});
  c.wait_done(process);
  std::string expected = c.cli({"logs", process}).out;
  std::string container =
      c.submit(image_run({"--", "sh", "-c", "id -u; id -g; echo x > /etc/x || echo refused"}));
  json job = c.wait_done(container);
  EXPECT_EQ(job["state"], "succeeded") << job.dump();
  std::string logs = c.cli({"logs", container}).out;
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(logs.substr(0, expected.size()), expected) << logs;
  EXPECT_NE(expected.substr(0, 2), "0\n");  // not root
  EXPECT_NE(logs.find("refused"), std::string::npos) << logs;
}

TEST_F(DevContainers, SeesOnlyItsOwnGpuDeviceNodesNumberedFromZero) {
  auto& c = *cluster_;
  // Hold two GPUs with another job so this one does not get GPU 0 by chance alone.
  std::string other = c.submit({"--gpus", "2", "--", "sleep", "30"});
  ASSERT_TRUE(wait_until([&] { return c.job(other)["state"] == "running"; }));
  std::string id = c.submit(image_run(
      {"--gpus", "2", "--", "sh", "-c", "ls /dev; echo CVD=$CUDA_VISIBLE_DEVICES; ls -l /dev/"}));
  json job = c.wait_done(id);
  c.cli({"cancel", other});
  ASSERT_EQ(job["state"], "succeeded") << job.dump();
  std::set<std::string> expected = {"nvidiactl"};
  for (const auto& g : job["replicas"][0]["gpus"])
    expected.insert("nvidia" + std::to_string(g["index"].get<int>()));
  std::string logs = c.cli({"logs", id}).out;
  std::set<std::string> seen;
  std::istringstream lines(logs);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("nvidia", 0) == 0) seen.insert(line);
  EXPECT_EQ(seen, expected) << logs;
  EXPECT_EQ(expected.count("nvidia0") + expected.count("nvidia1"), 0u)
      << "the other job holds GPUs 0 and 1";
  EXPECT_NE(logs.find("CVD=0,1\n"), std::string::npos) << logs;
  // Device nodes of the NVIDIA driver's major number.
  EXPECT_NE(logs.find("195,"), std::string::npos) << logs;
}

TEST_F(DevContainers, AMissingImageIsTheRuntimesFailureNamingTheImage) {
  auto& c = *cluster_;
  std::string id = c.submit({"--image", "localhost/gpucloud-no-such-image:1", "--pull-policy",
                             "never", "--restart", "never", "--", "true"});
  json job = c.wait_done(id);
  EXPECT_EQ(job["state"], "failed") << job.dump();
  std::string reason = job.dump();
  EXPECT_NE(reason.find("failed to start"), std::string::npos) << reason;
  EXPECT_NE(reason.find("localhost/gpucloud-no-such-image:1"), std::string::npos) << reason;
  EXPECT_NE(reason.find("podman exit 125"), std::string::npos) << reason;
  // An entrypoint the image does not have: the runtime's failure (podman's 127, or its init's
  // "failed to exec pid1"), with its reason, not the job's exit code.
  std::string no_entry = c.submit(
      image_run({"--entrypoint", "/bin/no-such-entrypoint", "--restart", "never", "--", "x"}));
  json e = c.wait_done(no_entry);
  EXPECT_EQ(e["state"], "failed") << e.dump();
  EXPECT_NE(e.dump().find("failed to start"), std::string::npos) << e.dump();
  EXPECT_NE(e.dump().find("was not found in the image"), std::string::npos) << e.dump();
  // Once, as a start that failed: not retried as if the job had run.
  EXPECT_EQ(e["attempt"], 1) << e.dump();
  // The node stays healthy: the next container job runs.
  std::string next = c.submit(image_run({"--", "echo", "still-fine"}));
  EXPECT_EQ(c.wait_done(next)["state"], "succeeded");
}

TEST_F(DevContainers, CancelSendsSigtermIntoTheContainerAndNothingOutlivesIt) {
  auto& c = *cluster_;
  std::string id = c.submit(image_run(
      {"--grace", "10s", "--", "sh", "-c",
       "trap 'echo got-TERM; exit 143' TERM; echo started; while true; do sleep 0.1; done"}));
  std::string key = id + ".1.0";
  ASSERT_TRUE(wait_until([&] {
    return c.cli({"logs", id}).out.find("started") != std::string::npos;
  }));
  EXPECT_EQ(containers_of(key), "gpucloud-" + key);
  ASSERT_EQ(c.cli({"cancel", id}).exit_code, 0);
  json job = c.wait_done(id, std::chrono::seconds(8));  // well within the grace period
  EXPECT_EQ(job["state"], "cancelled") << job.dump();
  EXPECT_NE(c.cli({"logs", id}).out.find("got-TERM"), std::string::npos);
  EXPECT_EQ(containers_of(key), "");
}

TEST_F(DevContainers, AnInitPassesSigtermToACommandWithoutAHandler) {
  auto& c = *cluster_;
  // Without an init, `sleep` would be PID 1, which ignores SIGTERM: only SIGKILL would end it.
  std::string id = c.submit(image_run({"--grace", "30s", "--", "sleep", "600"}));
  std::string key = id + ".1.0";
  ASSERT_TRUE(wait_until([&] { return containers_of(key) == "gpucloud-" + key; }));
  auto cancelled_at = std::chrono::steady_clock::now();
  ASSERT_EQ(c.cli({"cancel", id}).exit_code, 0);
  json job = c.wait_done(id, std::chrono::seconds(15));
  EXPECT_EQ(job["state"], "cancelled") << job.dump();
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, std::chrono::seconds(10))
      << "ended by SIGTERM, long before the 30 s grace";
  EXPECT_EQ(containers_of(key), "");
}

TEST_F(DevContainers, ACommandDeafToSigtermIsKilledAfterTheGraceAndRemoved) {
  auto& c = *cluster_;
  // A command that ignores SIGTERM: only the grace's SIGKILL ends it.
  std::string id =
      c.submit(image_run({"--grace", "1s", "--", "sh", "-c", "trap '' TERM; sleep 600"}));
  std::string key = id + ".1.0";
  ASSERT_TRUE(wait_until([&] { return containers_of(key) == "gpucloud-" + key; }));
  ASSERT_EQ(c.cli({"cancel", id}).exit_code, 0);
  json job = c.wait_done(id, std::chrono::seconds(15));
  EXPECT_EQ(job["state"], "cancelled") << job.dump();
  EXPECT_EQ(containers_of(key), "");
}

TEST_F(DevContainers, AContainersCpuUseCountsAsItsSimulatedGpusLoad) {
  auto& c = *cluster_;
  // Simulated GPUs are as busy as their jobs' processes: those of a container are conmon's
  // children, not the shim's, and are found through the container's cgroup.
  std::string id = c.submit(
      image_run({"--gpus", "1", "--grace", "1s", "--", "sh", "-c", "while :; do :; done"}));
  ASSERT_TRUE(wait_until([&] { return c.job(id)["state"] == "running"; }));
  int index = c.job(id)["replicas"][0]["gpus"][0]["index"];
  auto busy = [&] {
    json nodes = json::parse(c.cli({"nodes", "--json"}).out);
    for (const auto& g : nodes[0]["gpus"])
      if (g["index"] == index) return g.value("utilization_pct", 0) >= 50;
    return false;
  };
  EXPECT_TRUE(wait_until(busy, std::chrono::seconds(30)));
  c.cli({"cancel", id});
  c.wait_done(id);
}

TEST_F(DevContainers, BadContainerSpecsAreRefusedWithTheReason) {
  auto& c = *cluster_;
  struct Case {
    json extra;
    std::string says;
  };
  std::vector<Case> cases = {
      {{{"mounts", {{{"source", "/data"}, {"target", "data"}}}}}, "not an absolute path"},
      {{{"pull_policy", "sometimes"}}, "'sometimes' is not one of: always, if-not-present, never"},
      {{{"shm_size", "10TiB"}}, "shm_size"},
      {{{"registry_auth", "../../etc/shadow"}}, "not the plain name"},
      {{{"image", "-rm"}}, "is not an image reference"},
  };
  for (const auto& [extra, says] : cases) {
    json spec = {{"command", {"true"}}, {"image", kTestImage}};
    spec.update(extra);
    ApiAnswer a = api_call(c.address(), "POST", "/v1/jobs", spec.dump(), c.token());
    EXPECT_EQ(a.status, 400) << spec.dump();
    EXPECT_NE(a.message().find(says), std::string::npos) << a.message();
  }
  json no_image = {{"command", {"true"}}, {"mounts", json::array()}, {"shm_size", "1GiB"}};
  ApiAnswer a = api_call(c.address(), "POST", "/v1/jobs", no_image.dump(), c.token());
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.message().find("has no image"), std::string::npos) << a.message();
}

TEST(DevContainerRestart, AContainerOutlivesAKilledAgentAndIsReadoptedNotDuplicated) {
  bool missing = false;
  std::string problem = ensure_test_image(&missing);
  if (missing) GTEST_SKIP() << "container tests need podman: " << problem;
  ASSERT_TRUE(problem.empty()) << problem;
  DevCluster c({"--sim-gpus", "1xA100-80GB"});
  std::string id = c.submit(
      {"--image", kTestImage, "--gpus", "1", "--", "sh", "-c", "echo started; sleep 3; echo done"});
  std::string key = id + ".1.0";
  ASSERT_TRUE(wait_until([&] {
    return c.cli({"logs", id}).out.find("started") != std::string::npos;
  }));
  c.kill9();
  EXPECT_EQ(containers_of(key), "gpucloud-" + key);  // still running without its agent
  c.start();
  json job = c.wait_done(id);
  EXPECT_EQ(job["state"], "succeeded") << job.dump();
  EXPECT_EQ(job["attempt"], 1);
  EXPECT_EQ(c.cli({"logs", id}).out, "started\ndone\n");
  EXPECT_EQ(containers_of(key), "");
}

// Skips the calling test without podman; fails it when the test image cannot be made.
#define REQUIRE_TEST_IMAGE()                                                 \
  do {                                                                       \
    bool missing = false;                                                    \
    std::string problem = ensure_test_image(&missing);                       \
    if (missing) GTEST_SKIP() << "container tests need podman: " << problem; \
    ASSERT_TRUE(problem.empty()) << problem;                                 \
  } while (0)

TEST(DevContainerInterruptions, TheNoticeReachesTheContainerAndTheNextAttemptResumes) {
  REQUIRE_TEST_IMAGE();
  DevCluster c({"--sim-gpus", "1xA100-80GB", "--sim-nodes", "2"});
  std::string id =
      c.submit({"--image", kTestImage, "--gpus", "1", "--", "sh", "-c",
                "cd $GPUCLOUD_CHECKPOINT_DIR; if [ \"$GPUCLOUD_RESUMED\" = 1 ]; then echo "
                "resumed-at-$(cat step)-$(cat notice);"
                " exit 0; fi; trap '' TERM; echo 7 > step; echo > COMMITTED; echo ready;"
                " while [ ! -e \"$GPUCLOUD_INTERRUPT\" ]; do sleep 0.1; done; echo seen > notice"});
  ASSERT_TRUE(wait_until([&] {
    return c.cli({"logs", id}).out.find("ready") != std::string::npos;
  }));
  std::string node = c.job(id)["replicas"][0]["node"];
  ASSERT_EQ(c.cli({"node", "interrupt", node, "--in", "5s"}).exit_code, 0);
  json job = c.wait_done(id);
  EXPECT_EQ(job["state"], "succeeded") << job.dump();
  EXPECT_EQ(job["attempt"], 2) << job.dump();
  // The first attempt saw the notice file and checkpointed; the second resumed from it.
  std::string logs = c.cli({"logs", id}).out;
  EXPECT_NE(logs.find("resumed-at-7-seen"), std::string::npos) << logs;
}

TEST(DevContainerInterruptions, APythonJobCheckpointsOnADrainAndResumesOnTheOtherNode) {
  bool missing = false;
  std::string problem = ensure_python_image(&missing);
  if (missing) GTEST_SKIP() << "container tests need podman: " << problem;
  ASSERT_TRUE(problem.empty()) << problem;
  DevCluster c({"--sim-gpus", "1xA100-80GB", "--sim-nodes", "2"});
  std::string id =
      c.submit({"--image", kPythonImage, "--gpus", "1", "--", "python3", "-c", kCheckpointCounter});
  ASSERT_TRUE(wait_until([&] { return c.job(id)["state"] == "running"; })) << c.job(id).dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a checkpoint or more
  std::string first = c.job(id)["replicas"][0]["node"];
  ASSERT_EQ(c.cli({"node", "drain", first}).exit_code, 0);
  json job = c.wait_done(id, std::chrono::seconds(60));
  EXPECT_EQ(job["state"], "succeeded") << job.dump();
  EXPECT_EQ(job["attempt"], 2) << job.dump();
  EXPECT_NE(job["replicas"][0]["node"], first);
  std::string logs = c.cli({"logs", id}).out;
  EXPECT_NE(logs.find("resumed at"), std::string::npos) << logs;
  EXPECT_NE(logs.find("result 820"), std::string::npos) << logs;  // 1 + ... + 40
  // It checkpointed when told to stop (SIGTERM reached python through the container's init).
  const json& first_attempt = job["attempts"][0];
  EXPECT_EQ(first_attempt["cause"], "drain") << job.dump();
  EXPECT_TRUE(first_attempt["checkpoint_committed"].get<bool>()) << first_attempt.dump();
  EXPECT_LT(first_attempt["gpu_seconds_lost"].get<double>(), 2.0) << first_attempt.dump();
}

TEST(DevContainerMounts, HostPathsOnlyUnderWhatTheNodeAllowsAndReadOnlyHolds) {
  REQUIRE_TEST_IMAGE();
  TempDir allowed;
  std::filesystem::permissions(
      allowed.path(), std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                          std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                          std::filesystem::perms::others_exec);
  { std::ofstream(allowed.path() + "/input.txt") << "dataset\n"; }
  std::filesystem::permissions(
      allowed.path() + "/input.txt",
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
          std::filesystem::perms::others_read | std::filesystem::perms::group_read);
  TempDir auth;
  DevCluster c({"--sim-gpus", "1xA100-80GB", "--container-mount-allow", allowed.path(),
                "--registry-auth-dir", auth.path()});
  std::string ok = c.submit({"--image", kTestImage, "--mount", allowed.path() + ":/in:ro", "--",
                             "sh", "-c", "cat /in/input.txt; echo x > /in/new || echo read-only"});
  json job = c.wait_done(ok);
  EXPECT_EQ(job["state"], "succeeded") << job.dump();
  std::string logs = c.cli({"logs", ok}).out;
  EXPECT_NE(logs.find("dataset"), std::string::npos) << logs;
  EXPECT_NE(logs.find("read-only"), std::string::npos) << logs;
  std::string refused = c.submit({"--image", kTestImage, "--restart", "never", "--mount",
                                  "/etc:/host-etc:ro", "--", "cat", "/host-etc/hostname"});
  json r = c.wait_done(refused);
  EXPECT_EQ(r["state"], "failed") << r.dump();
  EXPECT_NE(r.dump().find("host path /etc is not under a path this node allows"), std::string::npos)
      << r.dump();
  // Registry credentials by name: a name without its file on the node is a clear failure; with
  // the file, podman is given it.
  std::vector<std::string> authed = {"--image", kTestImage,  "--registry-auth",
                                     "team",    "--restart", "never",
                                     "--",      "echo",      "pulled"};
  json missing = c.wait_done(c.submit(authed));
  EXPECT_EQ(missing["state"], "failed") << missing.dump();
  EXPECT_NE(
      missing.dump().find("registry_auth: " + auth.path() + "/default/team.json does not exist"),
      std::string::npos)
      << missing.dump();
  // Another tenant's file of that name is not this tenant's.
  std::filesystem::create_directories(auth.path() + "/other");
  { std::ofstream(auth.path() + "/other/team.json") << "{\"auths\": {}}\n"; }
  EXPECT_EQ(c.wait_done(c.submit(authed))["state"], "failed");
  std::filesystem::create_directories(auth.path() + "/default");
  { std::ofstream(auth.path() + "/default/team.json") << "{\"auths\": {}}\n"; }
  json found = c.wait_done(c.submit(authed));
  EXPECT_EQ(found["state"], "succeeded") << found.dump();
}

TEST(DevContainerMounts, ANamedVolumeBelongsToTheJobsTenant) {
  REQUIRE_TEST_IMAGE();
  TempDir dir;
  std::string config = dir.path() + "/gpucloud.yaml";
  std::ofstream(config) << "tenants:\n  - {name: vision}\n  - {name: nlp}\n";
  DevCluster c({"--sim-gpus", "1xA100-80GB", "--config", config});
  auto volume_job = [&](const std::string& tenant, const std::string& script) {
    std::string id = c.submit({"--tenant", tenant, "--image", kTestImage, "--mount",
                               "scratch:/scratch", "--", "sh", "-c", script});
    EXPECT_EQ(c.wait_done(id)["state"], "succeeded") << c.job(id).dump();
    return c.cli({"logs", id}).out;
  };
  volume_job("vision", "echo vision-data > /scratch/f");
  // The same tenant finds its data again; another tenant naming the same volume does not.
  EXPECT_EQ(volume_job("vision", "cat /scratch/f"), "vision-data\n");
  EXPECT_EQ(volume_job("nlp", "cat /scratch/f 2>/dev/null || echo empty"), "empty\n");
  run_command(
      {kPodman, "volume", "rm", "--force", "gpucloud.vision.scratch", "gpucloud.nlp.scratch"});
}

}  // namespace
}  // namespace gpucloud::testing
