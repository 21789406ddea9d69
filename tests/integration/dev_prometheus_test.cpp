// A real Prometheus (Debian's `prometheus`, installed by scripts/install-deps.sh) scrapes
// `gpucloud dev` with a metrics token; the values it stores match what the API reports.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "dev_cluster.h"
#include "metrics_text.h"
#include "net/http_client.h"

namespace gpucloud::testing {
namespace {

const char* const kPrometheus = "/usr/bin/prometheus";
const char* const kPromtool = "/usr/bin/promtool";
const std::string kScraper = "scraper-token-0123456789abcdef";

/// A child process, stopped (SIGTERM, then SIGKILL) and reaped by the destructor.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~ChildProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      ::usleep(50'000);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
};

std::string url_encode(const std::string& s) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

/// The value of a PromQL query that yields one sample, or nullopt (no sample yet, or an error).
std::optional<double> query(const std::string& prometheus_url, const std::string& promql) {
  auto client = net::HttpClient::create(prometheus_url);
  if (!client.ok()) return std::nullopt;
  auto r = (*client)->request("GET", "/api/v1/query?query=" + url_encode(promql), "", {}, 5'000);
  if (!r.ok() || r->status != 200) return std::nullopt;
  auto body = nlohmann::json::parse(r->body, nullptr, false);
  if (body.is_discarded() || body["status"] != "success") return std::nullopt;
  const auto& result = body["data"]["result"];
  if (!result.is_array() || result.size() != 1) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

// GPUs in use by every tenant, as GET /v1/tenants reports them.
double api_gpus_in_use(const DevCluster& c) {
  double total = 0;
  ApiAnswer tenants = api_call(c.address(), "GET", "/v1/tenants", "", c.token());
  for (const auto& t : tenants.body["tenants"])
    for (const auto& [model, gpus] : t["gpus_in_use"].items()) total += gpus.get<double>();
  return total;
}

TEST(DevPrometheus, ARealPrometheusScrapesTheServer) {
  if (::access(kPrometheus, X_OK) != 0)
    GTEST_SKIP() << kPrometheus
                 << " is missing: install Debian's prometheus package (scripts/install-deps.sh "
                    "does) to run this test";
  TempDir dir;
  std::string token_file = dir.path() + "/metrics.token";
  std::ofstream(token_file) << kScraper << "\n";
  DevCluster c({"--sim-gpus", "8xA100-80GB", "--metrics-token-file", token_file});

  // The scraped text passes promtool's lint.
  if (::access(kPromtool, X_OK) == 0) {
    std::string scraped = dir.path() + "/scraped.txt";
    std::ofstream(scraped) << scrape_metrics(c.address(), kScraper).body;
    CommandResult check =
        run_command({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + scraped});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }

  std::string target = c.address().substr(c.address().find("://") + 3);
  std::string config = dir.path() + "/prometheus.yml";
  std::ofstream(config) << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                           "scrape_configs:\n"
                           "  - job_name: gpucloud\n"
                           "    authorization: {credentials_file: " +
                               token_file +
                               "}\n"
                               "    static_configs: [{targets: ['" +
                               target + "']}]\n";
  int port = free_port();
  ASSERT_GT(port, 0);
  std::string prometheus_url = "http://127.0.0.1:" + std::to_string(port);
  ChildProcess prometheus(
      {kPrometheus, "--config.file=" + config, "--storage.tsdb.path=" + dir.path() + "/tsdb",
       "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      dir.path() + "/prometheus.log");
  auto log = [&] {
    std::ifstream in(dir.path() + "/prometheus.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };

  // Prometheus reached the target, and the series arrived.
  ASSERT_TRUE(wait_until([&] { return query(prometheus_url, "up{job=\"gpucloud\"}") == 1; },
                         std::chrono::seconds(60)))
      << log();
  ASSERT_TRUE(wait_until([&] {
    return query(prometheus_url, "sum(gpucloud_jobs{state=\"running\"})") == 0;
  })) << log();
  EXPECT_EQ(query(prometheus_url, "gpucloud_build_info"), 1);

  std::string id = c.submit({"--gpus", "2", "--", "sleep", "60"});
  ASSERT_TRUE(wait_until([&] { return c.job(id)["state"] == "running"; }));
  ASSERT_TRUE(wait_until([&] {
    return query(prometheus_url, "sum(gpucloud_jobs{state=\"running\"})") == 1;
  })) << log();
  // What Prometheus holds matches what the API reports.
  size_t running = 0;
  ApiAnswer jobs = api_call(c.address(), "GET", "/v1/jobs", "", c.token());
  for (const auto& j : jobs.body["jobs"]) running += j["state"] == "running";
  EXPECT_EQ(running, 1u);
  double in_use = api_gpus_in_use(c);
  EXPECT_EQ(in_use, 2);
  ASSERT_TRUE(wait_until([&] {
    return query(prometheus_url, "sum(gpucloud_gpus_allocated)") == in_use;
  })) << log();
  EXPECT_EQ(query(prometheus_url, "sum(gpucloud_jobs_submitted_total)"), 1);
  EXPECT_EQ(c.cli({"cancel", id}).exit_code, 0);
}

}  // namespace
}  // namespace gpucloud::testing
