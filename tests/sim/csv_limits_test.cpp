// Limits of the CSV and YAML loaders of traces and clusters: oversized input is refused with
// file:line and the limit, numbers out of range name their column.
#include <gtest/gtest.h>

#include <string>

#include "sim/cluster.h"
#include "sim/csv_table.h"
#include "sim/trace.h"

namespace gpucloud::sim {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string trace_error(const std::string& text) {
  auto t = CsvTable::parse(text, "t.csv");
  if (!t.ok()) return t.error().message;
  auto tr = load_canonical_trace(*t);
  return tr.ok() ? "" : tr.error().message;
}

TEST(CsvLimits, AnOverlongLineIsRefusedWithItsLineNumber) {
  std::string text = "submit_s,duration_s\n0,1\n0," + std::string(70'000, '1') + "\n";
  auto t = CsvTable::parse(text, "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "t.csv:3:1: the line is 70002 bytes long; the limit is 65536");
}

TEST(CsvLimits, TooManyFieldsOnALineAreRefused) {
  auto t = CsvTable::parse("submit_s,duration_s\n" + std::string(300, ',') + "\n", "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "t.csv:2:1: more than 256 fields on one line");
}

TEST(CsvLimits, TooManyRecordsAreRefused) {
  CsvLimits limits;
  limits.max_records = 2;
  auto t = CsvTable::parse("a,b\n1,2\n3,4\n\n5,6\n", "t.csv", limits);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "t.csv:5:1: more than 2 records; split the file");
}

TEST(CsvLimits, TooLargeATextIsRefused) {
  CsvLimits limits;
  limits.max_bytes = 10;
  auto t = CsvTable::parse("submit_s,duration_s\n", "t.csv", limits);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kTooLarge);
  EXPECT_TRUE(contains(t.error().message, "20 bytes is above the limit of 10"))
      << t.error().message;
}

TEST(CsvLimits, HugeNumbersNameTheirColumnAndTheLargestAllowed) {
  std::string m = trace_error("submit_s,duration_s,memory_mib\n0,1,99999999999999999999999\n");
  EXPECT_EQ(m,
            "t.csv:2:5: column 'memory_mib': 99999999999999999999999 is out of range; the largest "
            "allowed is 1099511627776");
  m = trace_error("submit_s,duration_s,cpu_milli\n0,1,9223372036854775807\n");
  EXPECT_TRUE(contains(m, "t.csv:2:5: column 'cpu_milli': 9223372036854775807 is out of range"))
      << m;
  m = trace_error("submit_s,duration_s,priority\n0,1,99999999999\n");
  EXPECT_TRUE(contains(m, "column 'priority': 99999999999 is out of range")) << m;
  m = trace_error("submit_s,duration_s\n1e400,1\n");
  EXPECT_TRUE(contains(m, "t.csv:2:1: column 'submit_s': '1e400' is not a number of seconds")) << m;
}

TEST(CsvLimits, AlibabaTimesTooLargeForMillisecondsAreRefused) {
  auto t = CsvTable::parse(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,creation_time,deletion_time,"
      "scheduled_time\np,1,1,0,0,,LS,9223372036854775807,9223372036854775807,\n",
      "pods.csv");
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto tr = load_alibaba_pod_trace(*t);
  ASSERT_FALSE(tr.ok());
  EXPECT_TRUE(contains(tr.error().message,
                       "column 'creation_time': 9223372036854775807 is out of "
                       "range"))
      << tr.error().message;
}

TEST(AlibabaPodTrace, DuplicateNamesAreRefusedLikeDuplicateIds) {
  // Found by fuzz_trace_csv: the pod list took two pods of one name, whose canonical rewrite
  // (sim gen) then failed to load.
  auto t = CsvTable::parse(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,creation_time,deletion_time,"
      "scheduled_time\np,1,1,0,0,,LS,0,1,\np,1,1,0,0,,LS,0,1,\n",
      "pods.csv");
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto tr = load_alibaba_pod_trace(*t);
  ASSERT_FALSE(tr.ok());
  EXPECT_EQ(tr.error().message,
            "pods.csv:3:1: column 'name': 'p' is also the name of line 2; names must be unique");
}

TEST(AlibabaPodTrace, CpuAndTimesHaveTheLimitsOfACanonicalTrace) {
  // Found by fuzz_trace_csv: a pod of 6,002 CPUs loaded, but the trace sim gen wrote from it
  // did not.
  auto t = CsvTable::parse(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,creation_time,deletion_time,"
      "scheduled_time\np,6002018,1,0,0,,LS,0,1,\nq,1,1,0,0,,LS,0,1000000000001,\n",
      "pods.csv");
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto tr = load_alibaba_pod_trace(*t);
  ASSERT_FALSE(tr.ok());
  EXPECT_EQ(tr.error().message,
            "pods.csv:2:3: column 'cpu_milli': 6002018 is out of range; the largest allowed is "
            "1024000");
}

TEST(CsvLimits, ClusterNumbersOutOfRangeNameTheirColumn) {
  auto t = CsvTable::parse(
      "name,gpus,gpu_model,gpu_memory_mib,cpu_milli,memory_mib,labels\n"
      "n1,1,A100,1,9223372036854775807,1,\n",
      "c.csv");
  ASSERT_TRUE(t.ok());
  auto c = load_canonical_cluster(*t);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.error().message, "c.csv:2:13: column 'cpu_milli'")) << c.error().message;
}

TEST(ClusterYamlLimits, DeepNestingIsRefusedBeforeParsing) {
  auto c = load_cluster_yaml("nodes: " + std::string(100'000, '['), "c.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.error().message, "c.yaml:1:")) << c.error().message;
  EXPECT_TRUE(contains(c.error().message, "deeper than 64")) << c.error().message;
}

TEST(ClusterYamlLimits, CountsBeyondTheNodeLimitAreRefused) {
  std::string text = "nodes:\n";
  for (int i = 0; i < 3; ++i)
    text += "  - {name: n" + std::to_string(i) + ", count: 100000, gpus: 0, cpu_milli: 1}\n";
  auto c = load_cluster_yaml(text, "c.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.error().message, "c.yaml:4:5: count: the cluster has more than 200000"))
      << c.error().message;
  c = load_cluster_yaml("nodes:\n  - {name: a, gpus: 0, cpu_milli: 99999999999999}\n", "c.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.error().message, "cpu_milli: 99999999999999 is out of range"))
      << c.error().message;
}

}  // namespace
}  // namespace gpucloud::sim
