// Every pod-list format of the Alibaba v2023 release loads: the full eleven columns, the
// five-column files (openb_pod_list_multigpu*.csv: no gpu_spec, qos or times) and files with
// gpu_spec but no times; missing optional columns take the defaults of docs/sim.md, a missing
// required column is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_run.h"
#include "sim/alibaba_trace.h"
#include "sim/trace.h"

namespace gpucloud::sim {
namespace {

const std::string kData = TEST_DATA_DIR;

TraceCluster small_cluster() {
  auto cluster = load_alibaba_nodes(kData + "/alibaba_nodes_small.csv");
  EXPECT_TRUE(cluster.ok()) << cluster.error().message;
  return std::move(*cluster);
}

TEST(AlibabaFormatsTest, FullFormatKeepsEveryColumn) {
  auto trace = load_trace(kData + "/alibaba_pods_small.csv");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_TRUE(trace->durations_known);
  ASSERT_EQ(trace->jobs.size(), 200u);
  // openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
  const TraceJob& j = trace->jobs[1];
  EXPECT_EQ(j.submit_ms, 427061000);
  EXPECT_EQ(j.duration_ms, (12902960 - 427061) * int64_t{1000});
  EXPECT_EQ(j.gpu_milli, 460);
}

TEST(AlibabaFormatsTest, FiveColumnFileTakesTheDefaults) {
  auto trace = load_trace(kData + "/alibaba_pods_short.csv");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 40u);
  EXPECT_FALSE(trace->durations_known);
  for (const TraceJob& j : trace->jobs) {
    EXPECT_EQ(j.submit_ms, 0) << j.id;  // no creation_time: all arrive at 0
    EXPECT_EQ(j.duration_ms, 0) << j.id;
    EXPECT_EQ(j.gpu_model, "") << j.id;                        // no gpu_spec: any model
    EXPECT_EQ(j.capacity_class, CapacityClass::kAny) << j.id;  // no qos: not best-effort
  }
  EXPECT_EQ(trace->jobs[17].gpus, 8);  // openb-pod-0017,88000,327680,8,1000
  auto pods = load_alibaba_pods(kData + "/alibaba_pods_short.csv", small_cluster());
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 40u);
  EXPECT_EQ((*pods)[1].request.gpu_milli, 460);
  EXPECT_EQ((*pods)[0].request.model_mask, 0u);
  EXPECT_EQ((*pods)[0].gpu_spec, "");
}

TEST(AlibabaFormatsTest, GpuSpecWithoutTimes) {
  TraceCluster cluster = small_cluster();
  auto pods = load_alibaba_pods(kData + "/alibaba_pods_spec.csv", cluster);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ((*pods)[2].gpu_spec, "V100M16|V100M32");
  uint64_t v100 = (uint64_t{1} << cluster.model_index("V100M16")) |
                  (uint64_t{1} << cluster.model_index("V100M32"));
  EXPECT_EQ((*pods)[2].request.model_mask, v100);
  auto trace = load_trace(kData + "/alibaba_pods_spec.csv");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->jobs[2].gpu_model, "V100M16|V100M32");
  EXPECT_FALSE(trace->durations_known);
}

TEST(AlibabaFormatsTest, MissingRequiredColumnIsNamed) {
  for (const char* column : {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}) {
    std::string header, row;
    for (const char* c : {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}) {
      if (std::string(c) == column) continue;
      header += std::string(header.empty() ? "" : ",") + c;
      row += std::string(row.empty() ? "" : ",") + (std::string(c) == "name" ? "p0" : "1");
    }
    auto table = CsvTable::parse(header + "\n" + row + "\n", "pods.csv");
    ASSERT_TRUE(table.ok());
    auto pods = load_alibaba_pods(*table, small_cluster());
    ASSERT_FALSE(pods.ok()) << column;
    EXPECT_NE(pods.error().message.find(std::string("missing column '") + column + "'"),
              std::string::npos)
        << pods.error().message;
    auto trace = load_alibaba_pod_trace(*table);
    ASSERT_FALSE(trace.ok()) << column;
    EXPECT_NE(trace.error().message.find(std::string("missing column '") + column + "'"),
              std::string::npos)
        << trace.error().message;
  }
}

TEST(AlibabaFormatsTest, CliFgdRunsOnTheFiveColumnFileAndReplayAsksForDurations) {
  std::string nodes = kData + "/alibaba_nodes_small.csv";
  std::string pods = kData + "/alibaba_pods_short.csv";
  auto fgd = testing::run_gpucloud("sim fgd --nodes " + nodes + " --pods " + pods +
                                   " --policy fgd --seeds 1 --json");
  EXPECT_EQ(fgd.status, 0) << fgd.text;
  auto replay = testing::run_gpucloud("sim replay --cluster " + nodes + " --trace " + pods);
  EXPECT_EQ(replay.status, 1) << replay.text;
  EXPECT_NE(replay.text.find("missing column 'deletion_time'"), std::string::npos) << replay.text;
}

}  // namespace
}  // namespace gpucloud::sim
