// Node health and GPU sharing on a real `gpucloud dev` with simulated GPUs: the doctor each
// agent runs at start keeps a failing node free of jobs and says why (docs/doctor.md); MIG
// devices are schedulable devices of their own, matched only by their profile; CUDA MPS gives
// each share its limits, with a stand-in MPS control program (there is no driver here), and
// nodes without MPS say that shares are best-effort (docs/containers.md, "Fractional GPUs").
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

json nodes_of(const DevCluster& c) {
  return json::parse(c.cli({"nodes", "--json"}).out, nullptr, false);
}

std::string logs_of(const DevCluster& c, const std::string& id) {
  return c.cli({"logs", id}).out;
}

TEST(DevDoctor, ANodeWhoseDoctorFailsGetsNoJobsAndEveryListingSaysWhy) {
  // No disk has 100 TiB free (a tenth of the minimum): the disk check fails on every node.
  DevCluster c({"--sim-gpus", "1xA100-80GB", "--min-free-disk", "1000TiB"});
  json nodes = nodes_of(c);
  ASSERT_EQ(nodes.size(), 1u) << nodes.dump();
  EXPECT_EQ(nodes[0]["doctor_status"], "fail") << nodes.dump();
  std::string reason = nodes[0].value("unschedulable_reason", "");
  EXPECT_NE(reason.find("doctor: disk failed"), std::string::npos) << reason;
  EXPECT_NE(reason.find("fix: free space"), std::string::npos) << reason;

  std::string id = c.submit({"--gpus", "1", "--", "true"});
  std::string cpu_only = c.submit({"--", "true"});
  ASSERT_TRUE(wait_until([&] {
    return c.job(id).value("pending_reason", "").find("not schedulable") != std::string::npos;
  })) << c.job(id).dump();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(c.job(id)["state"], "pending");
  EXPECT_EQ(c.job(cpu_only)["state"], "pending") << "a failing node takes no job at all";

  std::string table = c.cli({"nodes"}).out;
  EXPECT_NE(table.find("dev-0: no jobs: doctor: disk failed"), std::string::npos) << table;
  EXPECT_NE(table.find("restart the node's agent"), std::string::npos) << table;
  std::string events = c.cli({"events", "--node", "dev-0"}).out;
  EXPECT_NE(events.find("unhealthy"), std::string::npos) << events;
}

TEST(DevDoctor, AHealthyNodeReportsItsChecksAndRunsJobs) {
  DevCluster c({"--sim-gpus", "1xA100-80GB"});
  json nodes = nodes_of(c);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_NE(nodes[0]["doctor_status"], "fail") << nodes.dump();
  EXPECT_FALSE(nodes[0].contains("unschedulable_reason"));
  std::map<std::string, std::string> status;
  for (const auto& check : nodes[0]["doctor"]) status[check["check"]] = check["status"];
  EXPECT_EQ(status["gpu driver"], "ok") << nodes.dump();
  EXPECT_EQ(status["disk"], "ok") << nodes.dump();
  EXPECT_EQ(status.count("cgroups"), 1u);
  EXPECT_EQ(c.wait_done(c.submit({"--gpus", "1", "--", "true"}))["state"], "succeeded");
}

