#include "model/yaml_json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "model/job_spec.h"

namespace gpucloud {
namespace {

using json = nlohmann::json;

json yaml(const std::string& text) {
  auto r = yaml_to_json(text, "job.yaml");
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : json();
}

TEST(YamlToJson, AJobFileGivesTheSameSpecAsItsJsonForm) {
  const char* text = R"(
name: resnet
command: [python, train.py, --epochs, "90"]
replicas: 2
gpus: 4
gpu_model: A100|H100
gpu_memory: 40GiB
cpus: 8.5
memory: 64Gi
priority: high
capacity_class: spot
node_selector:
  zone: eu-1
max_runtime: 12h
restart:
  policy: on-failure
  max: 2
grace_period: 45
env:
  WANDB_MODE: offline
workdir: /srv/resnet
)";
  json from_yaml = yaml(text);
  json from_json = {{"name", "resnet"},
                    {"command", {"python", "train.py", "--epochs", "90"}},
                    {"replicas", 2},
                    {"gpus", 4},
                    {"gpu_model", "A100|H100"},
                    {"gpu_memory", "40GiB"},
                    {"cpus", 8.5},
                    {"memory", "64Gi"},
                    {"priority", "high"},
                    {"capacity_class", "spot"},
                    {"node_selector", {{"zone", "eu-1"}}},
                    {"max_runtime", "12h"},
                    {"restart", {{"policy", "on-failure"}, {"max", 2}}},
                    {"grace_period", 45},
                    {"env", {{"WANDB_MODE", "offline"}}},
                    {"workdir", "/srv/resnet"}};
  EXPECT_EQ(from_yaml, from_json);
  auto a = job_spec_from_json(from_yaml);
  auto b = job_spec_from_json(from_json);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(job_spec_to_json(*a), job_spec_to_json(*b));
}

TEST(YamlToJson, PlainScalarsBecomeNumbersBooleansAndNull) {
  json j = yaml("a: 8\nb: -3\nc: 2.5\nd: true\ne: False\nf: ~\ng: null\nh:\ni: 1e3\n");
  EXPECT_EQ(j["a"], 8);
  EXPECT_TRUE(j["a"].is_number_integer());
  EXPECT_EQ(j["b"], -3);
  EXPECT_EQ(j["c"], 2.5);
  EXPECT_EQ(j["d"], true);
  EXPECT_EQ(j["e"], false);
  EXPECT_TRUE(j["f"].is_null());
  EXPECT_TRUE(j["g"].is_null());
  EXPECT_TRUE(j["h"].is_null());
  EXPECT_EQ(j["i"], 1000.0);
}

TEST(YamlToJson, WordsThatLookLikeOtherThingsStayStrings) {
  json j = yaml("a: yes\nb: 0x10\nc: 1.2.3\nd: inf\ne: 30s\n");
  EXPECT_EQ(j["a"], "yes");
  EXPECT_EQ(j["b"], "0x10");
  EXPECT_EQ(j["c"], "1.2.3");
  EXPECT_EQ(j["d"], "inf");
  EXPECT_EQ(j["e"], "30s");
}

TEST(YamlToJson, QuotedScalarsStayStrings) {
  json j = yaml("a: \"8\"\nb: '8'\nc: \"true\"\nd: \"\"\n");
  EXPECT_EQ(j["a"], "8");
  EXPECT_EQ(j["b"], "8");
  EXPECT_EQ(j["c"], "true");
  EXPECT_EQ(j["d"], "");
}

TEST(YamlToJson, AQuotedGpuCountIsRejectedLikeInJson) {
  auto spec = job_spec_from_json(yaml("command: [python]\ngpus: \"8\"\n"));
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().message.rfind("gpus:", 0), 0u) << spec.error().message;
}

TEST(YamlToJson, UnquotedNumbersInACommandAreTakenAsWritten) {
  auto spec = job_spec_from_json(yaml("command: [sleep, 10]\n"));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->command, (std::vector<std::string>{"sleep", "10"}));
}

TEST(YamlToJson, SyntaxErrorsCarryTheFileLineAndColumn) {
  auto r = yaml_to_json("name: x\ncommand: [python, train.py\ngpus: 2\n", "train.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message.rfind("train.yaml:", 0), 0u) << r.error().message;
  // "train.yaml:<line>:<column>: ..." with a line inside the file.
  int line = 0, column = 0;
  ASSERT_EQ(std::sscanf(r.error().message.c_str(), "train.yaml:%d:%d:", &line, &column), 2)
      << r.error().message;
  EXPECT_GE(line, 2);
  EXPECT_LE(line, 4);
  EXPECT_GE(column, 1);
}

TEST(YamlToJson, BadIndentationPointsAtTheLine) {
  auto r = yaml_to_json("name: x\n  gpus: 2\n", "job.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("job.yaml:2:", 0), 0u) << r.error().message;
}

TEST(YamlToJson, DeepNestingIsAnErrorNotACrash) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "[";
  for (int i = 0; i < 100; ++i) text += "]";
  auto r = yaml_to_json(text, "deep.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deeper than 64"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace gpucloud
