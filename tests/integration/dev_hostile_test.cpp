// A hostile client against a real `gpucloud dev`: idle and slow connections, odd headers,
// stolen node credentials, token requests that make no sense, and large lists. Each case must
// get a clear 4xx (or a refused connection) while the server keeps serving everyone else.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "dev_cluster.h"
#include "net/http_client.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

int port_of(const std::string& address) {
  return std::stoi(address.substr(address.rfind(':') + 1));
}

// A TCP connection to the cluster from the given loopback source address (127.0.0.0/8).
int connect_from(const std::string& source, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &local.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    ::close(fd);
    return -1;
  }
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes the connection or timeout_ms passes.
std::string read_until_closed(int fd, int timeout_ms) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) return out + "<timeout>";
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// Sends raw bytes on a fresh connection and returns the whole answer.
std::string raw_exchange(int port, const std::string& request) {
  int fd = connect_from("127.0.0.1", port);
  EXPECT_GE(fd, 0);
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string answer = read_until_closed(fd, 10'000);
  ::close(fd);
  return answer;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

class Hostile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new DevCluster({"--sim-gpus", "2xA100-80GB", "--max-connections-per-source", "40",
                               "--unreachable-after", "1s", "--down-after", "2s", "--poll-hold-ms",
                               "300"});
  }
  static void TearDownTestSuite() { delete cluster_; }

  static ApiAnswer call(const std::string& method, const std::string& path, const std::string& body,
                        const std::string& token) {
    return api_call(cluster_->address(), method, path, body, token);
  }
  static bool healthy() { return call("GET", "/healthz", "", "").status == 200; }

  static DevCluster* cluster_;
};
DevCluster* Hostile::cluster_ = nullptr;

// Sends the start of a request head and never finishes it (a slow client, or an attacker).
void send_partial_head(int fd) {
  const std::string start = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  (void)!::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
}

TEST_F(Hostile, ConnectionsBeyondThePerSourceLimitAreRefusedAtOnceAndOthersAreServed) {
  int port = port_of(cluster_->address());
  std::vector<int> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(connect_from("127.0.0.7", port));
    ASSERT_GE(slow.back(), 0);
    send_partial_head(slow.back());
  }
  // Connections are accepted in order: once a later one is answered, all 40 are counted.
  ASSERT_TRUE(healthy());
  // The 41st from the same source gets a 503 and is closed, without waiting for a timeout.
  int extra = connect_from("127.0.0.7", port);
  ASSERT_GE(extra, 0);
  send_partial_head(extra);
  auto started = std::chrono::steady_clock::now();
  std::string answer = read_until_closed(extra, 3'000);
  ::close(extra);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_NE(answer.find("503"), std::string::npos) << answer;
  EXPECT_NE(answer.find("too many connections from 127.0.0.7"), std::string::npos) << answer;
  // Everyone else is still served.
  EXPECT_TRUE(healthy());
  EXPECT_EQ(call("GET", "/v1/jobs", "", cluster_->token()).status, 200);
  for (int fd : slow) ::close(fd);
}

