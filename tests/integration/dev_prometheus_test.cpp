// A real Prometheus (Debian's `prometheus`, installed by scripts/install-deps.sh) scrapes
// `gpucloud dev` with a metrics token; the values it stores match what the API reports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "dev_cluster.h"
#include "metrics_text.h"
#include "prometheus_harness.h"

namespace gpucloud::testing {
namespace {

const char* const kPrometheus = kPrometheusBinary;
const char* const kPromtool = kPromtoolBinary;
const std::string kScraper = "scraper-token-0123456789abcdef";

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
  RealPrometheus real(config, dir.path());
  const std::string& prometheus_url = real.url();
  auto log = [&] { return real.log(); };

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
