// The driver's files a GPU container gets (docs/containers.md, "GPUs"), found in a directory
// laid out as the NVIDIA driver installs itself, and the CDI spec that lists them.
#include "agent/driver_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/gpu_devices.h"

namespace gpucloud::agent {
namespace {

namespace fs = std::filesystem;

class DriverFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/driver-files-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    fs::create_directories(lib());
    fs::create_directories(bin());
    for (const char* f : {"libcuda.so.550.54.15", "libnvidia-ml.so.550.54.15",
                          "libnvidia-ptxjitcompiler.so.550.54.15", "libcuda.so.535.104.05",
                          "libnvidia-other.so.550.54.15", "libz.so.1"})
      std::ofstream(lib() + "/" + f) << "x";
    fs::create_symlink("libcuda.so.550.54.15", lib() + "/libcuda.so.1");
    // A soname link left by an older driver: not this version's.
    fs::create_symlink("libcuda.so.535.104.05", lib() + "/libnvidia-ml.so.1");
    std::ofstream(bin() + "/nvidia-smi") << "x";
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string lib() const { return root_ + "/lib"; }
  std::string bin() const { return root_ + "/bin"; }
  DriverSearch search() const { return {{root_ + "/none", lib()}, {bin()}}; }
  std::string root_;
};

TEST_F(DriverFiles, TheRunningVersionsLibrariesTheirSonameLinksAndTools) {
  auto files = find_driver_files("550.54.15", search());
  EXPECT_EQ(files, (std::vector<std::string>{
                       lib() + "/libcuda.so.550.54.15", lib() + "/libcuda.so.1",
                       lib() + "/libnvidia-ml.so.550.54.15",
                       lib() + "/libnvidia-ptxjitcompiler.so.550.54.15", bin() + "/nvidia-smi"}));
  EXPECT_TRUE(find_driver_files("", search()).empty()) << "no driver, no files";
  auto older = find_driver_files("535.104.05", search());
  ASSERT_FALSE(older.empty());
  EXPECT_EQ(older.front(), lib() + "/libcuda.so.535.104.05");
}

TEST_F(DriverFiles, TheCdiSpecMountsThemReadOnlyAtTheSamePaths) {
  GpuDevices devices{root_, find_driver_files("550.54.15", search())};
  ASSERT_TRUE(write_cdi_spec(devices, {0}, root_ + "/cdi").ok());
  std::ifstream in(root_ + "/cdi/gpucloud-nvidia.json");
  auto spec = nlohmann::json::parse(in);
  const auto& mounts = spec["containerEdits"]["mounts"];
  ASSERT_EQ(mounts.size(), devices.driver_files.size());
  EXPECT_EQ(mounts[0]["hostPath"], lib() + "/libcuda.so.550.54.15");
  EXPECT_EQ(mounts[0]["containerPath"], lib() + "/libcuda.so.550.54.15");
  EXPECT_EQ(mounts[0]["options"][0], "ro");
}

}  // namespace
}  // namespace gpucloud::agent
