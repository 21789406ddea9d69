// HttpServer: HTTP/1.1 with keep-alive on Boost.Beast coroutines, one EventLoop thread.
// Handlers may answer later (long-poll) without holding a thread.
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
