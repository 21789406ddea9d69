// Bad input through the CLI and straight through HTTP: clear 4xx errors, and the server stays up.
#include <gtest/gtest.h>

#include <fstream>

#include "dev_cluster.h"
#include "net/http_client.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

class BadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new DevCluster({"--sim-gpus", "8xA100-80GB"}); }
  static void TearDownTestSuite() { delete cluster_; }

  // A raw API call; returns status and "code: message" of its error ("" if none).
  std::pair<int, std::string> call(const std::string& method, const std::string& path,
                                   const std::string& body, const std::string& token) {
    ApiAnswer a = api_call(cluster_->address(), method, path, body, token);
    return {a.status, a.error()};
  }
  static DevCluster* cluster_;
};
DevCluster* BadInput::cluster_ = nullptr;

TEST_F(BadInput, CliRejectsBadFlagsNamingTheField) {
  auto& c = *cluster_;
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  } cases[] = {
      {{"run", "--gpus", "-1", "--", "true"}, "gpus: -1 is below the minimum 0"},
      {{"run", "--gpus", "100000", "--", "true"}, "gpus: 100000 is above the maximum 64"},
      {{"run", "--gpus", "two", "--", "true"}, "gpus: expected a whole number"},
      {{"run", "--mem", "1ZB", "--", "true"}, "memory: size '1ZB' has unknown unit"},
      {{"run", "--cpus", "0", "--", "true"}, "cpus: 0 must be above 0"},
      {{"run", "--gpu-milli", "1500", "--", "true"}, "gpu_milli: 1500 is above the maximum 999"},
      {{"run", "--max-runtime", "-5s", "--", "true"}, "max_runtime: duration '-5s' is negative"},
      {{"run", "--restart", "sometimes", "--", "true"},
       "restart.policy: 'sometimes' is not one of"},
      {{"run", "--name", std::string(200, 'n'), "--", "true"},
       "name: is 200 characters long; the maximum is 128"},
      {{"run", "--name", "has space", "--", "true"}, "name: 'has space' may contain only"},
      {{"run", "--env", "NOEQUALS", "--", "true"}, "--env 'NOEQUALS' is not KEY=VALUE"},
      {{"run", "--env", "GPUCLOUD_JOB_ID=x", "--", "true"},
       "env.GPUCLOUD_JOB_ID: is set by gpucloud itself"},
      {{"run", "--"}, "nothing to run"},
  };
  for (const auto& tc : cases) {
    auto r = c.cli(tc.args);
    EXPECT_EQ(r.exit_code, 2) << tc.expected;
    EXPECT_NE(r.err.find(tc.expected), std::string::npos)
        << "expected '" << tc.expected << "' in: " << r.err;
  }
}

