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

TEST(YamlToJson, BytesThatAreNotUtf8AreRefusedWithTheirLine) {
  // A Latin-1 byte inside a flow mapping: the config loader used to crash dumping it.
  auto r = yaml_to_json("idle: {timeout: 2h}\nthreshold: \xba\n", "gpucloud.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "gpucloud.yaml:2: the line is not valid UTF-8; save the file as UTF-8");
  // Valid multi-byte text is untouched.
  auto ok = yaml_to_json("name: \xc3\xa9t\xc3\xa9\n", "job.yaml");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ((*ok)["name"], "\xc3\xa9t\xc3\xa9");
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

TEST(YamlToJson, AnAliasBombIsRefusedQuicklyNamingAliases) {
  // Nine levels of ten aliases each: 10^9 strings once expanded, from under 1 KB of text.
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (char c = 'b'; c <= 'i'; ++c) {
    text += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", *" : "*") + prev;
    text += "]\n";
    prev = std::string(1, c);
  }
  text += "command: *i\n";
  ASSERT_LT(text.size(), 1024u);
  auto r = yaml_to_json(text, "bomb.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("more than 100000 values"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("aliases"), std::string::npos) << r.error().message;
}

TEST(YamlToJson, AliasesExpandingToTooMuchTextAreRefused) {
  std::string text = "a: &a " + std::string(100'000, 'x') + "\nb: [";
  for (int i = 0; i < 200; ++i) text += i ? ", *a" : "*a";
  text += "]\n";
  auto r = yaml_to_json(text, "big.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("bytes of text"), std::string::npos) << r.error().message;
}

TEST(YamlToJson, AnAliasInsideItsOwnAnchorIsAnError) {
  auto r = yaml_to_json("command: &a [x, *a]\n", "cycle.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deeper than 64"), std::string::npos) << r.error().message;
}

TEST(YamlToJson, DeepFlowNestingIsRefusedBeforeParsing) {
  // Deep enough to overflow yaml-cpp's recursive parser if it were handed the text.
  std::string text = "command: " + std::string(100'000, '[') + std::string(100'000, ']');
  auto r = yaml_to_json(text, "deep.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("deep.yaml:1:", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find("deeper than 64"), std::string::npos) << r.error().message;
}

TEST(YamlToJson, DeepBlockNestingIsRefusedBeforeParsing) {
  std::string dashes;
  for (int i = 0; i < 50'000; ++i) dashes += "- ";
  auto r = yaml_to_json("command:\n" + dashes + "x\n", "deep.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("deep.yaml:2:", 0), 0u) << r.error().message;
  std::string indented;
  for (int i = 0; i < 200; ++i) indented += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  r = yaml_to_json(indented, "deep.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deeper than 64"), std::string::npos) << r.error().message;
}

TEST(YamlToJson, BracketsInScalarsAndBlockTextDoNotCountAsNesting) {
  std::string brackets(200, '[');
  std::string text = "name: a[1]\ncommand:\n  - sh\n  - \"" + brackets + "\"\n  - '" + brackets +
                     "'\n  - |\n    " + brackets + "\n    " + brackets +
                     "\nenv: {NOTE: \"it's\"}\n";
  auto r = yaml_to_json(text, "job.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["command"][1], brackets);
  EXPECT_EQ((*r)["command"][3], brackets + "\n" + brackets + "\n");
}

TEST(YamlToJson, RefusesDocumentsAboveTheSizeLimit) {
  YamlLimits limits;
  limits.max_bytes = 100;
  auto r = yaml_to_json("name: " + std::string(200, 'x'), "big.yaml", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTooLarge);
  EXPECT_NE(r.error().message.find("above the limit of 100 bytes"), std::string::npos);
}

}  // namespace
}  // namespace gpucloud
