#include "model/json_limits.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "model/job_spec.h"

namespace gpucloud {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

TEST(ParseJsonLimited, ParsesOrdinaryDocuments) {
  auto r = parse_json_limited(R"({"command": ["python", "a[b]{c}\"d"], "gpus": 2})", "body");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["gpus"], 2);
  EXPECT_EQ((*r)["command"][1], "a[b]{c}\"d");
}

TEST(ParseJsonLimited, AcceptsNestingUpToTheLimit) {
  auto r = parse_json_limited(nested(64), "body");
  EXPECT_TRUE(r.ok()) << r.error().message;
}

TEST(ParseJsonLimited, RefusesDeepNestingNamingTheDepthAndTheByte) {
  // 100,000 levels crashed the server's recursive parser; now it is a 400 at byte 64.
  auto r = parse_json_limited(nested(100'000), "request body");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(r.error().message, "request body:")) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "deeper than 64")) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "byte 64")) << r.error().message;
}

TEST(ParseJsonLimited, RefusesDeepNestingAnywhereInTheBody) {
  std::string text = R"({"command": ["x"], "env": {"A": )" + nested(50'000) + "}}";
  auto r = parse_json_limited(text, "request body");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "deeper than 64")) << r.error().message;
}

TEST(ParseJsonLimited, BracketsInsideStringsDoNotCount) {
  std::string text = "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]";
  auto r = parse_json_limited(text, "body");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].get<std::string>().size(), 2001u);
}

TEST(ParseJsonLimited, ANumberBeyondADoubleIsAnErrorNamingNumberAndField) {
  auto r = parse_json_limited(R"({"command": ["x"], "gpus": 1e400})", "request body");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(r.error().message, "number 1e400")) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "field gpus")) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "out of range")) << r.error().message;
}

TEST(ParseJsonLimited, A400DigitIntegerIsAnErrorNamingItsPlace) {
  std::string text = R"({"env": {"A": 1}, "restart": {"max": [1, )" + std::string(400, '9') + "]}}";
  auto r = parse_json_limited(text, "request body");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "field restart.max[1]")) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "99999999999999999999...")) << r.error().message;
}

TEST(ParseJsonLimited, TinyNumbersAreZeroNotErrors) {
  auto r = parse_json_limited("[1e-400, -0, 18446744073709551615]", "body");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].get<double>(), 0.0);
}

TEST(ParseJsonLimited, SyntaxErrorsAreInvalidArgumentsWithAPosition) {
  auto r = parse_json_limited(R"({"command": ["python", "tr)", "job.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message.rfind("job.json: not valid JSON: parse error at line 1", 0), 0u)
      << r.error().message;
}

TEST(ParseJsonLimited, RefusesTextAboveTheSizeLimit) {
  auto r = parse_json_limited(std::string(2000, ' ') + "1", "body", JsonLimits{64, 1000});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTooLarge);
  EXPECT_TRUE(contains(r.error().message, "2001 bytes")) << r.error().message;
}

TEST(ParseJsonLimited, HostileJobBodiesEndAsFieldErrors) {
  // Through the whole path of POST /v1/jobs: bounded parse, then the spec's ranges.
  for (const char* body : {R"({"command": ["x"], "gpus": 1e18})",
                           R"({"command": ["x"], "gpus": 18446744073709551615})",
                           R"({"command": ["x"], "replicas": 2147483648})"}) {
    auto doc = parse_json_limited(body, "request body");
    ASSERT_TRUE(doc.ok()) << doc.error().message;
    auto spec = job_spec_from_json(*doc);
    ASSERT_FALSE(spec.ok()) << body;
    EXPECT_EQ(spec.error().code, ErrorCode::kInvalidArgument);
    EXPECT_TRUE(contains(spec.error().message, "above the maximum")) << spec.error().message;
  }
}

}  // namespace
}  // namespace gpucloud
