// MetricsEndpoint: the agent's GET /metrics, on its own HTTP server and thread, apart from the
// agent's connection to the server (a slow or hostile scraper never delays a poll).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/result.h"
#include "metrics/exposition.h"

namespace gpucloud::net {
class EventLoop;
class HttpServer;
}  // namespace gpucloud::net

namespace gpucloud::agent {

struct MetricsEndpointConfig {
  std::string host = "0.0.0.0";
  int port = 9400;  // dcgm-exporter's port; 0 = any free port
  // SHA-256 (hex) of the token a scraper must send as `Authorization: Bearer`; "" = none.
  std::string token_sha256;
  // Scrapers are few: small limits keep a flood of connections from costing the node much.
  int max_connections = 64;
  int max_connections_per_source = 8;
};

/// Serves GET (or HEAD) /metrics with the text `render` makes for the format the scraper asked
/// for; 401 without the token when one is set; 404 on any other path; 405 on other methods.
class MetricsEndpoint {
 public:
  using Render = std::function<std::string(metrics::Format)>;

  /// Binds and starts serving on a thread of its own. Fails when the address cannot be bound.
  static Result<std::unique_ptr<MetricsEndpoint>> start(const MetricsEndpointConfig& config,
                                                        Render render);
  /// Stops serving and joins the thread.
  ~MetricsEndpoint();

  /// The bound port (the chosen one when the config said 0).
  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;

  std::unique_ptr<net::EventLoop> loop_;
  std::unique_ptr<net::HttpServer> http_;
  std::thread thread_;
  int port_ = 0;
};

/// The address other machines scrape for a server bound to host:port: "HOST:PORT", or ":PORT"
/// when host is a wildcard (0.0.0.0, ::, "") and the scraper should use the node's address.
/// IPv6 hosts are bracketed.
std::string metrics_address(const std::string& host, int port);

}  // namespace gpucloud::agent