TEST_F(Hostile, ARequestHeadThatNeverEndsIsClosedWithinTheHeaderTimeout) {
  int fd = connect_from("127.0.0.8", port_of(cluster_->address()));
  ASSERT_GE(fd, 0);
  send_partial_head(fd);
  auto started = std::chrono::steady_clock::now();
  std::string answer = read_until_closed(fd, 20'000);
  ::close(fd);
  EXPECT_EQ(answer.find("<timeout>"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(8));
}

TEST_F(Hostile, AConnectionThatSendsNothingIsClosedWithinSeconds) {
  // It waits in the kernel first (deferred accept), then for its request head.
  int fd = connect_from("127.0.0.9", port_of(cluster_->address()));
  ASSERT_GE(fd, 0);
  auto started = std::chrono::steady_clock::now();
  std::string answer = read_until_closed(fd, 30'000);
  ::close(fd);
  EXPECT_EQ(answer.find("<timeout>"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(25));
}

TEST_F(Hostile, HealthzTakesNoBody) {
  std::string answer = raw_exchange(port_of(cluster_->address()),
                                    "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                    "16000000\r\n\r\nxxxx");
  EXPECT_EQ(answer.rfind("HTTP/1.1 405", 0), 0u) << answer;
  EXPECT_TRUE(healthy());
}

TEST_F(Hostile, HeaderProblemsGetTheirOwnAnswers) {
  int port = port_of(cluster_->address());
  std::string token = cluster_->token();
  // Two Authorization headers: refused, not "the last one wins".
  std::string two =
      raw_exchange(port,
                   "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nobody\r\n"
                   "Authorization: Bearer " +
                       token + "\r\n\r\n");
  EXPECT_EQ(two.rfind("HTTP/1.1 400", 0), 0u) << two;
  EXPECT_NE(two.find("2 Authorization headers"), std::string::npos) << two;
  // 70 KB of headers: 431, and the message is about headers, not the body.
  std::string big = raw_exchange(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                           std::string(70 << 10, 'a') + "\r\n\r\n");
  EXPECT_EQ(big.rfind("HTTP/1.1 431", 0), 0u) << big.substr(0, 200);
  EXPECT_NE(big.find("request headers are above the limit"), std::string::npos);
  // A body from a caller without a token is not read: 401 at once.
  std::string unauth = raw_exchange(
      port, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n{\"command\"");
  EXPECT_EQ(unauth.rfind("HTTP/1.1 401", 0), 0u) << unauth;
  EXPECT_TRUE(healthy());
}

TEST_F(Hostile, DeeplyNestedJsonAndHugeNumbersGet400AndTheServerStaysUp) {
  std::string token = cluster_->token();
  std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  auto a = call("POST", "/v1/jobs", deep, token);
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.message().find("nest"), std::string::npos) << a.message();
  std::string deep_inside =
      R"({"command":["true"],"env":)" + std::string(50'000, '[') + std::string(50'000, ']') + "}";
  EXPECT_EQ(call("POST", "/v1/jobs", deep_inside, token).status, 400);
  for (const char* number : {"1e400", "-1e400"}) {
    auto n = call("POST", "/v1/jobs", std::string(R"({"command":["true"],"gpus":)") + number + "}",
                  token);
    EXPECT_EQ(n.status, 400) << number << ": " << n.message();
  }
  auto digits = call("POST", "/v1/jobs",
                     R"({"command":["true"],"gpus":)" + std::string(400, '9') + "}", token);
  EXPECT_EQ(digits.status, 400) << digits.message();
  EXPECT_TRUE(healthy());
}

TEST_F(Hostile, TokenRequestsThatMakeNoSenseAreRefused) {
  std::string token = cluster_->token();
  struct Case {
    std::string body;
    std::string expected;
  } cases[] = {
      {R"({"role":1})", "role must be a string"},
      {R"({"role":"agent","ttl":"0s"})", "must be a duration from 1s"},
      {R"({"role":"agent","ttl":"0.1ms"})", "must be a duration from 1s"},
      {R"({"role":"agent","ttl":"-5m"})", "must be a duration from 1s"},
      {R"({"role":"member","tenants":["no such/tenant"]})", "is not a tenant name"},
      {R"({"role":"member","tenants":[""]})", "is not a tenant name"},
      {R"({"role":"admin","tenants":["default"]})", "tenants are for member tokens"},
      {R"({"role":"agent","rol":"admin"})", "unknown field 'rol'"},
  };
  for (const auto& tc : cases) {
    auto a = call("POST", "/v1/tokens", tc.body, token);
    EXPECT_EQ(a.status, 400) << tc.body;
    EXPECT_NE(a.message().find(tc.expected), std::string::npos) << tc.body << ": " << a.message();
  }
  // A TTL that rounds to nothing is refused by the CLI's server too; "0" still means no expiry.
  auto forever = call("POST", "/v1/tokens", R"({"role":"agent","ttl":"0"})", token);
  EXPECT_EQ(forever.status, 201);
  EXPECT_EQ(forever.body.value("expires_at_ms", -1), 0);
  auto r = cluster_->cli({"token", "create", "--role", "agent", "--ttl", "0s"});
  EXPECT_NE(r.exit_code, 0);
}

TEST_F(Hostile, AStolenNodeCredentialCannotTakeOverAnotherNode) {
  std::string join = read_file(cluster_->data_dir() + "/agent.token");
  auto node = [](const std::string& name) {
    return json{{"name", name}, {"cpu_milli", 4000}, {"memory_mib", 8192}, {"gpus", json::array()}};
  };
  auto reg1 = call("POST", "/v1/agent/register", json{{"node", node("victim-a")}}.dump(), join);
  auto reg2 = call("POST", "/v1/agent/register", json{{"node", node("victim-b")}}.dump(), join);
  ASSERT_EQ(reg1.status, 200);
  ASSERT_EQ(reg2.status, 200);
  std::string id1 = reg1.body["node_id"], cred1 = reg1.body["credential"];
  std::string id2 = reg2.body["node_id"], cred2 = reg2.body["credential"];
  // Neither polls: both are down within a few seconds.
  ASSERT_TRUE(wait_until([&] {
    auto nodes = call("GET", "/v1/nodes", "", cluster_->token()).body;
    int down = 0;
    for (const auto& n : nodes["nodes"])
      if ((n.value("name", "") == "victim-a" || n.value("name", "") == "victim-b") &&
          n.value("state", "") == "down")
        ++down;
    return down == 2;
  }));
  // node a's credential, registering as node b: refused, whatever id it claims.
  for (const std::string& claimed : {id1, id2}) {
    auto a =
        call("POST", "/v1/agent/register",
             json{{"node", node("victim-b")}, {"node_id", claimed}, {"credential", cred1}}.dump(),
             cred1);
    EXPECT_EQ(a.status, 403) << a.message();
  }
  // A join token cannot take b's name over either, until an admin approves it.
  auto taken = call("POST", "/v1/agent/register", json{{"node", node("victim-b")}}.dump(), join);
  EXPECT_EQ(taken.status, 409);
  EXPECT_NE(taken.message().find("gpucloud node replace victim-b"), std::string::npos)
      << taken.message();
  // b itself re-joins with its own credential.
  auto own =
      call("POST", "/v1/agent/register",
           json{{"node", node("victim-b")}, {"node_id", id2}, {"credential", cred2}}.dump(), cred2);
  EXPECT_EQ(own.status, 200) << own.message();
  EXPECT_EQ(own.body.value("node_id", ""), id2);
  // Once b is down again, an admin approves a replacement: the join token takes the record and
  // b's old credential stops working.
  ASSERT_TRUE(wait_until([&] {
    json nodes = call("GET", "/v1/nodes", "", cluster_->token()).body;
    for (const auto& n : nodes["nodes"])
      if (n.value("name", "") == "victim-b") return n.value("state", "") == "down";
    return false;
  }));
  auto replace = cluster_->cli({"node", "replace", "victim-b"});
  EXPECT_EQ(replace.exit_code, 0) << replace.err;
  auto replaced = call("POST", "/v1/agent/register", json{{"node", node("victim-b")}}.dump(), join);
  EXPECT_EQ(replaced.status, 200) << replaced.message();
  EXPECT_EQ(replaced.body.value("node_id", ""), id2);
  auto old = call("POST", "/v1/agent/poll", json{{"node_id", id2}}.dump(), cred2);
  EXPECT_EQ(old.status, 401);
  // The approval is used up: a second join-token registration is refused again.
  EXPECT_NE(
      call("POST", "/v1/agent/register", json{{"node", node("victim-b")}}.dump(), join).status,
      200);
}

TEST_F(Hostile, JobListsComeInPagesThatTheCliFollows) {
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i)
    ids.push_back(cluster_->submit({"--name", "page-" + std::to_string(i), "--", "true"}));
  for (const auto& id : ids) cluster_->wait_done(id);
  std::string token = cluster_->token();
  std::vector<std::string> seen;
  std::string cursor;
  int pages = 0;
  for (;;) {
    auto a = call("GET", "/v1/jobs?all=1&limit=5" + (cursor.empty() ? "" : "&cursor=" + cursor), "",
                  token);
    ASSERT_EQ(a.status, 200);
    ASSERT_LE(a.body["jobs"].size(), 5u);
    ++pages;
    for (const auto& j : a.body["jobs"]) seen.push_back(j["id"]);
    if (!a.body.contains("next_cursor")) break;
    cursor = a.body["next_cursor"];
  }
  EXPECT_GE(pages, 3);
  EXPECT_TRUE(std::is_sorted(seen.rbegin(), seen.rend())) << "newest first";
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), seen.size()) << "no repeats";
  for (const auto& id : ids) EXPECT_NE(std::find(seen.begin(), seen.end(), id), seen.end()) << id;
  auto ps = cluster_->cli({"ps", "--all", "--json"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_GE(json::parse(ps.out).size(), ids.size());
  EXPECT_EQ(call("GET", "/v1/jobs?limit=0", "", token).status, 400);
  EXPECT_EQ(call("GET", "/v1/jobs?limit=100000", "", token).status, 400);
  EXPECT_EQ(call("GET", "/v1/jobs?cursor=not-a-cursor!", "", token).status, 400);
}

TEST_F(Hostile, CliSendsOddJobIdsSafelyAndKeepsCommandFlagsAfterTheSeparator) {
  auto logs = cluster_->cli({"logs", "<job id>"});
  EXPECT_EQ(logs.exit_code, 1);
  EXPECT_NE(logs.err.find("no job '<job id>'"), std::string::npos) << logs.err;
  EXPECT_EQ(logs.err.find("malformed"), std::string::npos) << logs.err;
  auto run = cluster_->cli({"run", "--wait", "--env", "X=1", "--", "sh", "-c", "echo hi $X"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::string id = run.out.substr(0, run.out.find('\n'));
  auto out = cluster_->cli({"logs", id});
  EXPECT_NE(out.out.find("hi 1"), std::string::npos) << out.out << out.err;
}

TEST_F(Hostile, TheDatabaseAndTokensAreClosedToOtherUsers) {
  for (const char* file : {"/state.db", "/admin.token", "/agent.token"}) {
    struct stat st {};
    ASSERT_EQ(::stat((cluster_->data_dir() + file).c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 077, 0u) << file << " is open to others";
  }
}

TEST_F(Hostile, TheJoinTokenIsNotVisibleInTheProcessList) {
  TempDir dir;
  const std::string secret = "join-secret-0123456789";
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string data = dir.path() + "/agent";
    ::execl(GPUCLOUD_BINARY, GPUCLOUD_BINARY, "agent", "--server", "http://127.0.0.1:9",
            "--join-token", secret.c_str(), "--data-dir", data.c_str(), "--sim-gpus", "1xT4",
            "--no-metrics", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string cmdline;
  ASSERT_TRUE(wait_until([&] {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    cmdline.assign(std::istreambuf_iterator<char>(in), {});
    return cmdline.find("--data-dir") != std::string::npos;
  }));
  // Give the process a moment to parse its flags; the token must then be gone from argv.
  EXPECT_TRUE(wait_until([&] {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    cmdline.assign(std::istreambuf_iterator<char>(in), {});
    return cmdline.find("xxxxxxxx") != std::string::npos;
  }));
  EXPECT_EQ(cmdline.find(secret), std::string::npos);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace gpucloud::testing
