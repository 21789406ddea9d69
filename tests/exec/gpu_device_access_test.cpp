// GPU device confinement (docs/security.md, "GPU devices" and "MIG devices"), through the cgroup
// v1 devices controller and through the BPF device program on cgroup v2: a process in the
// job's cgroup opens device nodes of the NVIDIA driver's major (195) and of a stand-in for its
// MIG capability major. With no driver behind them, an allowed node fails with ENXIO and a
// refused one with EPERM.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "exec/process/bpf_devices.h"
#include "exec/process/cgroup.h"

namespace gpucloud::exec {
namespace {

constexpr int kCapsMajor = 500;  // an unused dynamic major standing in for nvidia-caps

class GpuDeviceAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "device cgroups need root";
    char tmpl[] = "/var/tmp/gpu-device-access-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    for (const auto& [name, major, minor] :
         std::vector<std::tuple<std::string, int, int>>{{"nvidia0", 195, 0},
                                                        {"nvidia1", 195, 1},
                                                        {"cap21", kCapsMajor, 21},
                                                        {"cap22", kCapsMajor, 22},
                                                        {"cap30", kCapsMajor, 30},
                                                        {"null", 1, 3}}) {
      std::string path = dir_ + "/" + name;
      ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)), 0) << path;
    }
  }
  void TearDown() override {
    if (!cgroup_.empty()) {
      ::rmdir(cgroup_.c_str());
      ::rmdir(std::filesystem::path(cgroup_).parent_path().c_str());  // when no other is left
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // Each node's fate when a process in `cgroup` opens it: "ok", "ENXIO" or "EPERM".
  std::map<std::string, std::string> opens_in(const std::string& cgroup) {
    cgroup_ = cgroup;
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::ofstream(cgroup + "/cgroup.procs") << ::getpid() << "\n";
      std::string out;
      for (const char* name : {"nvidia0", "nvidia1", "cap21", "cap22", "cap30", "null"}) {
        int fd = ::open((dir_ + "/" + name).c_str(), O_RDONLY);
        out += std::string(name) + "=" +
               (fd >= 0          ? "ok"
                : errno == ENXIO ? "ENXIO"
                : errno == EPERM ? "EPERM"
                                 : "other") +
               "\n";
        if (fd >= 0) ::close(fd);
      }
      (void)!::write(fds[1], out.data(), out.size());
      ::_exit(0);
    }
    ::close(fds[1]);
    std::string text;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, n);
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::map<std::string, std::string> seen;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      seen[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
    return seen;
  }
  // GPU 0 and the MIG device whose capabilities are 21 and 22.
  static GpuDeviceAccess mig_job() { return {{0}, kCapsMajor, {21, 22}}; }
  void expect_mig_job(std::map<std::string, std::string> seen) {
    EXPECT_EQ(seen["nvidia0"], "ENXIO") << "its GPU";
    EXPECT_EQ(seen["nvidia1"], "EPERM") << "another GPU";
    EXPECT_EQ(seen["cap21"], "ENXIO") << "its GPU instance";
    EXPECT_EQ(seen["cap22"], "ENXIO") << "its compute instance";
    EXPECT_EQ(seen["cap30"], "EPERM") << "another MIG device's instance";
    EXPECT_EQ(seen["null"], "ok") << "other drivers' devices are untouched";
  }
  std::string dir_, cgroup_;
};

TEST_F(GpuDeviceAccessTest, CgroupV1OpensOnlyTheJobsGpuAndMigCapabilities) {
  if (::access("/sys/fs/cgroup/devices/devices.allow", W_OK) != 0)
    GTEST_SKIP() << "no writable cgroup v1 devices controller";
  auto cgroup = create_gpu_devices_cgroup("/sys/fs/cgroup/devices", "gpucloud-test",
                                          "v1-" + std::to_string(::getpid()), mig_job());
  ASSERT_TRUE(cgroup.ok()) << cgroup.error().message;
  expect_mig_job(opens_in(*cgroup));
}

TEST_F(GpuDeviceAccessTest, TheBpfProgramOpensOnlyTheJobsGpuAndMigCapabilities) {
  auto root = find_unified_cgroup_root();
  if (!root || ::access(root->c_str(), W_OK) != 0) GTEST_SKIP() << "no writable cgroup v2";
  auto cgroup = create_gpu_devices_bpf_cgroup(*root, "gpucloud-test",
                                              "bpf-" + std::to_string(::getpid()), mig_job());
  ASSERT_TRUE(cgroup.ok()) << cgroup.error().message;
  expect_mig_job(opens_in(*cgroup));
}

TEST_F(GpuDeviceAccessTest, AJobWithoutMigDevicesOpensNoCapability) {
  auto root = find_unified_cgroup_root();
  if (!root || ::access(root->c_str(), W_OK) != 0) GTEST_SKIP() << "no writable cgroup v2";
  GpuDeviceAccess whole{{1}, kCapsMajor, {}};
  auto cgroup = create_gpu_devices_bpf_cgroup(*root, "gpucloud-test",
                                              "whole-" + std::to_string(::getpid()), whole);
  ASSERT_TRUE(cgroup.ok()) << cgroup.error().message;
  auto seen = opens_in(*cgroup);
  EXPECT_EQ(seen["nvidia1"], "ENXIO");
  EXPECT_EQ(seen["nvidia0"], "EPERM");
  for (const char* cap : {"cap21", "cap22", "cap30"}) EXPECT_EQ(seen[cap], "EPERM") << cap;
}

}  // namespace
}  // namespace gpucloud::exec
