// The agent's GPU metrics: dcgm-exporter's names and labels, the job and tenant holding a GPU,
// and GET /metrics with its token.
#include "agent/gpu_metrics.h"

#include <gtest/gtest.h>

#include "agent/metrics_endpoint.h"
#include "metrics/exposition.h"
#include "net/crypto.h"
#include "net/http_client.h"

namespace gpucloud::agent {
namespace {

NodeInfo two_gpu_node() {
  NodeInfo node;
  node.name = "gpu-7";
  for (int i = 0; i < 2; ++i) {
    Gpu g;
    g.index = i;
    g.uuid = "GPU-000" + std::to_string(i);
    g.name = "NVIDIA A100-SXM4-80GB";
    g.model = "A100";
    g.memory_mib = 81920;
    g.pci_bus_id = "00000000:0" + std::to_string(i) + ":00.0";
    node.gpus.push_back(g);
  }
  return node;
}

std::vector<gpu::GpuTelemetry> readings() {
  gpu::GpuTelemetry a;
  a.index = 0;
  a.utilization_pct = 87;
  a.memory_used_mib = 1000;
  a.memory_free_mib = 80920;
  a.temperature_c = 71;
  a.power_w = 300;
  a.sm_clock_mhz = 1410;
  a.last_xid = 79;
  gpu::GpuTelemetry b;
  b.index = 1;
  return {a, b};
}

std::string text(const std::vector<GpuHolder>& holders) {
  return metrics::render(gpu_metric_families(two_gpu_node(), readings(), holders),
                         metrics::Format::kPrometheusText);
}

bool has_line(const std::string& body, const std::string& line) {
  return body.find(line + "\n") != std::string::npos;
}

TEST(GpuMetrics, EveryGpuHasDcgmExporterSeries) {
  std::string body = text({});
  EXPECT_TRUE(
      has_line(body,
               "DCGM_FI_DEV_GPU_UTIL{Hostname=\"gpu-7\",UUID=\"GPU-0000\",device=\"nvidia0\","
               "gpu=\"0\",modelName=\"NVIDIA A100-SXM4-80GB\",pci_bus_id=\"00000000:00:00.0\"} 87"))
      << body;
  for (const char* line :
       {"DCGM_FI_DEV_FB_USED{", "DCGM_FI_DEV_FB_FREE{", "DCGM_FI_DEV_GPU_TEMP{",
        "DCGM_FI_DEV_POWER_USAGE{", "DCGM_FI_DEV_SM_CLOCK{", "DCGM_FI_DEV_XID_ERRORS{"})
    EXPECT_NE(body.find(line), std::string::npos) << line;
  EXPECT_NE(body.find("DCGM_FI_DEV_XID_ERRORS{Hostname=\"gpu-7\",UUID=\"GPU-0000\""),
            std::string::npos);
  EXPECT_NE(
      body.find(
          "gpu=\"0\",modelName=\"NVIDIA A100-SXM4-80GB\",pci_bus_id=\"00000000:00:00.0\"} 79"),
      std::string::npos)
      << body;
  EXPECT_NE(body.find("# TYPE DCGM_FI_DEV_GPU_TEMP gauge"), std::string::npos);
  EXPECT_EQ(body.find("pod="), std::string::npos);  // nobody holds a GPU
}

TEST(GpuMetrics, AHeldGpuCarriesItsJobAndTenant) {
  std::string body = text({{1, "j-42", "vision"}});
  EXPECT_NE(
      body.find("DCGM_FI_DEV_GPU_UTIL{Hostname=\"gpu-7\",UUID=\"GPU-0001\",device=\"nvidia1\","
                "gpu=\"1\",hpc_job=\"j-42\",modelName=\"NVIDIA A100-SXM4-80GB\","
                "namespace=\"vision\",pci_bus_id=\"00000000:01:00.0\",pod=\"j-42\","
                "tenant=\"vision\"} 0"),
      std::string::npos)
      << body;
  // GPU 0 stays without job labels.
  EXPECT_NE(
      body.find("DCGM_FI_DEV_GPU_UTIL{Hostname=\"gpu-7\",UUID=\"GPU-0000\",device=\"nvidia0\","
                "gpu=\"0\",modelName="),
      std::string::npos);
}

TEST(GpuMetrics, ASharedGpuHasOneSeriesPerJob) {
  std::string body = text({{0, "j-1", "a"}, {0, "j-2", "b"}});
  size_t count = 0;
  for (size_t at = body.find("DCGM_FI_DEV_GPU_UTIL{"); at != std::string::npos;
       at = body.find("DCGM_FI_DEV_GPU_UTIL{", at + 1))
    ++count;
  EXPECT_EQ(count, 3u);  // GPU 0 twice (j-1, j-2), GPU 1 once
  EXPECT_NE(body.find("pod=\"j-1\",tenant=\"a\"} 87"), std::string::npos) << body;
  EXPECT_NE(body.find("pod=\"j-2\",tenant=\"b\"} 87"), std::string::npos) << body;
}

TEST(MetricsAddress, WildcardsLeaveTheHostToTheScraper) {
  EXPECT_EQ(metrics_address("0.0.0.0", 9400), ":9400");
  EXPECT_EQ(metrics_address("::", 9400), ":9400");
  EXPECT_EQ(metrics_address("10.0.0.5", 9400), "10.0.0.5:9400");
  EXPECT_EQ(metrics_address("fd00::5", 9400), "[fd00::5]:9400");
}

class MetricsEndpointTest : public ::testing::Test {
 protected:
  net::HttpResponse get(const std::string& path, const std::string& token = "") {
    auto client = net::HttpClient::create("http://127.0.0.1:" + std::to_string(endpoint_->port()));
    EXPECT_TRUE(client.ok());
    std::map<std::string, std::string> headers;
    if (!token.empty()) headers["Authorization"] = "Bearer " + token;
    auto r = (*client)->request("GET", path, "", headers, 5000);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : net::HttpResponse{0, "", "", {}};
  }
  void start(const std::string& token_sha256) {
    MetricsEndpointConfig config;
    config.host = "127.0.0.1";
    config.port = 0;
    config.token_sha256 = token_sha256;
    auto e = MetricsEndpoint::start(config, [](metrics::Format f) {
      return f == metrics::Format::kOpenMetrics ? "om\n" : "DCGM_FI_DEV_GPU_UTIL 1\n";
    });
    ASSERT_TRUE(e.ok()) << e.error().message;
    endpoint_ = std::move(*e);
    ASSERT_GT(endpoint_->port(), 0);
  }
  std::unique_ptr<MetricsEndpoint> endpoint_;
};

TEST_F(MetricsEndpointTest, ServesMetricsAndNothingElse) {
  start("");
  auto r = get("/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "DCGM_FI_DEV_GPU_UTIL 1\n");
  EXPECT_EQ(get("/v1/jobs").status, 404);
}

TEST_F(MetricsEndpointTest, WithATokenOnlyItsHolderReads) {
  const std::string token = "agent-scraper-0123456789";
  start(net::sha256_hex(token));
  EXPECT_EQ(get("/metrics").status, 401);
  EXPECT_EQ(get("/metrics", "wrong-token-0123456789").status, 401);
  auto r = get("/metrics", token);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "DCGM_FI_DEV_GPU_UTIL 1\n");
}

TEST_F(MetricsEndpointTest, ATakenPortIsAClearError) {
  start("");
  MetricsEndpointConfig config;
  config.host = "127.0.0.1";
  config.port = endpoint_->port();
  auto second = MetricsEndpoint::start(config, [](metrics::Format) { return ""; });
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("--metrics-listen"), std::string::npos)
      << second.error().message;
}

}  // namespace
}  // namespace gpucloud::agent
