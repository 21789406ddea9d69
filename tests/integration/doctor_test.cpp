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
}

}  // namespace
}  // namespace gpucloud::testing
