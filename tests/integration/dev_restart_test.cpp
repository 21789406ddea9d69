// Nothing is lost: kill -9 of `gpucloud dev` while jobs run, then a restart with the same data dir.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

int read_int(const std::string& path) {
  std::ifstream in(path);
  int v = 0;
  in >> v;
  return v;
}

// The shim and job pids of a running replica, from the agent's files.
std::pair<int, int> pids_of(const DevCluster& c, const std::string& job_id) {
  // The agent's state is in two slots; the one with the higher generation is current.
  std::string base = c.nodes_dir() + "/dev-0/agent-state.json";
  json state;
  for (const char* slot : {".0", ".1"}) {
    std::ifstream in(base + slot);
    if (!in) continue;
    json j = json::parse(in, nullptr, false);
    if (!j.is_discarded() && (state.is_null() || j["generation"] > state["generation"])) state = j;
  }
  for (const auto& r : state["replicas"])
    if (r["allocation"]["job_id"] == job_id)
      return {r["process"]["shim_pid"].get<int>(),
              read_int(r["process"]["attempt_dir"].get<std::string>() + "/pid")};
  return {0, 0};
}

TEST(DevRestart, JobsSurviveAKilledServerAndEndsAreRecorded) {
  DevCluster c;
  std::string finishing = c.submit({"--", "sh", "-c", "sleep 1.5; echo finished; exit 4"});
  std::string vanishing = c.submit({"--", "sleep", "30"});
  std::string fragile = c.submit({"--restart", "never", "--", "sleep", "30"});
  std::string waiting =
      c.submit({"--gpus", "8", "--", "sh", "-c", "echo big"});  // pending until the others end
  ASSERT_TRUE(wait_until([&] {
    return c.job(finishing)["state"] == "running" && c.job(vanishing)["state"] == "running" &&
           c.job(fragile)["state"] == "running";
  }));
  auto [shim_a, job_a] = pids_of(c, vanishing);
  auto [shim_b, job_b] = pids_of(c, fragile);
  ASSERT_GT(shim_a, 0);
  ASSERT_GT(job_b, 0);
  c.kill9();
  // While the server is down: one job ends on its own, two vanish without a trace.
  for (int pid : {shim_a, shim_b}) kill(pid, SIGKILL);
  for (int pid : {job_a, job_b}) kill(-pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(1800));
  c.start();
  json a = c.wait_done(finishing);
  EXPECT_EQ(a["state"], "failed");
  EXPECT_EQ(a["exit_code"], 4);
  EXPECT_EQ(c.cli({"logs", finishing}).out, "finished\n");
  // Vanished with restart policy on-lost: re-queued as attempt 2 (which runs sleep 30 again).
  ASSERT_TRUE(wait_until([&] { return c.job(vanishing)["attempt"] == 2; }));
  json v = c.job(vanishing);
  EXPECT_NE(v["message"].get<std::string>().find("attempt 1 was lost"), std::string::npos)
      << v.dump();
  // Vanished with restart policy never: lost, and `--wait`-style exit code 75.
  json f = c.wait_done(fragile);
  EXPECT_EQ(f["state"], "lost");
  EXPECT_TRUE(f["exit_code"].is_null());
  EXPECT_EQ(c.cli({"run", "--wait", "--", "true"}).exit_code, 0);
  // The job submitted before the crash is still there and runs once GPUs free up.
  EXPECT_EQ(c.cli({"cancel", vanishing}).exit_code, 0);
  json w = c.wait_done(waiting);
  EXPECT_EQ(w["state"], "succeeded") << w.dump();
}

