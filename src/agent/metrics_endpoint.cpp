#include "agent/metrics_endpoint.h"

#include <fmt/format.h>

#include "net/crypto.h"
#include "net/event_loop.h"
#include "net/http_server.h"

namespace gpucloud::agent {

namespace {

net::HttpResponse plain(int status, const std::string& text) {
  net::HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = text + "\n";
  return r;
}

}  // namespace

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const MetricsEndpointConfig& config,
                                                                Render render) {
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  e->loop_ = std::make_unique<net::EventLoop>();
  std::string token_sha256 = config.token_sha256;
  auto refusal = [token_sha256](const net::HttpRequest& req) -> std::optional<net::HttpResponse> {
    if (req.path != "/metrics")
      return plain(404, fmt::format("{}: not found; this agent serves only GET /metrics",
                                    req.path.substr(0, 200)));
    if (req.method != "GET" && req.method != "HEAD") {
      auto r = plain(405, "/metrics accepts only GET or HEAD");
      r.headers.push_back({"Allow", "GET, HEAD"});
      return r;
    }
    if (token_sha256.empty()) return std::nullopt;
    std::string authorization = req.header("authorization");
    const std::string bearer = "Bearer ";
    if (authorization.rfind(bearer, 0) == 0 &&
        net::constant_time_equal(net::sha256_hex(authorization.substr(bearer.size())),
                                 token_sha256))
      return std::nullopt;
    auto r = plain(401,
                   "/metrics needs the agent's --metrics-token-file token as "
                   "`Authorization: Bearer TOKEN` (docs/metrics.md)");
    r.headers.push_back({"WWW-Authenticate", "Bearer"});
    return r;
  };
  e->http_ = std::make_unique<net::HttpServer>(
      *e->loop_, [refusal, render](net::HttpRequest&& req, net::Responder respond) {
        if (auto refused = refusal(req)) return respond(*refused);
        metrics::Format format = metrics::negotiate_format(req.header("accept"));
        net::HttpResponse r;
        r.content_type = metrics::content_type(format);
        r.body = render(format);
        respond(std::move(r));
      });
  // Refused requests are answered before their body is read.
  e->http_->set_head_check(refusal);
  net::HttpServerConfig http;
  http.host = config.host;
  http.port = config.port;
  http.body_limit = 64 << 10;
  http.max_connections = config.max_connections;
  http.max_connections_per_source = config.max_connections_per_source;
  auto port = e->http_->listen(http);
  if (!port) {
    std::string why = port.error().message;
    why = why.substr(0, why.find("; choose another"));  // the server's --listen does not apply
    return Error{port.error().code,
                 fmt::format("agent metrics on {}: {}; choose another with --metrics-listen "
                             "HOST:PORT or turn them off with --no-metrics",
                             metrics_address(config.host, config.port), why)};
  }
  e->port_ = *port;
  e->thread_ = std::thread([loop = e->loop_.get()] { loop->run(); });
  return e;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (loop_) {
    loop_->post([http = http_.get()] { http->close(); });
    loop_->stop();
  }
  if (thread_.joinable()) thread_.join();
  http_.reset();
  loop_.reset();
}

std::string metrics_address(const std::string& host, int port) {
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]")
    return fmt::format(":{}", port);
  if (host.find(':') != std::string::npos && host.front() != '[')
    return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

}  // namespace gpucloud::agent
