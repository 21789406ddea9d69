// NvmlBackend against the fake libnvidia-ml.so.1 of tests/fakes/.
#include "gpu/nvml/nvml_backend.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_env.h"

namespace gpucloud::gpu {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

class NvmlBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"FAKE_NVML_DEVICES", "FAKE_NVML_FAIL", "FAKE_NVML_FAIL_CODE", "FAKE_NVML_FAIL_INDEX",
          "FAKE_NVML_NVSWITCH", "FAKE_NVML_MIG", "FAKE_NVML_ECC", "FAKE_NVML_PERSISTENCE",
          "FAKE_NVML_RETIRED_PENDING", "FAKE_NVML_REMAP_FAILURE"}) {
      unsetenv(name);
    }
    ASSERT_FALSE(sysfs_.path().empty());
  }

  // The backend over a fake library, reading NUMA nodes from an empty sysfs unless told.
  std::unique_ptr<NvmlBackend> open(const std::string& library = FAKE_NVML_PATH) {
    GpuBackendConfig config;
    config.nvml_library = library;
    auto backend = NvmlBackend::create(config, NvmlOptions{sysfs_.path().string()});
    EXPECT_TRUE(backend.ok()) << backend.error().message;
    return backend.ok() ? std::move(backend).value() : nullptr;
  }

  std::vector<Gpu> discover(const std::string& library = FAKE_NVML_PATH) {
    auto backend = open(library);
    if (!backend) return {};
    auto gpus = backend->discover();
    EXPECT_TRUE(gpus.ok()) << gpus.error().message;
    return gpus.ok() ? *gpus : std::vector<Gpu>{};
  }

  std::string discover_error() {
    auto backend = open();
    if (!backend) return "";
    auto gpus = backend->discover();
    EXPECT_FALSE(gpus.ok());
    return gpus.ok() ? "" : gpus.error().message;
  }

  ScopedEnv env_;
  TempDir sysfs_;
};

TEST_F(NvmlBackendTest, ReadsEachGpusHealthAndLeavesWhatTheDriverLacksUnknown) {
  env_.set("FAKE_NVML_ECC", "2:3");
  env_.set("FAKE_NVML_RETIRED_PENDING", "1");
  env_.set("FAKE_NVML_REMAP_FAILURE", "3");
  auto backend = open();
  ASSERT_TRUE(backend);
  auto health = backend->health();
  ASSERT_TRUE(health.ok()) << health.error().message;
  ASSERT_EQ(health->size(), 4u);
  for (const auto& h : *health) {
    EXPECT_EQ(h.persistence_mode, 1);
    EXPECT_EQ(h.ecc_uncorrected_volatile, h.index == 2 ? 3 : 0) << h.index;
    EXPECT_EQ(h.retired_pages_pending, h.index == 1 ? 1 : 0) << h.index;
    EXPECT_EQ(h.remapped_rows_failure, h.index == 3 ? 1 : 0) << h.index;
    EXPECT_EQ(h.remapped_rows_pending, 0);
  }
  auto minimal = open(FAKE_NVML_MINIMAL_PATH);
  ASSERT_TRUE(minimal);
  auto unknown = minimal->health();
  ASSERT_TRUE(unknown.ok());
  for (const auto& h : *unknown) {
    EXPECT_EQ(h.persistence_mode, -1);
    EXPECT_EQ(h.ecc_uncorrected_volatile, -1);
    EXPECT_EQ(h.remapped_rows_failure, -1);
  }
}

TEST_F(NvmlBackendTest, DiscoversTheDefaultDevices) {
  auto gpus = discover();
  ASSERT_EQ(gpus.size(), 4u);
  const char* bus_ids[] = {"00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0",
                           "00000000:4E:00.0"};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(gpus[i].index, i);
    EXPECT_EQ(gpus[i].uuid, "GPU-fa4e000" + std::to_string(i) + "-0000-4000-8000-00000000beef");
    EXPECT_EQ(gpus[i].name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(gpus[i].model, "A100");
    EXPECT_EQ(gpus[i].memory_mib, 81920);
    EXPECT_EQ(gpus[i].pci_bus_id, bus_ids[i]);
    EXPECT_EQ(gpus[i].numa_node, i < 2 ? 0 : 1);
  }
}

