#include "model/job_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace gpucloud {
namespace {

using json = nlohmann::json;

JobSpec parse(const json& j) {
  auto r = job_spec_from_json(j);
  EXPECT_TRUE(r.ok()) << j.dump() << ": " << r.error().message;
  return r.ok() ? *r : JobSpec{};
}

// Parses {"command": [...]} plus one more field and returns the error, which must be an
// invalid_argument whose message starts with the field's name.
std::string rejected(const std::string& field, json value) {
  json j = {{"command", {"python", "train.py"}}};
  j[field] = std::move(value);
  auto r = job_spec_from_json(j);
  EXPECT_FALSE(r.ok()) << j.dump() << " was accepted";
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message.rfind(field, 0), 0u)
      << "message does not start with '" << field << "': " << r.error().message;
  return r.error().message;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(JobSpecFromJson, FillsDefaults) {
  JobSpec s = parse({{"command", {"/usr/bin/python3", "train.py"}}});
  EXPECT_EQ(s.name, "python3");
  EXPECT_EQ(s.replicas, 1);
  EXPECT_EQ(s.gpus, 0);
  EXPECT_EQ(s.gpu_milli, 0);
  EXPECT_EQ(s.cpu_milli, 1000);
  EXPECT_EQ(s.memory_mib, 0);
  EXPECT_EQ(s.restart.policy, RestartPolicy::kOnLost);
  EXPECT_EQ(s.restart.max, 3);
  EXPECT_EQ(s.grace_period_ms, 30'000);
  EXPECT_EQ(s.max_runtime_ms, 0);
  EXPECT_EQ(s.tenant, "default");
  EXPECT_EQ(s.priority, "normal");
  EXPECT_EQ(s.capacity_class, CapacityClass::kAny);
  EXPECT_TRUE(s.env.empty());
  EXPECT_TRUE(s.node_selector.empty());
}

TEST(JobSpecFromJson, DerivesANameFromTheCommandBasenameKeepingValidCharacters) {
  EXPECT_EQ(parse({{"command", {"./my train!.sh"}}}).name, "mytrain.sh");
  EXPECT_EQ(parse({{"command", {"/opt/??"}}}).name, "job");
}

TEST(JobSpecFromJson, ReadsEveryField) {
  JobSpec s = parse({{"name", "llama-ft"},
                     {"command", {"torchrun", "--nproc", "8", "train.py"}},
                     {"replicas", 4},
                     {"gpus", 8},
                     {"gpu_model", "A100|H100"},
                     {"gpu_memory", "80GiB"},
                     {"cpus", 32.5},
                     {"memory", "512Gi"},
                     {"tenant", "nlp"},
                     {"priority", "high"},
                     {"capacity_class", "spot"},
                     {"node_selector", {{"zone", "a"}, {"rack", 7}}},
                     {"max_runtime", "2d"},
                     {"expected_runtime", "36h"},
                     {"restart", {{"policy", "on-failure"}, {"max", 5}}},
                     {"grace_period", 90},
                     {"env", {{"HF_HOME", "/data/hf"}, {"SEED", 1}}},
                     {"workdir", "/home/ada/llama"}});
  EXPECT_EQ(s.name, "llama-ft");
  EXPECT_EQ(s.command, (std::vector<std::string>{"torchrun", "--nproc", "8", "train.py"}));
  EXPECT_EQ(s.replicas, 4);
  EXPECT_EQ(s.gpus, 8);
  EXPECT_EQ(s.gpu_model, "A100|H100");
  EXPECT_EQ(s.gpu_memory_mib, 80 * 1024);
  EXPECT_EQ(s.cpu_milli, 32'500);
  EXPECT_EQ(s.memory_mib, 512 * 1024);
  EXPECT_EQ(s.tenant, "nlp");
  EXPECT_EQ(s.priority, "high");
  EXPECT_EQ(s.capacity_class, CapacityClass::kSpot);
  EXPECT_EQ(s.node_selector, (std::map<std::string, std::string>{{"zone", "a"}, {"rack", "7"}}));
  EXPECT_EQ(s.max_runtime_ms, 2 * 86'400'000);
  EXPECT_EQ(s.expected_runtime_ms, 36 * 3'600'000);
  EXPECT_EQ(s.restart.policy, RestartPolicy::kOnFailure);
  EXPECT_EQ(s.restart.max, 5);
  EXPECT_EQ(s.grace_period_ms, 90'000);
  EXPECT_EQ(s.env, (std::map<std::string, std::string>{{"HF_HOME", "/data/hf"}, {"SEED", "1"}}));
  EXPECT_EQ(s.workdir, "/home/ada/llama");
}

TEST(JobSpecFromJson, AGpuShareMeansOneGpu) {
  JobSpec s = parse({{"command", {"infer"}}, {"gpu_milli", 250}, {"gpu_memory", "10GiB"}});
  EXPECT_EQ(s.gpus, 1);
  EXPECT_EQ(s.gpu_milli, 250);
  EXPECT_EQ(s.gpus_per_replica(), 1);
}

TEST(JobSpecFromJson, RestartMayBeJustAPolicy) {
  JobSpec s = parse({{"command", {"x"}}, {"restart", "never"}});
  EXPECT_EQ(s.restart.policy, RestartPolicy::kNever);
  EXPECT_EQ(s.restart.max, 3);
}

TEST(JobSpecFromJson, RejectsUnknownFieldsNamingThem) {
  std::string m = rejected("gpu", 1);
  EXPECT_TRUE(contains(m, "unknown field")) << m;
  EXPECT_TRUE(contains(m, "gpus")) << "should list the known fields: " << m;
  EXPECT_TRUE(contains(rejected("restart", {{"retries", 2}}), "restart.retries"));
}

TEST(JobSpecFromJson, RejectsNonObjects) {
  EXPECT_FALSE(job_spec_from_json(json::array()).ok());
  EXPECT_FALSE(job_spec_from_json("python train.py").ok());
}

TEST(JobSpecFromJson, RejectsWrongTypes) {
  EXPECT_TRUE(contains(rejected("gpus", "8"), "expected a whole number")) << rejected("gpus", "8");
  EXPECT_TRUE(contains(rejected("gpus", 1.5), "whole number"));
  EXPECT_TRUE(contains(rejected("command", "python train.py"), "argv"));
  rejected("command", {"python", {{"a", 1}}});
  rejected("command", {"python", nullptr});
  rejected("cpus", "4");
  rejected("env", {{"A", {1, 2}}});
  rejected("priority", "URGENT!");
  rejected("capacity_class", "reserved");
  rejected("name", 7);
}

TEST(JobSpecFromJson, RejectsNegativeAndAbsurdNumbers) {
  std::string m = rejected("gpus", -1);
  EXPECT_TRUE(contains(m, "-1")) << m;
  m = rejected("gpus", 100000);
  EXPECT_TRUE(contains(m, "100000")) << m;
  EXPECT_TRUE(contains(m, "64")) << m;
  rejected("gpus", json(uint64_t{18446744073709551615ULL}));
  rejected("replicas", 0);
  rejected("replicas", 100000);
  EXPECT_TRUE(contains(rejected("memory", "1ZB"), "1ZB"));
  rejected("memory", -5);
  rejected("cpus", 0);
  rejected("cpus", -2);
  rejected("cpus", 1e9);
  rejected("restart", {{"max", 1000}});
  rejected("max_runtime", "-1h");
  rejected("expected_runtime", "-1h");
  rejected("expected_runtime", "soon");
}

TEST(JobSpecFromJson, NamesTheFieldAndRangeOfEveryHugeOrNegativeNumber) {
  // Whole numbers written as floats used to be refused as "not a whole number" or slip
  // through narrowing; each now names the field and its range.
  EXPECT_TRUE(contains(rejected("gpus", 1e18), "above the maximum 64")) << rejected("gpus", 1e18);
  EXPECT_TRUE(contains(rejected("replicas", 1e18), "above the maximum 1024"));
  EXPECT_TRUE(contains(rejected("replicas", -1e18), "below the minimum 1"));
  EXPECT_TRUE(contains(rejected("gpu_milli", 2147483648.0), "above the maximum 999"));
  EXPECT_TRUE(contains(rejected("gpus", 2.5), "whole number"));
  EXPECT_TRUE(contains(rejected("memory", -1), "negative"));
  EXPECT_TRUE(contains(rejected("gpu_memory", 1e300), "above 1 PiB"));
  EXPECT_TRUE(contains(rejected("max_runtime", 1e300), "10 years"));
  EXPECT_TRUE(contains(rejected("grace_period", 1e300), "10 years"));
  EXPECT_TRUE(contains(rejected("cpus", 1e300), "maximum"));
  json restart = {{"max", 1e18}};
  auto r = job_spec_from_json({{"command", {"x"}}, {"restart", restart}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "restart.max: 1e+18 is above the maximum 100"))
      << r.error().message;
}

TEST(JobSpecFromJson, RejectsThousandsOfEnvVarsLabelsOrArguments) {
  json env = json::object();
  for (int i = 0; i < 2000; ++i) env["V" + std::to_string(i)] = "x";
  EXPECT_TRUE(contains(rejected("env", env), "has 2000 entries; the maximum is 1024"));
  json labels = json::object();
  for (int i = 0; i < 100; ++i) labels["l" + std::to_string(i)] = "x";
  EXPECT_TRUE(contains(rejected("node_selector", labels), "maximum is 64"));
  json j = {{"command", json::array()}};
  for (int i = 0; i < 20000; ++i) j["command"].push_back("a");
  auto r = job_spec_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "command: has 20000 arguments")) << r.error().message;
}

TEST(JobSpecFromJson, RejectsMegabyteStrings) {
  std::string big(2 << 20, 'a');
  EXPECT_TRUE(contains(rejected("name", big), "maximum is 128"));
  EXPECT_TRUE(contains(rejected("tenant", big), "maximum is 63"));
  EXPECT_TRUE(contains(rejected("gpu_model", big), "gpu_model"));
  EXPECT_TRUE(contains(rejected("workdir", "/" + big), "longer than 4096"));
  EXPECT_TRUE(contains(rejected("env", {{"A", big}}), "bytes; the maximum is"));
  auto r = job_spec_from_json({{"command", {"x", big}}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "put long inputs in a file")) << r.error().message;
}

TEST(JobSpecFromJson, RejectsEmptyCommands) {
  rejected("command", json::array());
  rejected("command", {""});
  EXPECT_FALSE(job_spec_from_json({{"name", "x"}}).ok());
}

TEST(JobSpecFromJson, RejectsNulInTheCommand) {
  std::string m = rejected("command", {"python", std::string("a\0b", 3)});
  EXPECT_TRUE(contains(m, "command[1]")) << m;
  EXPECT_TRUE(contains(m, "NUL")) << m;
}

TEST(JobSpecFromJson, RejectsBadNames) {
  EXPECT_TRUE(parse({{"command", {"x"}}, {"name", std::string(128, 'n')}}).name.size() == 128);
  std::string m = rejected("name", std::string(129, 'n'));
  EXPECT_TRUE(contains(m, "129")) << m;
  EXPECT_TRUE(contains(m, "128")) << m;
  m = rejected("name", "my job");
  EXPECT_TRUE(contains(m, "'my job'")) << m;
  rejected("tenant", "a/b");
}

TEST(JobSpecFromJson, RejectsInvalidUtf8) {
  std::string bad = "caf\xc3";
  EXPECT_TRUE(contains(rejected("name", bad), "UTF-8"));
  EXPECT_TRUE(contains(rejected("command", {"echo", bad}), "UTF-8"));
  rejected("env", {{"GREETING", "\xff\xfe"}});
  rejected("workdir", "/tmp/\xe0\x80\x80");  // overlong encoding
}

TEST(JobSpecFromJson, RejectsInconsistentGpuShares) {
  EXPECT_TRUE(contains(rejected("gpu_milli", 1000), "999"));
  json j = {{"command", {"x"}}, {"gpus", 2}, {"gpu_milli", 500}};
  auto r = job_spec_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "gpu_milli")) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "gpus 2")) << r.error().message;
}

