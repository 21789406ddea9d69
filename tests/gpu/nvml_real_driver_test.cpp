// NvmlBackend against the real libnvidia-ml.so.1, on machines that have an NVIDIA driver.
// Skipped, loudly, elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "gpu/nvml/nvml_backend.h"

namespace gpucloud::gpu {
namespace {

TEST(RealDriver, DiscoversGpusAndReadsTelemetry) {
  GpuBackendConfig config;  // the real "libnvidia-ml.so.1", found the way dlopen finds it
  auto backend = NvmlBackend::create(config);
  if (!backend.ok()) {
    std::cerr << "\n*** RealDriver SKIPPED: no usable NVIDIA driver on this machine ("
              << backend.error().message << "). The NVML backend was tested only against the "
              << "fake library. ***\n\n";
    GTEST_SKIP() << "no NVIDIA driver: " << backend.error().message;
  }
  std::cout << "driver " << (*backend)->driver_version() << ", CUDA " << (*backend)->cuda_version()
            << "\n";
  EXPECT_FALSE((*backend)->driver_version().empty());
  auto gpus = (*backend)->discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().message;
  ASSERT_GE(gpus->size(), 1u) << "the driver loads but reports no GPU";
  for (const auto& gpu : *gpus) {
    std::cout << "GPU " << gpu.index << ": " << gpu.name << " (" << gpu.model << "), " << gpu.uuid
              << ", " << gpu.memory_mib << " MiB, PCI " << gpu.pci_bus_id << ", NUMA "
              << gpu.numa_node << ", " << gpu.nvlink_peers.size() << " NVLink peers, "
              << gpu.mig.size() << " MIG devices\n";
    for (const auto& mig : gpu.mig) {
      std::cout << "  MIG " << mig.profile << " " << mig.uuid << " " << mig.memory_mib << " MiB\n";
    }
    EXPECT_EQ(gpu.uuid.rfind("GPU-", 0), 0u) << gpu.uuid;
    EXPECT_FALSE(gpu.name.empty());
    EXPECT_FALSE(gpu.model.empty());
    EXPECT_GT(gpu.memory_mib, 0);
    EXPECT_FALSE(gpu.pci_bus_id.empty());
    for (int peer : gpu.nvlink_peers) {
      ASSERT_GE(peer, 0);
      ASSERT_LT(peer, static_cast<int>(gpus->size()));
      const auto& back = (*gpus)[peer].nvlink_peers;
      EXPECT_NE(std::find(back.begin(), back.end(), gpu.index), back.end()) << "not symmetric";
    }
  }
  auto readings = (*backend)->telemetry();
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  ASSERT_EQ(readings->size(), gpus->size());
  for (const auto& t : *readings) {
    std::cout << "GPU " << t.index << ": " << t.utilization_pct << " % busy, " << t.memory_used_mib
              << " MiB used, " << t.temperature_c << " C, " << t.power_w << " W\n";
    EXPECT_GE(t.utilization_pct, 0);
    EXPECT_LE(t.utilization_pct, 100);
    EXPECT_GE(t.memory_used_mib, 0);
  }
}

}  // namespace
}  // namespace gpucloud::gpu
