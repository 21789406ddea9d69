#include <gtest/gtest.h>

#include "server/server_metrics.h"

namespace gpucloud::server {
namespace {

TEST(ApiRouteTemplate, IdsBecomePlaceholdersAndUnknownPathsOther) {
  EXPECT_EQ(api_route_template("/v1/jobs"), "/v1/jobs");
  EXPECT_EQ(api_route_template("/v1/jobs/0a1b2c3d"), "/v1/jobs/{id}");
  EXPECT_EQ(api_route_template("/v1/jobs/0a1b2c3d/logs"), "/v1/jobs/{id}/logs");
  EXPECT_EQ(api_route_template("/v1/jobs/0a1b2c3d/cancel"), "/v1/jobs/{id}/cancel");
  EXPECT_EQ(api_route_template("/v1/nodes/gpu-7/drain"), "/v1/nodes/{node}/drain");
  EXPECT_EQ(api_route_template("/v1/tokens/ci/revoke"), "/v1/tokens/{name}/revoke");
  EXPECT_EQ(api_route_template("/metrics"), "/metrics");
  EXPECT_EQ(api_route_template("/v1/events"), "/v1/events");
  EXPECT_EQ(api_route_template("/v1/audit/verify"), "/v1/audit/verify");
  EXPECT_EQ(api_route_template("/v1/cost"), "/v1/cost");
  // Anything a client makes up stays one label value, whatever its length or content.
  EXPECT_EQ(api_route_template("/v1/jobs/x/../../etc/passwd"), "other");
  EXPECT_EQ(api_route_template("/v1/jobs/"), "other");
  EXPECT_EQ(api_route_template("/v1/nodes/gpu-7/reboot"), "other");
  EXPECT_EQ(api_route_template("/" + std::string(10'000, 'a')), "other");
  EXPECT_EQ(api_route_template("/v1/jobs/a\"b\nc"), "/v1/jobs/{id}");
}

}  // namespace
}  // namespace gpucloud::server