TEST(JobSpecFromJson, RejectsAGpuModelWithoutGpus) {
  std::string m = rejected("gpu_model", "A100");
  EXPECT_TRUE(contains(m, "add gpus")) << m;
  rejected("gpu_memory", "40GiB");
  json j = {{"command", {"x"}}, {"gpus", 1}, {"gpu_model", "A100; rm -rf /"}};
  EXPECT_FALSE(job_spec_from_json(j).ok());
}

TEST(JobSpecFromJson, RejectsBadOrReservedEnvKeys) {
  EXPECT_TRUE(contains(rejected("env", {{"1ABC", "x"}}), "'1ABC'"));
  rejected("env", {{"A-B", "x"}});
  rejected("env", {{"", "x"}});
  EXPECT_TRUE(contains(rejected("env", {{"GPUCLOUD_X", "1"}}), "env.GPUCLOUD_X"));
  EXPECT_TRUE(
      contains(rejected("env", {{"CUDA_VISIBLE_DEVICES", "0"}}), "env.CUDA_VISIBLE_DEVICES"));
  rejected("env", {{"NVIDIA_VISIBLE_DEVICES", "all"}});
}

TEST(JobSpecFromJson, RejectsARelativeWorkdir) {
  EXPECT_TRUE(contains(rejected("workdir", "src/app"), "'src/app'"));
}

