// GPU device isolation for process jobs (docs/security.md, "GPU devices") on a real
// `gpucloud dev` with simulated GPUs. The test makes device nodes with the NVIDIA driver's major
// number (195) in a directory of its own: with no driver behind them, opening an allowed one
// fails with ENXIO ("No such device or address"), while the devices cgroup refuses the others
// with EPERM ("Operation not permitted"), whatever path reaches them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <sstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

constexpr const char* kNoDriver = "No such device or address";
constexpr const char* kDenied = "Operation not permitted";

class DevGpuDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    // The isolation needs a writable cgroup v1 devices controller (docs/security.md).
    if (::access("/sys/fs/cgroup/devices/devices.allow", W_OK) != 0)
      GTEST_SKIP() << "no writable cgroup v1 devices controller on this machine";
    make_nodes();
  }
  /// Device nodes of the NVIDIA driver's major (and /dev/null's) in a directory of the test's.
  void make_nodes() {
    for (const auto& [name, major, minor] : std::vector<std::tuple<std::string, int, int>>{
             {"nvidia0", 195, 0}, {"nvidia1", 195, 1}, {"nvidiactl", 195, 255}, {"null", 1, 3}}) {
      std::string path = nodes_.path() + "/" + name;
      ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)), 0) << path;
      ::chmod(path.c_str(), 0666);
    }
  }
  /// Runs a job that tries to open each node and prints "NAME: opened" or "NAME: strerror".
  std::map<std::string, std::string> opens(DevCluster& c, const std::vector<std::string>& gpus,
                                           int* gpu_index) {
    std::string script =
        "import os, sys\n"
        "for p in sys.argv[1:]:\n"
        "  try:\n"
        "    os.close(os.open(p, os.O_RDONLY)); print(os.path.basename(p) + ': opened')\n"
        "  except OSError as e:\n"
        "    print(os.path.basename(p) + ': ' + e.strerror)\n";
    std::vector<std::string> args = gpus;
    for (const std::string& a :
         {std::string("--"), std::string("python3"), std::string("-c"), script})
      args.push_back(a);
    for (const char* name : {"nvidia0", "nvidia1", "nvidiactl", "null"})
      args.push_back(nodes_.path() + "/" + name);
    std::string id = c.submit(args);
    json job = c.wait_done(id);
    EXPECT_EQ(job["state"], "succeeded") << job.dump();
    if (gpu_index && !job["replicas"][0]["gpus"].empty())
      *gpu_index = job["replicas"][0]["gpus"][0]["index"];
    std::map<std::string, std::string> out;
    std::istringstream lines(c.cli({"logs", id}).out);
    for (std::string line; std::getline(lines, line);)
      if (auto colon = line.find(": "); colon != std::string::npos)
        out[line.substr(0, colon)] = line.substr(colon + 2);
    return out;
  }
  /// A one-GPU job on a two-GPU node opens its GPU's node and the control node, not the other
  /// GPU's, and other drivers' devices as before.
  void expect_only_its_own_gpu(DevCluster& c) {
    int index = -1;
    auto seen = opens(c, {"--gpus", "1"}, &index);
    ASSERT_TRUE(index == 0 || index == 1) << index;
    std::string own = "nvidia" + std::to_string(index);
    std::string other = "nvidia" + std::to_string(1 - index);
    EXPECT_EQ(seen[own], kNoDriver) << "its own GPU's node is allowed";
    EXPECT_EQ(seen[other], kDenied) << "another GPU's node is refused";
    EXPECT_EQ(seen["nvidiactl"], kNoDriver);
    EXPECT_EQ(seen["null"], "opened") << "devices of other drivers are untouched";
  }
  TempDir nodes_{"/var/tmp"};  // not under /tmp: a job gets its own /tmp
};

TEST_F(DevGpuDevices, AProcessJobOpensOnlyItsOwnGpusNodesAndTheControlNode) {
  DevCluster c({"--sim-gpus", "2xA100-80GB"});
  expect_only_its_own_gpu(c);
}

TEST_F(DevGpuDevices, AJobOnAMigDeviceOpensOnlyTheNodeOfTheGpuItIsCarvedOutOf) {
  DevCluster c({"--sim-gpus", "1xA100-80GB,1xA100-80GB:mig=3g.40gb+3g.40gb"});
  int index = -1;
  auto seen = opens(c, {"--gpus", "1", "--gpu-type", "A100/3g.40gb"}, &index);
  EXPECT_GE(index, 64) << "a MIG device";
  EXPECT_EQ(seen["nvidia1"], kNoDriver) << "the MIG device's own GPU";
  EXPECT_EQ(seen["nvidia0"], kDenied) << "the whole GPU beside it";
}

// The same confinement by a BPF device program on cgroup v2 (the hybrid hierarchy's
// /sys/fs/cgroup/unified here), as on a cgroup v2 host.
class DevGpuDevicesBpf : public DevGpuDevices {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "BPF device programs need root";
    if (::access("/sys/fs/cgroup/unified/cgroup.procs", W_OK) != 0 &&
        ::access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) != 0)
      GTEST_SKIP() << "no writable cgroup v2 hierarchy on this machine";
    make_nodes();
  }
};

TEST_F(DevGpuDevicesBpf, AProcessJobOpensOnlyItsOwnGpusNodesAndTheControlNode) {
  DevCluster c({"--sim-gpus", "2xA100-80GB", "--device-isolation", "bpf"});
  expect_only_its_own_gpu(c);
  // A job without GPUs opens none.
  auto none = opens(c, {"--gpus", "0"}, nullptr);
  EXPECT_EQ(none["nvidia0"], kDenied);
  EXPECT_EQ(none["nvidia1"], kDenied);
}

TEST_F(DevGpuDevices, AJobWithoutGpusOpensNoGpusNode) {
  DevCluster c({"--sim-gpus", "2xA100-80GB"});
  auto seen = opens(c, {"--gpus", "0"}, nullptr);
  EXPECT_EQ(seen["nvidia0"], kDenied);
  EXPECT_EQ(seen["nvidia1"], kDenied);
  EXPECT_EQ(seen["null"], "opened");
}

}  // namespace
}  // namespace gpucloud::testing
