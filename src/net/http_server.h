// HttpServer: HTTP/1.1 with keep-alive on Boost.Beast coroutines, one EventLoop thread.
// Handlers may answer later (long-poll) without holding a thread. Plain http, or https when
// given a certificate and key (TLS 1.2+ on OpenSSL).
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "net/event_loop.h"
#include "net/http_types.h"

namespace gpucloud::net {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port
  size_t body_limit = 16 << 20;
  int idle_timeout_ms = 120'000;
  std::string tls_cert_file;  // PEM; with tls_key_file, the server speaks only https
  std::string tls_key_file;
};

class HttpServer {
 public:
  HttpServer(EventLoop& loop, HttpHandler handler);
  ~HttpServer();
  /// Binds and starts accepting; returns the bound port (useful with port 0).
  Result<int> listen(const HttpServerConfig& config);
  /// Stops accepting new connections.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucloud::net