TEST(JobSpecFromJson, GracePeriodIsAtMostOneHour) {
  EXPECT_EQ(parse({{"command", {"x"}}, {"grace_period", "1h"}}).grace_period_ms, 3'600'000);
  std::string m = rejected("grace_period", "61m");
  EXPECT_TRUE(contains(m, "1h1m")) << m;
  rejected("grace_period", "30x");
}

JobSpec full_spec() {
  JobSpec s;
  s.name = "bert.large_v2";
  s.command = {"python", "-m", "train", "--lr=3e-4", "caf\xc3\xa9"};
  s.replicas = 2;
  s.gpus = 4;
  s.gpu_model = "A100-80GB|H100";
  s.gpu_memory_mib = 40 * 1024;
  s.cpu_milli = 12'250;
  s.memory_mib = 96 * 1024 + 1;
  s.tenant = "vision";
  s.priority = "low";
  s.capacity_class = CapacityClass::kOnDemand;
  s.node_selector = {{"zone", "eu-1"}};
  s.max_runtime_ms = 86'400'000 + 3'600'000 + 60'000 + 1'000 + 5;  // 1d1h1m1s5ms
  s.expected_runtime_ms = 40 * 60'000;
  s.restart = {RestartPolicy::kAlways, 7};
  s.grace_period_ms = 1'500;
  s.env = {{"WANDB_MODE", "offline"}, {"EMPTY", ""}};
  s.workdir = "/srv/bert";
  return s;
}