TEST_F(BadInput, UnsatisfiableRequestsAreRejectedAtSubmitWithTheLargestThatFits) {
  auto& c = *cluster_;
  auto r = c.cli({"run", "--gpus", "12", "--", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("largest matching node (dev-0) has 8; ask for --gpus 8"), std::string::npos)
      << r.err;
  r = c.cli({"run", "--gpus", "1", "--gpu-type", "H100", "--", "true"});
  EXPECT_NE(r.err.find("no node has a GPU matching 'H100'"), std::string::npos) << r.err;
  auto [status, message] = call("POST", "/v1/jobs", R"({"command":["true"],"gpus":12})", c.token());
  EXPECT_EQ(status, 422);
  EXPECT_NE(message.find("unsatisfiable: gpus: 12 requested"), std::string::npos) << message;
}

TEST_F(BadInput, ApiAnswersMalformedRequestsWith4xxAndAJsonError) {
  auto& c = *cluster_;
  std::string t = c.token();
  struct Case {
    std::string body;
    int status;
    std::string expected;
  } cases[] = {
      {"{\"command\":[\"true\"", 400, "not valid JSON"},
      {"", 400, "body is empty"},
      {"[1,2]", 400, "must be a JSON object"},
      {R"({"command":["true"],"bogus":1})", 400, "bogus: unknown field"},
      {R"({"command":"echo hi"})", 400, "command: expected a list of arguments"},
      {R"({"command":[]})", 400, "command: is empty"},
      {R"({"command":["true"],"gpus":1e300})", 400, "gpus:"},
      {R"({"command":["true"],"replicas":-3})", 400, "replicas: -3 is below the minimum 1"},
      {"{\"command\":[\"\xff\xfe\"]}", 400, "UTF-8"},
      {R"({"command":["true"],"name":"ünïcödé"})", 400, "name:"},
      {R"({"command":["true"],"env":{"1BAD":"x"}})", 400, "is not a valid variable name"},
      {R"({"command":["true"],"workdir":"relative/path"})", 400,
       "workdir: 'relative/path' is not an absolute path"},
  };
  for (const auto& tc : cases) {
    auto [status, message] = call("POST", "/v1/jobs", tc.body, t);
    EXPECT_EQ(status, tc.status) << tc.body;
    EXPECT_NE(message.find(tc.expected), std::string::npos)
        << "body " << tc.body << " gave: " << message;
  }
  // A unicode command argument is fine.
  auto [ok_status, ok_message] =
      call("POST", "/v1/jobs", R"({"command":["echo","héllo wörld ✓"]})", t);
  EXPECT_EQ(ok_status, 201) << ok_message;
  // A huge body is refused as too large, and the server stays up.
  auto [big_status, big_message] = call("POST", "/v1/jobs", std::string(20 << 20, 'x'), t);
  EXPECT_EQ(big_status, 413) << big_message;
  EXPECT_EQ(call("GET", "/healthz", "", "").first, 200);
}

TEST_F(BadInput, HostileJsonBodiesGet400AndTheServerStaysUp) {
  // 100,000 open brackets used to overflow the server's stack (SIGSEGV); 1e400 and a
  // 400-digit number used to be 500s.
  auto& c = *cluster_;
  std::string t = c.token();
  std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  std::string deep_inside =
      R"({"command":["true"],"env":)" + std::string(50'000, '[') + std::string(50'000, ']') + "}";
  struct Case {
    std::string body;
    std::string expected;
  } cases[] = {
      {deep, "nest deeper than 64 levels at byte 64"},
      {deep_inside, "nest deeper than 64 levels"},
      {R"({"command":["true"],"gpus":1e400})",
       "number 1e400 at byte 27 (field gpus) is out of range"},
      {R"({"command":["true"],"replicas":)" + std::string(400, '9') + "}", "(field replicas)"},
      {R"({"command":["true"],"gpus":1e18})", "gpus: 1e+18 is above the maximum 64"},
  };
  for (const auto& tc : cases) {
    auto [status, message] = call("POST", "/v1/jobs", tc.body, t);
    EXPECT_EQ(status, 400) << tc.body.substr(0, 80);
    EXPECT_NE(message.find(tc.expected), std::string::npos)
        << "body " << tc.body.substr(0, 80) << " gave: " << message;
    EXPECT_EQ(call("GET", "/healthz", "", "").first, 200);
  }
}

TEST_F(BadInput, SubmitRefusesAYamlAliasBombQuickly) {
  // Under 1 KB, 10^9 values once its aliases are expanded: it used to hang `gpucloud submit`.
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (char n = 'b'; n <= 'i'; ++n) {
    text += std::string(1, n) + ": &" + n + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", *" : "*") + prev;
    text += "]\n";
    prev = std::string(1, n);
  }
  text += "command: *i\n";
  std::string file = cluster_->work_dir() + "/bomb.yaml";
  {
    std::ofstream out(file);
    out << text;
  }
  auto r = cluster_->cli({"submit", file});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("aliases"), std::string::npos) << r.err;
}

TEST_F(BadInput, MissingOrWrongTokenGets401WithoutRevealingJobs) {
  auto& c = *cluster_;
  std::string id = c.submit({"--", "true"});
  auto [s1, m1] = call("GET", "/v1/jobs/" + id, "", "");
  auto [s2, m2] = call("GET", "/v1/jobs/ffffffffffffffffffffffffffffffff", "", "wrong-token");
  auto [s3, m3] = call("GET", "/v1/jobs/" + id, "", "wrong-token");
  EXPECT_EQ(s1, 401);
  EXPECT_EQ(s2, 401);
  EXPECT_EQ(s3, 401);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(m2, m3);
  auto r = run_command({GPUCLOUD_BINARY, "ps"},
                       {{"GPUCLOUD_ADDR", c.address()}, {"GPUCLOUD_TOKEN", "nope"}}, "/");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("invalid token"), std::string::npos) << r.err;
  // An agent join token cannot read jobs; unknown endpoints are 404; wrong methods 405.
  EXPECT_EQ(call("GET", "/v1/nope", "", c.token()).first, 404);
  EXPECT_EQ(call("PUT", "/v1/jobs", "{}", c.token()).first, 405);
}

}  // namespace
}  // namespace gpucloud::testing
