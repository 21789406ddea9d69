// The canonical trace CSV and the Alibaba pod list read as a trace: values, defaults, and
// errors that name file:line:column.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/trace.h"

namespace gpucloud::sim {
namespace {

Result<Trace> canonical(const std::string& text) {
  auto t = CsvTable::parse(text, "t.csv");
  if (!t.ok()) return t.error();
  return load_canonical_trace(*t);
}

Result<Trace> pods(const std::string& text) {
  auto t = CsvTable::parse(text, "pods.csv");
  if (!t.ok()) return t.error();
  return load_alibaba_pod_trace(*t);
}

const std::string kHeader =
    "id,tenant,submit_s,duration_s,max_runtime_s,replicas,gpus,gpu_milli,gpu_model,cpu_milli,"
    "memory_mib,priority,capacity_class,expected_runtime_s\n";

TEST(CanonicalTraceTest, ReadsEveryColumn) {
  auto trace = canonical(kHeader + "a,team1,1.5,60,30,2,4,,A100,8000,65536,high,spot,20\n");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 1u);
  const TraceJob& j = trace->jobs[0];
  EXPECT_EQ(j.id, "a");
  EXPECT_EQ(j.tenant, "team1");
  EXPECT_EQ(j.submit_ms, 1500);
  EXPECT_EQ(j.duration_ms, 60000);
  EXPECT_EQ(j.max_runtime_ms, 30000);
  EXPECT_EQ(j.replicas, 2);
  EXPECT_EQ(j.gpus, 4);
  EXPECT_EQ(j.gpu_milli, 0);
  EXPECT_EQ(j.gpu_model, "A100");
  EXPECT_EQ(j.cpu_milli, 8000);
  EXPECT_EQ(j.memory_mib, 65536);
  EXPECT_EQ(j.priority, kPriorityHigh);
  EXPECT_EQ(j.capacity_class, CapacityClass::kSpot);
  EXPECT_EQ(j.expected_runtime_ms, 20000);
}

TEST(CanonicalTraceTest, EmptyCellsAndMissingColumnsTakeJobSpecDefaults) {
  auto trace = canonical("submit_s,duration_s,gpus,extra\n0,10,,whatever\n5,1,2,x\n");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const TraceJob& j = trace->jobs[0];
  JobSpec spec;
  EXPECT_EQ(j.id, "job-2");  // named after its line
  EXPECT_EQ(j.tenant, spec.tenant);
  EXPECT_EQ(j.replicas, spec.replicas);
  EXPECT_EQ(j.gpus, spec.gpus);
  EXPECT_EQ(j.cpu_milli, spec.cpu_milli);
  EXPECT_EQ(j.memory_mib, spec.memory_mib);
  EXPECT_EQ(j.max_runtime_ms, 0);
  EXPECT_EQ(j.priority, kPriorityNormal);
  EXPECT_EQ(j.capacity_class, CapacityClass::kAny);
  EXPECT_EQ(trace->jobs[1].gpus, 2);
}

TEST(CanonicalTraceTest, AShareIsOneGpu) {
  auto trace = canonical("submit_s,duration_s,gpu_milli\n0,10,250\n0,10,1000\n");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->jobs[0].gpus, 1);
  EXPECT_EQ(trace->jobs[0].gpu_milli, 250);
  EXPECT_EQ(trace->jobs[1].gpu_milli, 0);  // 1000 milli is a whole GPU
}

TEST(CanonicalTraceTest, MissingRequiredColumnNamesTheFileAndTheColumns) {
  auto trace = canonical("id,submit_s\na,0\n");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.error().message,
            "t.csv:1:1: missing column 'duration_s' (the header has: id,submit_s)");
}

TEST(CanonicalTraceTest, MalformedNumberSaysLineAndColumn) {
  auto trace = canonical("id,submit_s,duration_s,gpus\na,0,10,1\nb,0,10,two\n");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.error().message, "t.csv:3:8: column 'gpus': 'two' is not a whole number");
  auto secs = canonical("id,submit_s,duration_s\na,1h,10\n");
  ASSERT_FALSE(secs.ok());
  EXPECT_EQ(secs.error().message, "t.csv:2:3: column 'submit_s': '1h' is not a number of seconds");
}

TEST(CanonicalTraceTest, NegativeDurationIsRefused) {
  auto trace = canonical("id,submit_s,duration_s\na,0,-5\n");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.error().message,
            "t.csv:2:5: column 'duration_s': -5 is negative; times and durations must be 0 or "
            "more");
}

