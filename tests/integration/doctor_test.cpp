// `gpucloud doctor` (docs/doctor.md) on this machine, with the fake NVML library standing in for
// the driver (version 550.54.15, CUDA 12.4): each check's verdict, the exit code, and the image
// check against the CUDA/driver table with images made locally that declare a CUDA version.
#include <gtest/gtest.h>

#include "container_image.h"
#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

std::string fake_nvml() {
  return std::string(FAKE_NVML_DIR) + "/libnvidia-ml.so.1";
}

// check name -> {status, why}
std::map<std::string, std::pair<std::string, std::string>> doctor(
    const std::vector<std::string>& args, int* exit_code) {
  std::vector<std::string> argv = {GPUCLOUD_BINARY, "doctor", "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_command(argv);
  *exit_code = r.exit_code;
  std::map<std::string, std::pair<std::string, std::string>> out;
  json checks = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(checks.is_array()) << r.out << r.err;
  if (checks.is_array())
    for (const auto& c : checks) out[c["check"]] = {c["status"], c["why"]};
  if (r.exit_code != 0) std::cerr << r.out << r.err;
  return out;
}

// An empty image whose environment declares CUDA_VERSION (as nvidia/cuda images do).
std::string cuda_image(const std::string& cuda) {
  std::string name = "localhost/gpucloud-test-cuda:" + cuda;
  if (run_command({kPodman, "image", "exists", name}).exit_code == 0) return name;
  TempDir dir;
  run_command({"/usr/bin/mkdir", dir.path() + "/root"});
  run_command({"/usr/bin/tar", "-C", dir.path() + "/root", "-cf", dir.path() + "/x.tar", "."});
  auto made = run_command(
      {kPodman, "import", "--change", "ENV CUDA_VERSION=" + cuda, dir.path() + "/x.tar", name});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return name;
}

TEST(Doctor, ChecksTheDriverAgainstTheMinimumAndExitsOneOnAFailure) {
  TempDir dir;
  int code = -1;
  auto checks = doctor({"--nvml-library", fake_nvml(), "--data-dir", dir.path()}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(checks["gpu driver"].first, "ok") << checks["gpu driver"].second;
  EXPECT_NE(checks["gpu driver"].second.find("driver 550.54.15"), std::string::npos);
  EXPECT_EQ(checks["gpus"].first, "ok");
  EXPECT_EQ(checks["cgroups"].first == "ok" || checks["cgroups"].first == "warn", true);
  EXPECT_EQ(checks["disk"].first, "ok");
  EXPECT_EQ(checks["open files"].first == "ok" || checks["open files"].first == "warn", true);
  // A newer minimum fails the node.
  checks = doctor({"--nvml-library", fake_nvml(), "--min-driver", "560.28.03"}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(checks["gpu driver"].first, "fail");
  EXPECT_NE(checks["gpu driver"].second.find("older than 560.28.03"), std::string::npos);
  // Without a driver the node can offer simulated GPUs only: a warning, not a failure.
  checks = doctor({"--nvml-library", dir.path() + "/no-such-libnvidia-ml.so.1"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(checks["gpu driver"].first, "warn");
}

// Every "gpu health" verdict of a doctor run with the fake driver's knobs set in env.
std::vector<std::pair<std::string, std::string>> gpu_health(
    const std::map<std::string, std::string>& env, int* exit_code) {
  auto r = run_command({GPUCLOUD_BINARY, "doctor", "--json", "--nvml-library", fake_nvml()}, env);
  *exit_code = r.exit_code;
  std::vector<std::pair<std::string, std::string>> out;
  json checks = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(checks.is_array()) << r.out << r.err;
  if (checks.is_array())
    for (const auto& c : checks)
      if (c["check"] == "gpu health") out.push_back({c["status"], c["why"]});
  return out;
}

TEST(Doctor, GpuHealthFailsOnUncorrectableEccOrAFailedRemapAndWarnsOnRepairsToCome) {
  int code = -1;
  auto healthy = gpu_health({}, &code);
  EXPECT_EQ(code, 0);
  ASSERT_EQ(healthy.size(), 1u);
  EXPECT_EQ(healthy[0].first, "ok") << healthy[0].second;
  EXPECT_NE(healthy[0].second.find("4 GPU(s)"), std::string::npos) << healthy[0].second;

  auto ecc = gpu_health({{"FAKE_NVML_ECC", "2:3"}}, &code);
  EXPECT_EQ(code, 1) << "a GPU whose memory cannot be trusted fails the node";
  ASSERT_EQ(ecc.size(), 1u);
  EXPECT_EQ(ecc[0].first, "fail");
  EXPECT_NE(ecc[0].second.find("GPU 2 has 3 uncorrectable ECC error(s)"), std::string::npos)
      << ecc[0].second;

  auto remap = gpu_health({{"FAKE_NVML_REMAP_FAILURE", "0"}}, &code);
  EXPECT_EQ(code, 1);
  ASSERT_EQ(remap.size(), 1u);
  EXPECT_NE(remap[0].second.find("GPU 0 failed to remap a memory row"), std::string::npos);

  auto pending =
      gpu_health({{"FAKE_NVML_RETIRED_PENDING", "1"}, {"FAKE_NVML_PERSISTENCE", "0"}}, &code);
  EXPECT_EQ(code, 0) << "repairs that wait for a reboot only warn";
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].first, "warn");
  EXPECT_NE(pending[0].second.find("GPU 1 has memory pages waiting to be retired"),
            std::string::npos);
  EXPECT_NE(pending[1].second.find("persistence mode is off on 4 GPU(s)"), std::string::npos);

  // A reading the driver refuses is unknown, not a failure.
  auto unknown = gpu_health({{"FAKE_NVML_FAIL", "nvmlDeviceGetTotalEccErrors"}}, &code);
  EXPECT_EQ(code, 0);
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].first, "ok") << unknown[0].second;
}

TEST(Doctor, AnImagesCudaVersionIsCheckedAgainstTheDriver) {
  bool missing = false;
  std::string problem = ensure_test_image(&missing);
  if (missing) GTEST_SKIP() << "needs podman: " << problem;
  int code = -1;
  // CUDA 12.4 needs 550.54.14: the fake's 550.54.15 runs it. CUDA 12.6 needs 560.28.03.
  auto checks = doctor({"--nvml-library", fake_nvml(), "--image", cuda_image("12.4.1")}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(checks["image"].first, "ok") << checks["image"].second;
  checks = doctor({"--nvml-library", fake_nvml(), "--image", cuda_image("12.6.0")}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(checks["image"].first, "fail");
  EXPECT_NE(checks["image"].second.find("needs driver 560.28.03+; this node has 550.54.15"),
            std::string::npos)
      << checks["image"].second;
  checks = doctor({"--image", "localhost/gpucloud-no-such-image:1"}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(checks["image"].first, "fail");
  EXPECT_EQ(checks.count("container start"), 0u) << "no image, nothing to start";
}

TEST(Doctor, AnImageIsStartedWithTheRuntimeTheAgentWouldUse) {
  bool missing = false;
  std::string problem = ensure_test_image(&missing);
  if (missing) GTEST_SKIP() << "needs podman: " << problem;
  int code = -1;
  auto checks = doctor({"--image", kTestImage}, &code);
  EXPECT_EQ(checks["container start"].first, "ok") << checks["container start"].second;
  EXPECT_NE(checks["container start"].second.find("started and ended a container of"),
            std::string::npos);
  // An image without `true` (the CUDA stand-in is empty) cannot be started by the doctor.
  checks = doctor({"--image", cuda_image("12.4.1")}, &code);
  EXPECT_EQ(checks["container start"].first, "warn") << checks["container start"].second;
}

}  // namespace
}  // namespace gpucloud::testing