void expect_same(const JobSpec& a, const JobSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.replicas, b.replicas);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(a.gpu_model, b.gpu_model);
  EXPECT_EQ(a.gpu_milli, b.gpu_milli);
  EXPECT_EQ(a.gpu_memory_mib, b.gpu_memory_mib);
  EXPECT_EQ(a.cpu_milli, b.cpu_milli);
  EXPECT_EQ(a.memory_mib, b.memory_mib);
  EXPECT_EQ(a.tenant, b.tenant);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.capacity_class, b.capacity_class);
  EXPECT_EQ(a.node_selector, b.node_selector);
  EXPECT_EQ(a.max_runtime_ms, b.max_runtime_ms);
  EXPECT_EQ(a.expected_runtime_ms, b.expected_runtime_ms);
  EXPECT_EQ(a.restart.policy, b.restart.policy);
  EXPECT_EQ(a.restart.max, b.restart.max);
  EXPECT_EQ(a.grace_period_ms, b.grace_period_ms);
  EXPECT_EQ(a.env, b.env);
  EXPECT_EQ(a.workdir, b.workdir);
}

TEST(JobSpecJson, RoundTripsEveryField) {
  JobSpec spec = full_spec();
  ASSERT_TRUE(validate_job_spec(spec).ok());
  expect_same(parse(job_spec_to_json(spec)), spec);
}