TEST(CanonicalTraceTest, OtherBadCellsSayWhatIsAllowed) {
  auto share = canonical("id,submit_s,duration_s,gpus,gpu_milli\na,0,1,2,500\n");
  ASSERT_FALSE(share.ok());
  EXPECT_NE(share.error().message.find("t.csv:2:9: column 'gpu_milli': 500 with gpus 2"),
            std::string::npos)
      << share.error().message;
  auto cls = canonical("submit_s,duration_s,capacity_class\n0,1,cheap\n");
  ASSERT_FALSE(cls.ok());
  EXPECT_EQ(cls.error().message,
            "t.csv:2:5: column 'capacity_class': 'cheap' is not on-demand, spot or any");
  auto dup = canonical("id,submit_s,duration_s\na,0,1\na,2,1\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message,
            "t.csv:3:1: column 'id': 'a' is also the id of line 2; ids must be unique");
  auto empty = canonical("id,submit_s,duration_s\na,,1\n");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "t.csv:2:3: column 'submit_s': empty; every job needs it");
}

TEST(CanonicalTraceTest, WrittenTraceReadsBackTheSame) {
  auto trace = canonical(kHeader + "a,t1,1.25,60,,1,1,300,T4,2000,1024,low,,45\n" +
                         "b,t2,3,7.5,100,2,8,,A100|H100,64000,0,150,on-demand,\n");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  std::ostringstream out;
  write_canonical_trace(out, trace->jobs);
  auto again = canonical(out.str());
  ASSERT_TRUE(again.ok()) << again.error().message << "\n" << out.str();
  EXPECT_EQ(out.str(), kHeader + "a,t1,1.250,60,,1,1,300,T4,2000,1024,low,,45\n" +
                           "b,t2,3,7.500,100,2,8,,A100|H100,64000,0,150,on-demand,\n");
  EXPECT_EQ(again->jobs[0].expected_runtime_ms, 45'000);
}

const std::string kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

TEST(AlibabaPodTraceTest, MapsTimesQosAndShares) {
  auto trace = pods(kPodHeader + "p0,12000,16384,1,460,,LS,Running,100,1000,400\n" +
                    "p1,6000,100,2,1000,V100M16|V100M32,BE,Pending,50,80,\n" +
                    "p2,4000,0,0,0,,Burstable,Failed,7,9,8\n");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 3u);
  const TraceJob& a = trace->jobs[0];
  EXPECT_EQ(a.id, "p0");
  EXPECT_EQ(a.tenant, "default");
  EXPECT_EQ(a.submit_ms, 100'000);
  EXPECT_EQ(a.duration_ms, 600'000);  // deletion − scheduled
  EXPECT_EQ(a.gpus, 1);
  EXPECT_EQ(a.gpu_milli, 460);
  EXPECT_EQ(a.capacity_class, CapacityClass::kAny);
  const TraceJob& b = trace->jobs[1];
  EXPECT_EQ(b.duration_ms, 30'000);  // never scheduled: deletion − creation
  EXPECT_EQ(b.gpus, 2);
  EXPECT_EQ(b.gpu_milli, 0);
  EXPECT_EQ(b.gpu_model, "V100M16|V100M32");
  EXPECT_EQ(b.capacity_class, CapacityClass::kSpot);
  EXPECT_EQ(trace->jobs[2].gpus, 0);
}

TEST(AlibabaPodTraceTest, ErrorsSayWhere) {
  auto neg = pods(kPodHeader + "p0,1000,10,1,1000,,LS,Running,100,200,300\n");
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.error().message,
            "pods.csv:2:35: column 'deletion_time': 200 is before scheduled_time 300; the "
            "duration would be negative");
  auto bad = pods(kPodHeader + "p0,1000,10,1,1000,,LS,Running,1e3,2000,\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "pods.csv:2:31: column 'creation_time': '1e3' is not a whole number");
  auto missing = pods("name,cpu_milli\np,1\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("pods.csv:1:1: missing column 'memory_mib'"),
            std::string::npos);
}

TEST(LoadTraceTest, RecognisesBothFormatsAndRefusesOthers) {
  auto pods_file = load_trace(std::string(TEST_DATA_DIR) + "/alibaba_pods_small.csv");
  ASSERT_TRUE(pods_file.ok()) << pods_file.error().message;
  EXPECT_EQ(pods_file->jobs.size(), 200u);
  auto nodes_file = load_trace(std::string(TEST_DATA_DIR) + "/alibaba_nodes_small.csv");
  ASSERT_FALSE(nodes_file.ok());
  EXPECT_NE(nodes_file.error().message.find("alibaba_nodes_small.csv:1:1: not a trace"),
            std::string::npos);
}

}  // namespace
}  // namespace gpucloud::sim