TEST_F(NvmlBackendTest, NvLinkPairsAreFoundAndSymmetric) {
  auto gpus = discover();
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_EQ(gpus[0].nvlink_peers, std::vector<int>{1});
  EXPECT_EQ(gpus[1].nvlink_peers, std::vector<int>{0});
  EXPECT_EQ(gpus[2].nvlink_peers, std::vector<int>{3});
  EXPECT_EQ(gpus[3].nvlink_peers, std::vector<int>{2});
}

TEST_F(NvmlBackendTest, AnUnpairedGpuHasNoPeers) {
  env_.set("FAKE_NVML_DEVICES", "3");
  auto gpus = discover();
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[1].nvlink_peers, std::vector<int>{0});
  EXPECT_TRUE(gpus[2].nvlink_peers.empty());
}

TEST_F(NvmlBackendTest, GpusOnNvSwitchesAreAllPeers) {
  env_.set("FAKE_NVML_DEVICES", "8");
  env_.set("FAKE_NVML_NVSWITCH", "1");
  auto gpus = discover();
  ASSERT_EQ(gpus.size(), 8u);
  for (const auto& gpu : gpus) {
    std::vector<int> others;
    for (int j = 0; j < 8; ++j) {
      if (j != gpu.index) others.push_back(j);
    }
    EXPECT_EQ(gpu.nvlink_peers, others) << "GPU " << gpu.index;
  }
}

TEST_F(NvmlBackendTest, ReportsMigDevicesOfTheGpuWithMigOn) {
  auto gpus = discover();
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_TRUE(gpus[0].mig.empty());
  EXPECT_TRUE(gpus[2].mig.empty());
  ASSERT_EQ(gpus[1].mig.size(), 2u);
  EXPECT_EQ(gpus[1].mig[0].uuid, "MIG-fa4e0001-0000-4000-8000-00000000cafe");
  EXPECT_EQ(gpus[1].mig[1].uuid, "MIG-fa4e0001-0001-4000-8000-00000000cafe");
  EXPECT_EQ(gpus[1].mig[0].gpu_instance, 1);
  EXPECT_EQ(gpus[1].mig[1].gpu_instance, 2);
  EXPECT_EQ(gpus[1].mig[1].compute_instance, 0);
  for (const auto& mig : gpus[1].mig) {
    EXPECT_EQ(mig.profile, "3g.40gb");
    EXPECT_EQ(mig.memory_mib, 40192);
  }
}

TEST_F(NvmlBackendTest, NoMigDevicesWhenMigIsOff) {
  env_.set("FAKE_NVML_MIG", "-1");
  for (const auto& gpu : discover()) EXPECT_TRUE(gpu.mig.empty()) << "GPU " << gpu.index;
}

TEST_F(NvmlBackendTest, ReportsDriverAndCudaVersions) {
  auto backend = open();
  ASSERT_TRUE(backend);
  EXPECT_EQ(backend->kind(), "nvml");
  EXPECT_EQ(backend->driver_version(), "550.54.15");
  EXPECT_EQ(backend->cuda_version(), "12.4");
  auto count = backend->device_count();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 4);
}

TEST_F(NvmlBackendTest, NoDevicesIsAnEmptyList) {
  env_.set("FAKE_NVML_DEVICES", "0");
  auto backend = open();
  ASSERT_TRUE(backend);
  auto gpus = backend->discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().message;
  EXPECT_TRUE(gpus->empty());
}