TEST(DevDoctor, TheServerChecksEachNodesClockAgainstItsOwn) {
  DevCluster c({"--sim-gpus", "1xA100-80GB"});
  auto clock_of = [&](const std::string& name) {
    for (const auto& n : nodes_of(c))
      if (n["name"] == name)
        for (const auto& check : n["doctor"])
          if (check["check"] == "clock") return check;
    return json();
  };
  EXPECT_EQ(clock_of("dev-0").value("status", ""), "ok") << nodes_of(c).dump();

  std::ifstream token_file(c.data_dir() + "/agent.token");
  std::string join((std::istreambuf_iterator<char>(token_file)), {});
  while (!join.empty() && std::isspace(static_cast<unsigned char>(join.back()))) join.pop_back();
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  auto register_at = [&](const std::string& name, const json& sent_at) {
    json node = {
        {"name", name}, {"cpu_milli", 4000}, {"memory_mib", 8192}, {"gpus", json::array()}};
    return api_call(c.address(), "POST", "/v1/agent/register",
                    json{{"node", node}, {"sent_at_ms", sent_at}}.dump(), join);
  };
  ASSERT_EQ(register_at("slow", now_ms - 10 * 60'000).status, 200);
  ASSERT_EQ(register_at("fast", now_ms + 10'000).status, 200);
  json slow = clock_of("slow"), fast = clock_of("fast");
  EXPECT_EQ(slow.value("status", ""), "fail") << slow.dump();
  EXPECT_NE(slow.value("why", "").find("behind the server's"), std::string::npos) << slow.dump();
  EXPECT_NE(slow.value("fix", "").find("chrony"), std::string::npos) << slow.dump();
  EXPECT_EQ(fast.value("status", ""), "warn") << fast.dump();
  EXPECT_NE(fast.value("why", "").find("ahead of the server's"), std::string::npos);
  for (const auto& n : nodes_of(c)) {
    if (n["name"] == "slow") {
      EXPECT_NE(n.value("unschedulable_reason", "").find("doctor: clock failed"),
                std::string::npos);
    }
    if (n["name"] == "fast") {
      EXPECT_FALSE(n.contains("unschedulable_reason")) << n.dump();
    }
  }
  for (const json& bad : {json("soon"), json(-5), json(1.5)}) {
    ApiAnswer a = register_at("odd", bad);
    EXPECT_EQ(a.status, 400) << bad.dump();
    EXPECT_NE(a.message().find("sent_at_ms"), std::string::npos) << a.message();
  }
}

TEST(DevDoctor, AFullReportAndTheServersClockCheckStillLoadAfterARestart) {
  // The most verdicts a node may send, plus the server's clock check: the stored node must
  // read back, or the server could not start again.
  DevCluster c({"--sim-gpus", "1xA100-80GB"});
  std::ifstream token_file(c.data_dir() + "/agent.token");
  std::string join((std::istreambuf_iterator<char>(token_file)), {});
  while (!join.empty() && std::isspace(static_cast<unsigned char>(join.back()))) join.pop_back();
  json checks = json::array();
  for (int i = 0; i < 63; ++i)
    checks.push_back({{"check", "c" + std::to_string(i)}, {"status", "ok"}, {"why", "fine"}});
  checks.push_back({{"check", "disk"}, {"status", "fail"}, {"why", "full"}, {"fix", "free it"}});
  json node = {{"name", "crowded"},
               {"cpu_milli", 4000},
               {"memory_mib", 8192},
               {"gpus", json::array()},
               {"doctor", checks}};
  ApiAnswer a = api_call(c.address(), "POST", "/v1/agent/register",
                         json{{"node", node}, {"sent_at_ms", 1}}.dump(), join);
  ASSERT_EQ(a.status, 200) << a.body.dump();
  c.kill9();
  c.start();
  for (const auto& n : nodes_of(c)) {
    if (n["name"] != "crowded") continue;
    EXPECT_EQ(n["doctor"].size(), 64u);
    EXPECT_EQ(n["doctor"].back()["check"], "clock") << "the server's own check is kept";
    EXPECT_EQ(n["doctor"].front()["check"], "disk") << "a failure is never the one dropped";
    EXPECT_EQ(n["doctor_status"], "fail");
    return;
  }
  ADD_FAILURE() << "node 'crowded' is gone after the restart: " << nodes_of(c).dump();
}

TEST(DevDoctor, BadNodeFlagsAreRefusedWithTheFlag) {
  TempDir dir;
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--min-driver", "abc"},
                                                        {"--min-driver", "470..1"},
                                                        {"--min-free-disk", "99999999TiB"},
                                                        {"--min-free-disk", "lots"},
                                                        {"--mps-control", ""}}) {
    auto r = run_command({GPUCLOUD_BINARY, "dev", "--data-dir", dir.path() + "/d", "--listen",
                          "127.0.0.1:0", flag, value},
                         {}, "", 20);
    EXPECT_EQ(r.exit_code, 2) << flag << " " << value << ": " << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
  }
}

TEST(DevMig, MigDevicesAreMatchedOnlyByTheirProfileAndJobsSeeTheirUuid) {
  // GPU 0 is split into two 3g.40gb devices; GPU 1 is whole.
  DevCluster c({"--sim-gpus", "1xA100-80GB:mig=3g.40gb+3g.40gb,1xA100-80GB"});
  json nodes = nodes_of(c);
  ASSERT_EQ(nodes.size(), 1u);
  std::map<std::string, int> models;
  for (const auto& g : nodes[0]["gpus"]) {
    ++models[g["model"]];
    if (g["model"] == "A100/3g.40gb") {
      EXPECT_EQ(g["mig_parent"], 0) << g.dump();
      EXPECT_EQ(g["uuid"].get<std::string>().rfind("MIG-", 0), 0u) << g.dump();
      EXPECT_EQ(g["memory_mib"], 40 * 1024);
    }
  }
  EXPECT_EQ(models["A100/3g.40gb"], 2) << nodes.dump();
  EXPECT_EQ(models["A100"], 1) << nodes.dump();
  EXPECT_NE(c.cli({"nodes"}).out.find("2xA100/3g.40gb"), std::string::npos);

  std::vector<std::string> slices;
  for (const char* type : {"A100/3g.40gb", "A100-80GB/3g.40gb"})
    slices.push_back(c.submit(
        {"--gpus", "1", "--gpu-type", type, "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"}));
  std::string whole = c.submit({"--gpus", "1", "--", "sleep", "600"});
  for (const auto& id : slices) {
    json job = c.wait_done(id);
    ASSERT_EQ(job["state"], "succeeded") << job.dump();
    EXPECT_GE(job["replicas"][0]["gpus"][0]["index"].get<int>(), 64) << job.dump();
    EXPECT_EQ(logs_of(c, id).rfind("MIG-", 0), 0u) << logs_of(c, id);
  }
  ASSERT_TRUE(wait_until([&] { return c.job(whole)["state"] == "running"; }))
      << c.job(whole).dump();
  EXPECT_EQ(c.job(whole)["replicas"][0]["gpus"][0]["index"], 1) << "a whole GPU, never a slice";
  // No whole GPU is left, and the slices do not count as one.
  std::string waits = c.submit({"--gpus", "1", "--", "true"});
  ASSERT_TRUE(wait_until([&] { return !c.job(waits).value("pending_reason", "").empty(); }));
  EXPECT_EQ(c.job(waits)["state"], "pending");
  // A profile no node has is refused at once, saying so.
  auto absent = c.cli({"run", "--gpus", "1", "--gpu-type", "A100/1g.10gb", "--", "true"});
  EXPECT_NE(absent.exit_code, 0);
  EXPECT_NE(absent.err.find("no node has a GPU matching 'A100/1g.10gb'"), std::string::npos)
      << absent.err;
}

TEST(DevMig, BadMigSpecsAreRefused) {
  TempDir dir;
  for (const char* spec : {"1xA100-80GB:mig=4g.40gb+4g.40gb", "1xA100-80GB:mig=3g",
                           "1xA100-80GB:mig=", "1xA100-80GB:migs=1g.10gb"}) {
    auto r = run_command({GPUCLOUD_BINARY, "dev", "--data-dir", dir.path() + "/d", "--listen",
                          "127.0.0.1:0", "--sim-gpus", spec},
                         {}, "", 20);
    EXPECT_NE(r.exit_code, 0) << spec;
    EXPECT_NE(r.err.find("GPU spec"), std::string::npos) << spec << ": " << r.err;
  }
}

class DevMps : public ::testing::Test {
 protected:
  /// A stand-in for nvidia-cuda-mps-control: records each call and its MPS environment.
  std::string control(int exit_code) {
    std::string path = dir_.path() + "/mps-control";
    std::ofstream(path) << "#!/bin/sh\n"
                        << "echo \"$* $CUDA_VISIBLE_DEVICES $CUDA_MPS_PIPE_DIRECTORY\" >> "
                        << dir_.path() << "/calls\n"
                        << "exit " << exit_code << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  std::string calls() {
    std::ifstream in(dir_.path() + "/calls");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  TempDir dir_{"/var/tmp"};
};

TEST_F(DevMps, EachGpuGetsADaemonAndASharesProcessGetsItsLimits) {
  DevCluster c({"--sim-gpus", "2xA100-80GB", "--mps", "--mps-control", control(0)});
  json nodes = nodes_of(c);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0]["gpu_sharing"], "mps") << nodes.dump();
  std::string recorded = calls();
  for (const auto& g : nodes[0]["gpus"]) {
    std::string uuid = g["uuid"];
    EXPECT_NE(recorded.find("-d " + uuid + " "), std::string::npos) << recorded;
  }
  std::string share =
      c.submit({"--gpu-milli", "250", "--gpu-memory", "10GiB", "--", "sh", "-c", "env | sort"});
  json job = c.wait_done(share);
  ASSERT_EQ(job["state"], "succeeded") << job.dump();
  std::string env = logs_of(c, share);
  EXPECT_NE(env.find("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n"), std::string::npos) << env;
  EXPECT_NE(env.find("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M\n"), std::string::npos) << env;
  int index = job["replicas"][0]["gpus"][0]["index"];
  EXPECT_NE(env.find("CUDA_MPS_PIPE_DIRECTORY=" + c.nodes_dir() + "/dev-0/mps/" +
                     std::to_string(index) + "/pipe\n"),
            std::string::npos)
      << env;
  EXPECT_NE(c.cli({"show", share}).out.find("(250m, MPS limits)"), std::string::npos);
  // A whole GPU is not an MPS client.
  std::string whole = c.submit({"--gpus", "1", "--", "sh", "-c", "env | sort"});
  ASSERT_EQ(c.wait_done(whole)["state"], "succeeded");
  EXPECT_EQ(logs_of(c, whole).find("CUDA_MPS_"), std::string::npos) << logs_of(c, whole);
}

TEST_F(DevMps, AControlProgramThatFailsFailsTheDoctorAndTheNodeTakesNoJobs) {
  DevCluster c({"--sim-gpus", "1xA100-80GB", "--mps", "--mps-control", control(1)});
  json nodes = nodes_of(c);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0]["gpu_sharing"], "best-effort");
  std::string reason = nodes[0].value("unschedulable_reason", "");
  EXPECT_NE(reason.find("doctor: mps failed: MPS on GPU 0"), std::string::npos) << reason;
  EXPECT_NE(reason.find("exited with code 1"), std::string::npos) << reason;
}

TEST_F(DevMps, WithoutMpsASharesListingSaysItIsBestEffort) {
  DevCluster c({"--sim-gpus", "1xA100-80GB"});
  EXPECT_EQ(nodes_of(c)[0]["gpu_sharing"], "best-effort");
  EXPECT_NE(c.cli({"nodes"}).out.find("best-effort"), std::string::npos);
  std::string share = c.submit({"--gpu-milli", "500", "--", "sleep", "600"});
  ASSERT_TRUE(wait_until([&] { return c.job(share)["state"] == "running"; }));
  EXPECT_NE(c.cli({"show", share}).out.find("(500m, best-effort: not enforced)"), std::string::npos)
      << c.cli({"show", share}).out;
}

}  // namespace
}  // namespace gpucloud::testing
