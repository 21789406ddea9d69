// SimulatedBackend: the GPUs, topology, UUIDs and telemetry it makes up.
#include "gpu/simulated/simulated_backend.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <set>

namespace gpucloud::gpu {
namespace {

std::vector<Gpu> discover(const std::string& spec, const std::string& node = "node-a") {
  GpuBackendConfig config;
  config.kind = "simulated";
  config.sim_spec = spec;
  config.sim_node_name = node;
  auto backend = SimulatedBackend::create(config);
  EXPECT_TRUE(backend.ok()) << backend.error().message;
  if (!backend.ok()) return {};
  auto gpus = (*backend)->discover();
  EXPECT_TRUE(gpus.ok());
  return gpus.ok() ? *gpus : std::vector<Gpu>{};
}

std::vector<int> range_except(int first, int last, int skip) {
  std::vector<int> out;
  for (int i = first; i < last; ++i) {
    if (i != skip) out.push_back(i);
  }
  return out;
}

void expect_symmetric(const std::vector<Gpu>& gpus) {
  for (const auto& gpu : gpus) {
    for (int peer : gpu.nvlink_peers) {
      const auto& back = gpus.at(peer).nvlink_peers;
      EXPECT_NE(std::find(back.begin(), back.end(), gpu.index), back.end())
          << gpu.index << " -> " << peer << " is not mirrored";
    }
  }
}

TEST(SimulatedBackend, EightA100sAreAFullNvLinkMeshOnTwoNumaNodes) {
  auto gpus = discover("8xA100-80GB");
  ASSERT_EQ(gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(gpus[i].index, i);
    EXPECT_EQ(gpus[i].name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(gpus[i].model, "A100");
    EXPECT_EQ(gpus[i].memory_mib, 81920);
    EXPECT_EQ(gpus[i].nvlink_peers, range_except(0, 8, i));
    EXPECT_EQ(gpus[i].numa_node, i < 4 ? 0 : 1);
    EXPECT_TRUE(gpus[i].mig.empty());
  }
}

TEST(SimulatedBackend, SixteenH100sAreTwoBoardsOfEight) {
  auto gpus = discover("16xH100-80GB");
  ASSERT_EQ(gpus.size(), 16u);
  EXPECT_EQ(gpus[3].nvlink_peers, range_except(0, 8, 3));
  EXPECT_EQ(gpus[12].nvlink_peers, range_except(8, 16, 12));
  EXPECT_EQ(gpus[7].numa_node, 0);
  EXPECT_EQ(gpus[8].numa_node, 1);
  expect_symmetric(gpus);
}

TEST(SimulatedBackend, MigDevicesHaveUniqueUuidsAndTheirProfilesMemory) {
  auto gpus = discover("2xA100-80GB:mig=3g.40gb+3g.40gb", "node-a");
  ASSERT_EQ(gpus.size(), 2u);
  std::set<std::string> uuids;
  for (const auto& g : gpus) {
    ASSERT_EQ(g.mig.size(), 2u);
    for (const auto& m : g.mig) {
      EXPECT_EQ(m.uuid.rfind("MIG-", 0), 0u) << m.uuid;
      EXPECT_EQ(m.profile, "3g.40gb");
      EXPECT_EQ(m.memory_mib, 40960);
      uuids.insert(m.uuid);
    }
  }
  EXPECT_EQ(uuids.size(), 4u);
  EXPECT_NE(discover("2xA100-80GB:mig=3g.40gb+3g.40gb", "node-b")[0].mig[0].uuid,
            gpus[0].mig[0].uuid);
}

TEST(SimulatedBackend, V100sArePairs) {
  auto gpus = discover("5xV100");
  ASSERT_EQ(gpus.size(), 5u);
  EXPECT_EQ(gpus[0].nvlink_peers, std::vector<int>{1});
  EXPECT_EQ(gpus[1].nvlink_peers, std::vector<int>{0});
  EXPECT_EQ(gpus[2].nvlink_peers, std::vector<int>{3});
  EXPECT_EQ(gpus[3].nvlink_peers, std::vector<int>{2});
  EXPECT_TRUE(gpus[4].nvlink_peers.empty());
}

TEST(SimulatedBackend, PcieModelsHaveNoNvLink) {
  for (const char* spec : {"4xT4", "4xL4", "2xA10G", "2xG2"}) {
    for (const auto& gpu : discover(spec)) EXPECT_TRUE(gpu.nvlink_peers.empty()) << spec;
  }
}

TEST(SimulatedBackend, MixedSpecsLinkWithinAPartOnly) {
  auto gpus = discover("2xH100-80GB,2xL4");
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_EQ(gpus[0].model, "H100");
  EXPECT_EQ(gpus[0].nvlink_peers, std::vector<int>{1});
  EXPECT_EQ(gpus[1].nvlink_peers, std::vector<int>{0});
  EXPECT_EQ(gpus[2].model, "L4");
  EXPECT_EQ(gpus[2].index, 2);
  EXPECT_TRUE(gpus[2].nvlink_peers.empty());
  EXPECT_EQ(gpus[1].numa_node, 0);
  EXPECT_EQ(gpus[2].numa_node, 1);
}

TEST(SimulatedBackend, ASingleGpuIsOnNumaNodeZero) {
  auto gpus = discover("A100");
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].numa_node, 0);
  EXPECT_TRUE(gpus[0].nvlink_peers.empty());
}

TEST(SimulatedBackend, UuidsLookRealAreStableAndDifferAcrossNodes) {
  std::regex uuid("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  auto a = discover("64xT4", "node-a");
  auto a_again = discover("64xT4", "node-a");
  auto b = discover("64xT4", "node-b");
  ASSERT_EQ(a.size(), 64u);
  ASSERT_EQ(b.size(), 64u);
  std::set<std::string> seen;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(std::regex_match(a[i].uuid, uuid)) << a[i].uuid;
    EXPECT_EQ(a[i].uuid, a_again[i].uuid);
    seen.insert(a[i].uuid);
    seen.insert(b[i].uuid);
  }
  EXPECT_EQ(seen.size(), 128u) << "UUIDs repeat within or across nodes";
}

TEST(SimulatedBackend, PciBusIdsArePlausibleAndDistinct) {
  std::regex bus_id("[0-9A-F]{8}:[0-9A-F]{2}:00\\.0");
  std::set<std::string> seen;
  for (const auto& gpu : discover("64xT4")) {
    EXPECT_TRUE(std::regex_match(gpu.pci_bus_id, bus_id)) << gpu.pci_bus_id;
    seen.insert(gpu.pci_bus_id);
  }
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_EQ(discover("1xT4")[0].pci_bus_id, "00000000:07:00.0");
}

TEST(SimulatedBackend, TelemetryIsIdleAndVersionsAreEmpty) {
  GpuBackendConfig config;
  config.sim_spec = "2xH100-80GB,1xT4";
  config.sim_node_name = "n";
  auto backend = SimulatedBackend::create(config);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_EQ((*backend)->kind(), "simulated");
  EXPECT_EQ((*backend)->spec(), "2xH100-80GB,1xT4");
  EXPECT_EQ((*backend)->driver_version(), "");
  EXPECT_EQ((*backend)->cuda_version(), "");
  auto readings = (*backend)->telemetry();
  ASSERT_TRUE(readings.ok());
  ASSERT_EQ(readings->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const auto& t = (*readings)[i];
    EXPECT_EQ(t.index, i);
    EXPECT_EQ(t.utilization_pct, 0);
    EXPECT_EQ(t.memory_used_mib, 0);
    EXPECT_EQ(t.temperature_c, 30);
  }
  EXPECT_EQ((*readings)[0].power_w, 70);
  EXPECT_EQ((*readings)[2].power_w, 10);
}

TEST(SimulatedBackend, UtilisationIsTheLoadOfTheProcessesBoundToEachGpu) {
  GpuBackendConfig config;
  config.sim_spec = "2xA100-80GB";
  config.sim_node_name = "n";
  auto backend = SimulatedBackend::create(config);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_TRUE((*backend)->utilization_from_processes());
  (*backend)->set_process_load({{1, 100}});
  auto busy = (*backend)->telemetry();
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ((*busy)[0].utilization_pct, 0);
  EXPECT_EQ((*busy)[1].utilization_pct, 100);
  EXPECT_GT((*busy)[1].power_w, (*busy)[0].power_w);
  EXPECT_GT((*busy)[1].temperature_c, (*busy)[0].temperature_c);
  EXPECT_GT((*busy)[1].sm_clock_mhz, (*busy)[0].sm_clock_mhz);
  EXPECT_EQ((*busy)[1].memory_free_mib, 80 * 1024);  // nothing is really allocated
  (*backend)->set_process_load({});                  // the job ended or sleeps
  auto idle = (*backend)->telemetry();
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ((*idle)[1].utilization_pct, 0);
  EXPECT_EQ((*idle)[1].power_w, (*idle)[0].power_w);
}

TEST(SimulatedBackend, NoNodeNameMeansTheHostname) {
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  GpuBackendConfig config;
  auto backend = SimulatedBackend::create(config);
  ASSERT_TRUE(backend.ok());
  EXPECT_EQ((*backend)->node_name(), host);
  EXPECT_EQ((*backend)->spec(), "8xA100-80GB");
  EXPECT_EQ(discover("8xA100-80GB", host)[5].uuid, (*(*backend)->discover())[5].uuid);
}

TEST(SimulatedBackend, ABadSpecIsAnInvalidArgument) {
  GpuBackendConfig config;
  config.sim_spec = "8xA100;2xT4";
  auto backend = SimulatedBackend::create(config);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(backend.error().message.find("may only contain"), std::string::npos);
}

}  // namespace
}  // namespace gpucloud::gpu
