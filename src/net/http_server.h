// HttpServer: HTTP/1.1 with keep-alive on Boost.Beast coroutines, one EventLoop thread.
// Handlers may answer later (long-poll) without holding a thread. Plain http, or https when
// given a certificate and key (TLS 1.2+ on OpenSSL).
//
// Limits, so that no client can lock others out (docs/security.md, "The network"):
// - a connection that sends nothing waits in the kernel (TCP_DEFER_ACCEPT) before it costs a
//   descriptor here;
// - total connections stay below the descriptor limit; when full, a new connection takes the
//   place of the oldest idle one (that has not sent a complete request head yet, or a kept-alive
//   one waiting for its next request), and is refused only when every connection is busy;
// - connections per source address are capped (16 times higher for sources marked trusted:
//   addresses that authenticated as a node); beyond the cap a connection is answered 503 and
//   closed at once;
// - a request head must arrive within header_timeout_ms of the connection (or of the first byte
//   on a kept-alive one); a body within body_timeout_ms, and only once the head was accepted by
//   the head check (an unauthenticated client is answered without its body being read).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "net/event_loop.h"
#include "net/http_types.h"

namespace gpucloud::net {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port
  size_t body_limit = 16 << 20;
  size_t header_limit = 64 << 10;
  int header_timeout_ms = 5'000;  // to read a request head (TLS handshake included)
  int body_timeout_ms = 60'000;   // to read an accepted request's body
  int idle_timeout_ms = 30'000;   // a kept-alive connection waiting for its next request
  int write_timeout_ms = 30'000;  // to write an answer
  // Open connections at most; 0 = the process's descriptor limit less a reserve (a quarter of
  // it, at most 1024) for the store, logs and outgoing connections.
  int max_connections = 0;
  int max_connections_per_source = 256;  // for sources not marked trusted
  std::string tls_cert_file;             // PEM; with tls_key_file, the server speaks only https
  std::string tls_key_file;
};

/// Looks at a request's head before its body is read: returns an answer to send at once (the
/// connection is then closed without reading the body), or nullopt to go on. The request has
/// no body yet.
using HeadCheck = std::function<std::optional<HttpResponse>(const HttpRequest& head)>;

/// Connection counts, for logs and tests.
struct HttpServerStats {
  int open_connections = 0;
  uint64_t refused_per_source = 0;  // refused at once: the source had too many
  uint64_t refused_full = 0;        // refused at once: every connection was in use
  uint64_t evicted_idle = 0;        // closed to make room: idle
  uint64_t header_timeouts = 0;     // closed: no complete request head in time
};

class HttpServer {
 public:
  HttpServer(EventLoop& loop, HttpHandler handler);
  ~HttpServer();
  /// Sets the check run on each request head (call before listen()).
  void set_head_check(HeadCheck check);
  /// Binds and starts accepting; returns the bound port (useful with port 0).
  Result<int> listen(const HttpServerConfig& config);
  /// Stops accepting new connections.
  void close();
  /// Raises the per-source cap for this address (e.g. one an agent authenticated from).
  /// Must be called on the loop's thread.
  void trust_source(const std::string& address);
  /// The effective connection limit (after listen()).
  int max_connections() const;
  /// Current counts. Must be called on the loop's thread.
  HttpServerStats stats() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with the connections' coroutines
};

/// Raises this process's soft limit on open files to its hard limit; returns the soft limit
/// now in force.
int raise_open_file_limit();

}  // namespace gpucloud::net