TEST(JobSpecJson, RoundTripsAShareAndTheDefaults) {
  JobSpec share =
      parse({{"command", {"serve"}}, {"gpu_milli", 333}, {"gpu_memory", "5GiB"}, {"cpus", 0.25}});
  expect_same(parse(job_spec_to_json(share)), share);
  JobSpec defaults = parse({{"command", {"sleep", "1"}}});
  expect_same(parse(job_spec_to_json(defaults)), defaults);
}

TEST(IsValidUtf8, AcceptsUtf8AndRejectsBrokenSequences) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // truncated
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\x80"));
}

TEST(JobSpecFromJson, MaxPriceIsUsdPerGpuHourAndRoundTrips) {
  JobSpec s = parse({{"command", {"x"}}, {"max_price", 2.45}});
  EXPECT_DOUBLE_EQ(s.max_price, 2.45);
  EXPECT_DOUBLE_EQ(parse(job_spec_to_json(s)).max_price, 2.45);
  EXPECT_FALSE(job_spec_to_json(parse({{"command", {"x"}}})).contains("max_price"))
      << "no limit is no field";
  EXPECT_TRUE(contains(rejected("max_price", -1), "must be above 0 and at most 1000"));
  EXPECT_TRUE(contains(rejected("max_price", 0), "must be above 0"));
  EXPECT_TRUE(contains(rejected("max_price", 1000.5), "at most 1000"));
  EXPECT_TRUE(contains(rejected("max_price", "2"), "expected USD per GPU-hour"));
}

TEST(JobSpecFromJson, MaxCostIsUsdForTheWholeJobAndRoundTrips) {
  JobSpec s = parse({{"command", {"x"}}, {"max_cost", 250.5}});
  EXPECT_DOUBLE_EQ(s.max_cost, 250.5);
  EXPECT_DOUBLE_EQ(parse(job_spec_to_json(s)).max_cost, 250.5);
  EXPECT_FALSE(job_spec_to_json(parse({{"command", {"x"}}})).contains("max_cost"));
  EXPECT_TRUE(contains(rejected("max_cost", -1), "max_cost: -1 must be above 0 and at most 1e+09"));
  EXPECT_TRUE(contains(rejected("max_cost", 0), "must be above 0"));
  EXPECT_TRUE(contains(rejected("max_cost", 2e9), "at most 1e+09"));
  EXPECT_TRUE(contains(rejected("max_cost", "250"), "expected USD like 250, got string"));
}

}  // namespace
}  // namespace gpucloud

namespace gpucloud {
namespace {

TEST(JobSpecIdleTimeout, IsAWindowOrOffAndRoundTrips) {
  json j = {{"command", {"python", "train.py"}}, {"idle_timeout", "30m"}};
  EXPECT_EQ(parse(j).idle_timeout_ms, 30 * 60'000);
  j["idle_timeout"] = "off";
  JobSpec off = parse(j);
  EXPECT_EQ(off.idle_timeout_ms, kIdleTimeoutOff);
  EXPECT_EQ(job_spec_to_json(off)["idle_timeout"], "off");
  EXPECT_EQ(parse(job_spec_to_json(off)).idle_timeout_ms, kIdleTimeoutOff);
  JobSpec unset = parse({{"command", {"true"}}});
  EXPECT_EQ(unset.idle_timeout_ms, 0);
  EXPECT_FALSE(job_spec_to_json(unset).contains("idle_timeout"));
}

TEST(JobSpecIdleTimeout, RefusesNegativeTinyAndAbsurdWindows) {
  EXPECT_TRUE(contains(rejected("idle_timeout", "-5s"), "-5s"));
  EXPECT_TRUE(contains(rejected("idle_timeout", -5), "negative"));
  EXPECT_TRUE(contains(rejected("idle_timeout", "500ms"), "outside 1s..30d"));
  EXPECT_TRUE(contains(rejected("idle_timeout", "31d"), "outside 1s..30d"));
  EXPECT_TRUE(contains(rejected("idle_timeout", true), "duration"));
}

}  // namespace
}  // namespace gpucloud