TEST_F(NvmlBackendTest, AFailedCallIsNamedWithNvmlsErrorString) {
  env_.set("FAKE_NVML_FAIL", "nvmlDeviceGetUUID");
  env_.set("FAKE_NVML_FAIL_INDEX", "3");
  EXPECT_EQ(discover_error(), "nvmlDeviceGetUUID(index 3) failed: GPU is lost");
}

TEST_F(NvmlBackendTest, AFailedMigCallNamesTheMigDevice) {
  env_.set("FAKE_NVML_FAIL", "nvmlDeviceGetMigDeviceHandleByIndex");
  EXPECT_EQ(discover_error(),
            "nvmlDeviceGetMigDeviceHandleByIndex(index 1, MIG 0) failed: GPU is lost");
}

TEST_F(NvmlBackendTest, AFailedCountIsNamed) {
  env_.set("FAKE_NVML_FAIL", "nvmlDeviceGetCount_v2");
  env_.set("FAKE_NVML_FAIL_CODE", "999");
  EXPECT_EQ(discover_error(), "nvmlDeviceGetCount_v2 failed: Unknown Error");
}

TEST_F(NvmlBackendTest, UnsupportedOptionalCallsDegrade) {
  env_.set("FAKE_NVML_FAIL", "nvmlDeviceGetNumaNodeId");
  env_.set("FAKE_NVML_FAIL_CODE", "3");  // NVML_ERROR_NOT_SUPPORTED, as on most x86 servers
  for (const auto& gpu : discover()) EXPECT_EQ(gpu.numa_node, -1) << "GPU " << gpu.index;
}

TEST_F(NvmlBackendTest, UnreadableNvLinksAreTreatedAsAbsent) {
  env_.set("FAKE_NVML_FAIL", "nvmlDeviceGetNvLinkState");
  auto gpus = discover();
  ASSERT_EQ(gpus.size(), 4u);
  for (const auto& gpu : gpus) EXPECT_TRUE(gpu.nvlink_peers.empty()) << "GPU " << gpu.index;
}

TEST_F(NvmlBackendTest, SysfsNumaNodeComesFirst) {
  env_.set("FAKE_NVML_DEVICES", "9");  // GPU 8 is on PCI domain 1: "00000001:07:00.0"
  auto devices = sysfs_.path() / "bus/pci/devices";
  for (auto [name, node] :
       {std::pair{"0000:47:00.0", "3"}, {"0001:07:00.0", "5"}, {"0000:0f:00.0", "-1"}}) {
    std::filesystem::create_directories(devices / name);
    std::ofstream(devices / name / "numa_node") << node << "\n";
  }
  auto gpus = discover();
  ASSERT_EQ(gpus.size(), 9u);
  EXPECT_EQ(gpus[0].numa_node, 0);  // no sysfs entry: NVML's answer
  EXPECT_EQ(gpus[1].numa_node, 0);  // sysfs says -1 (unknown): NVML's answer
  EXPECT_EQ(gpus[2].numa_node, 3);
  EXPECT_EQ(gpus[8].pci_bus_id, "00000001:07:00.0");
  EXPECT_EQ(gpus[8].numa_node, 5);
}