TEST(DevRestart, ARunningJobIsReadoptedAndNotStartedTwice) {
  DevCluster c;
  // The job runs as its tenant's user: it counts its starts in a directory open to it.
  std::string shared = c.work_dir() + "/shared";
  std::filesystem::create_directory(shared);
  std::filesystem::permissions(shared, std::filesystem::perms::all);
  std::string id = c.submit(
      {"--workdir", shared, "--", "sh", "-c", "echo started >> count; sleep 2; echo done"});
  ASSERT_TRUE(wait_until([&] { return c.job(id)["state"] == "running"; }));
  c.kill9();
  c.start();
  json j = c.wait_done(id);
  EXPECT_EQ(j["state"], "succeeded");
  EXPECT_EQ(j["attempt"], 1);
  std::ifstream count(shared + "/count");
  std::string text((std::istreambuf_iterator<char>(count)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "started\n");
  EXPECT_EQ(c.cli({"logs", id}).out, "done\n");
}

TEST(DevNvml, AgentUsesTheNvmlBackendWhenTheLibraryLoads) {
  // The fake libnvidia-ml.so.1 stands in for the driver: the same dlopen path as on a GPU server.
  // No MIG (the fake's GPU 1 has it by default): four whole GPUs.
  DevCluster c({}, {{"LD_LIBRARY_PATH", FAKE_NVML_DIR}, {"FAKE_NVML_MIG", "-1"}});
  json nodes = json::parse(c.cli({"nodes", "--json"}).out);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0]["gpu_backend"], "nvml");
  EXPECT_FALSE(nodes[0]["driver_version"].get<std::string>().empty());
  ASSERT_FALSE(nodes[0]["gpus"].empty());
  EXPECT_EQ(nodes[0]["gpus"][0]["model"], "A100");
  // The driver's readings travel with the agent's polls (the fake reports 30 + index °C and
  // 60 + 10 × index W).
  ASSERT_TRUE(wait_until([&] {
    nodes = json::parse(c.cli({"nodes", "--json"}).out);
    return nodes[0]["gpus"][1].contains("temperature_c");
  }));
  EXPECT_EQ(nodes[0]["gpus"][1]["temperature_c"], 31);
  EXPECT_EQ(nodes[0]["gpus"][1]["power_w"], 70);
  auto r = c.cli({"run", "--gpus", "1", "--wait", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(c.cli({"logs", id}).out, nodes[0]["gpus"][0]["uuid"].get<std::string>() + "\n");
}

TEST(DevNvml, AGpuInMigModeIsOfferedAsTheMigDevicesNvmlReports) {
  // The fake's GPU 1 has MIG on with two 3g.40gb devices.
  DevCluster c({}, {{"LD_LIBRARY_PATH", FAKE_NVML_DIR}});
  json nodes = json::parse(c.cli({"nodes", "--json"}).out);
  ASSERT_EQ(nodes.size(), 1u);
  std::vector<std::string> models, uuids;
  for (const auto& g : nodes[0]["gpus"]) {
    models.push_back(g["model"]);
    if (g.contains("mig_parent")) {
      EXPECT_EQ(g["mig_parent"], 1) << g.dump();
      uuids.push_back(g["uuid"]);
    }
  }
  EXPECT_EQ(models,
            (std::vector<std::string>{"A100", "A100/3g.40gb", "A100/3g.40gb", "A100", "A100"}));
  EXPECT_EQ(uuids, (std::vector<std::string>{"MIG-fa4e0001-0000-4000-8000-00000000cafe",
                                             "MIG-fa4e0001-0001-4000-8000-00000000cafe"}));
  auto r = c.cli({"run", "--gpus", "1", "--gpu-type", "A100/3g.40gb", "--wait", "--", "sh", "-c",
                  "echo $CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(c.cli({"logs", id}).out.rfind("MIG-fa4e0001-000", 0), 0u) << c.cli({"logs", id}).out;
}

}  // namespace
}  // namespace gpucloud::testing

namespace gpucloud::testing {
namespace {

TEST(DevDataDir, ASecondServerOnTheSameDataDirIsRefused) {
  DevCluster c;
  auto second = run_command(
      {GPUCLOUD_BINARY, "dev", "--listen", "127.0.0.1:0", "--data-dir", c.data_dir()}, {}, "", 10);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE((second.out + second.err).find("is in use by another gpucloud server"),
            std::string::npos)
      << second.out << second.err;
  // The first one is unharmed.
  EXPECT_EQ(c.cli({"run", "--wait", "--", "true"}).exit_code, 0);
}

}  // namespace
}  // namespace gpucloud::testing
