// MIG devices as schedulable devices, and the CUDA MPS daemons and client environment of GPU
// shares (docs/containers.md, "MIG" and "Fractional GPUs").
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/mig_caps.h"
#include "agent/mig_devices.h"
#include "agent/mps.h"

namespace gpucloud::agent {
namespace {

Gpu gpu(int index, std::vector<int> peers, std::vector<MigDevice> mig = {}) {
  Gpu g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.name = "NVIDIA A100-SXM4-80GB";
  g.model = "A100";
  g.memory_mib = 81920;
  g.numa_node = index / 2;
  g.nvlink_peers = std::move(peers);
  g.mig = std::move(mig);
  return g;
}

TEST(OfferedDevices, AGpuInMigModeIsReplacedByItsMigDevices) {
  auto devices = offered_devices(
      {gpu(0, {1}), gpu(1, {0}, {{"MIG-a", "3g.40gb", 40192}, {"MIG-b", "1g.10gb", 9728}}),
       gpu(2, {})});
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[0].index, 0);
  EXPECT_TRUE(devices[0].nvlink_peers.empty()) << "its peer is no longer a whole GPU";
  EXPECT_EQ(devices[1].index, kMigIndexBase + 8);
  EXPECT_EQ(devices[1].uuid, "MIG-a");
  EXPECT_EQ(devices[1].model, "A100/3g.40gb");
  EXPECT_EQ(devices[1].memory_mib, 40192);
  EXPECT_EQ(devices[1].mig_parent, 1);
  EXPECT_EQ(devices[1].numa_node, 0);
  EXPECT_EQ(devices[2].index, kMigIndexBase + 9);
  EXPECT_EQ(devices[2].model, "A100/1g.10gb");
  EXPECT_EQ(physical_index(devices[2]), 1);
  EXPECT_EQ(devices[3].index, 2);
  EXPECT_EQ(physical_index(devices[3]), 2);
}

TEST(MigCaps, TheDriversCapabilityMinorsOfAMigDevice) {
  char tmpl[] = "/tmp/mig-caps-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::ofstream(dir + "/devices") << "Character devices:\n  1 mem\n195 nvidia\n"
                                     "238 nvidia-caps\n\nBlock devices:\n  8 sd\n";
  std::ofstream(dir + "/mig-minors") << "config 1\nmonitor 2\ngpu1/gi2/access 21\n"
                                        "gpu1/gi2/ci0/access 22\ngpu1/gi3/access 30\n";
  MigCaps caps = read_mig_caps(dir + "/devices", dir + "/mig-minors");
  EXPECT_EQ(caps.major, 238);
  EXPECT_EQ(caps.for_device(1, 2, 0), (std::vector<int>{21, 22}));
  EXPECT_TRUE(caps.for_device(1, 3, 0).empty()) << "no compute instance listed";
  EXPECT_TRUE(caps.for_device(1, -1, 0).empty()) << "instances unknown";
  MigCaps none = read_mig_caps(dir + "/no-such-file", dir + "/mig-minors");
  EXPECT_EQ(none.major, -1) << "no nvidia-caps major: no MIG on this host";
  std::filesystem::remove_all(dir);
}

TEST(MpsClientEnv, ThreadPercentageFromMilliAndMemoryLimitForDeviceZero) {
  MpsGpu g{"/d/mps/3/pipe", "/d/mps/3/log"};
  auto env = mps_client_env(g, 250, 10240);
  EXPECT_EQ(env["CUDA_MPS_PIPE_DIRECTORY"], "/d/mps/3/pipe");
  EXPECT_EQ(env["CUDA_MPS_LOG_DIRECTORY"], "/d/mps/3/log");
  EXPECT_EQ(env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "25");
  EXPECT_EQ(env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], "0=10240M");
  EXPECT_EQ(mps_client_env(g, 1, 0)["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "1") << "rounded up";
  EXPECT_EQ(mps_client_env(g, 999, 0)["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "100");
  EXPECT_EQ(mps_client_env(g, 500, 0).count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 0u);
}

class MpsDaemons : public ::testing::Test {
 protected:
  std::string root() const { return dir_ + "/mps"; }
  std::string control(int exit_code) const {
    std::string path = dir_ + "/control.sh";
    std::ofstream(path) << "#!/bin/sh\necho \"$* $CUDA_VISIBLE_DEVICES $CUDA_MPS_PIPE_DIRECTORY "
                           "$CUDA_MPS_LOG_DIRECTORY\" >> "
                        << dir_ << "/calls\nexit " << exit_code << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  std::string calls() const {
    std::ifstream in(dir_ + "/calls");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void SetUp() override {
    char tmpl[] = "/tmp/mps-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(MpsDaemons, OneDaemonPerWholeGpuWithItsOwnPipeAndLogDirs) {
  std::vector<Gpu> devices =
      offered_devices({gpu(0, {}), gpu(1, {}, {{"MIG-a", "3g.40gb", 40192}})});
  auto started = start_mps_daemons(control(0), root(), devices);
  ASSERT_TRUE(started.ok()) << started.error().message;
  ASSERT_EQ(started->size(), 1u) << "a MIG device gets no MPS daemon";
  EXPECT_EQ(started->at(0).pipe_dir, root() + "/0/pipe");
  EXPECT_EQ(calls(), "-d GPU-0 " + root() + "/0/pipe " + root() + "/0/log\n");
  struct stat st {};
  ASSERT_EQ(::stat((root() + "/0/pipe").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u) << "job users reach the pipes, and cannot write the dir";
}

TEST_F(MpsDaemons, AFailingDaemonIsReportedUnlessOneAlreadyServesThePipe) {
  auto failed = start_mps_daemons(control(3), root(), {gpu(0, {})});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("MPS on GPU 0: `" + control(3) + " -d` exited with code 3"),
            std::string::npos)
      << failed.error().message;
  auto missing = start_mps_daemons(dir_ + "/no-such-program", root(), {gpu(0, {})});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("the program was not found"), std::string::npos)
      << missing.error().message;
  // A daemon of an earlier agent holds the pipe: `-d` refuses, and that is fine.
  std::ofstream(root() + "/0/pipe/control") << "";
  EXPECT_TRUE(start_mps_daemons(control(3), root(), {gpu(0, {})}).ok());
}

}  // namespace
}  // namespace gpucloud::agent