TEST_F(NvmlBackendTest, TelemetryReadsEveryGpu) {
  auto backend = open();
  ASSERT_TRUE(backend);
  auto readings = backend->telemetry();
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  ASSERT_EQ(readings->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const auto& t = (*readings)[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(t.index, i);
    EXPECT_EQ(t.utilization_pct, i == 1 ? 0 : i * 10);  // GPU 1 has MIG on: not supported
    EXPECT_EQ(t.memory_used_mib, (i + 1) * 1024);
    EXPECT_EQ(t.temperature_c, 30 + i);
    EXPECT_EQ(t.power_w, 60 + 10 * i);
    EXPECT_EQ(t.sm_clock_mhz, 1410 - 10 * i);
    EXPECT_EQ(t.memory_used_mib + t.memory_free_mib, 80 * 1024);
    EXPECT_EQ(t.last_xid, 0);
  }
}

TEST_F(NvmlBackendTest, XidErrorsAreReadFromNvmlEvents) {
  env_.set("FAKE_NVML_XID", "2:79");  // 79: the GPU has fallen off the bus
  auto backend = open();
  ASSERT_TRUE(backend);
  auto readings = backend->telemetry();
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  EXPECT_EQ((*readings)[2].last_xid, 79);
  EXPECT_EQ((*readings)[2].xid_count, 1);
  EXPECT_EQ((*readings)[0].last_xid, 0);
  auto later = backend->telemetry();  // the error is remembered, not counted twice
  ASSERT_TRUE(later.ok());
  EXPECT_EQ((*later)[2].last_xid, 79);
  EXPECT_EQ((*later)[2].xid_count, 1);
}

TEST_F(NvmlBackendTest, AFailedTelemetryCallIsNamed) {
  env_.set("FAKE_NVML_FAIL", "nvmlDeviceGetTemperature");
  env_.set("FAKE_NVML_FAIL_INDEX", "2");
  auto backend = open();
  ASSERT_TRUE(backend);
  auto readings = backend->telemetry();
  ASSERT_FALSE(readings.ok());
  EXPECT_EQ(readings.error().message, "nvmlDeviceGetTemperature(index 2) failed: GPU is lost");
}

TEST_F(NvmlBackendTest, AnOldLibraryWithoutOptionalCallsDegrades) {
  auto backend = open(FAKE_NVML_MINIMAL_PATH);
  ASSERT_TRUE(backend);
  EXPECT_EQ(backend->cuda_version(), "12.4");  // from nvmlSystemGetCudaDriverVersion
  auto gpus = backend->discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 4u);
  for (const auto& gpu : *gpus) {
    EXPECT_EQ(gpu.numa_node, -1);
    EXPECT_TRUE(gpu.nvlink_peers.empty());
    EXPECT_TRUE(gpu.mig.empty());
    EXPECT_EQ(gpu.model, "A100");
  }
  auto readings = backend->telemetry();
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  EXPECT_EQ((*readings)[1].utilization_pct, 10);
  EXPECT_EQ((*readings)[1].sm_clock_mhz, 0);  // no nvmlDeviceGetClockInfo
}

TEST_F(NvmlBackendTest, AMissingLibraryIsAClearError) {
  GpuBackendConfig config;
  config.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto backend = NvmlBackend::create(config);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(backend.error().message.find("dlopen /nonexistent/libnvidia-ml.so.1: "),
            std::string::npos)
      << backend.error().message;
  EXPECT_NE(backend.error().message.find("No such file"), std::string::npos)
      << backend.error().message;
}

TEST_F(NvmlBackendTest, ALibraryThatIsNotNvmlIsAClearError) {
  GpuBackendConfig config;
  config.nvml_library = "libm.so.6";
  auto backend = NvmlBackend::create(config);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().message,
            "libm.so.6 does not export nvmlInit_v2; the NVIDIA driver is too old or this is not "
            "libnvidia-ml");
}

TEST_F(NvmlBackendTest, TheFirstInitFailureIsRemembered) {
  // A copy at a path of its own, so that this failure is remembered for that path only.
  TempDir dir;
  auto copy = dir.path() / "libnvidia-ml.so.1";
  std::filesystem::copy_file(FAKE_NVML_PATH, copy);
  GpuBackendConfig config;
  config.nvml_library = copy.string();
  {
    ScopedEnv fail("FAKE_NVML_FAIL", "nvmlInit_v2");
    ScopedEnv code("FAKE_NVML_FAIL_CODE", "9");
    auto backend = NvmlBackend::create(config);
    ASSERT_FALSE(backend.ok());
    EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
    EXPECT_EQ(backend.error().message, "nvmlInit_v2 failed: Driver Not Loaded");
  }
  auto again = NvmlBackend::create(config);  // would succeed now, but is not tried again
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, "nvmlInit_v2 failed: Driver Not Loaded");
}

}  // namespace
}  // namespace gpucloud::gpu
