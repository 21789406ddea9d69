#include "net/http_server.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <list>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "common/clock.h"
#include "net/asio_ssl.h"

namespace gpucloud::net {
namespace {

using std::chrono::milliseconds;

// A response that a handler delivers later; the session waits on the timer until then.
struct PendingResponse {
  explicit PendingResponse(asio::any_io_executor ex)
      : timer(ex, asio::steady_timer::time_point::max()) {}
  asio::steady_timer timer;
  std::optional<HttpResponse> response;
};

// The request as HttpRequest, without its body. Counts the Authorization headers it carried.
HttpRequest head_of(const http::request<http::string_body>& req, const std::string& remote,
                    int& authorization_headers) {
  HttpRequest out;
  out.method = std::string(req.method_string());
  out.target = std::string(req.target());
  size_t q = out.target.find('?');
  out.path = url_decode(out.target.substr(0, q));
  if (q != std::string::npos) out.query = parse_query(out.target.substr(q + 1));
  authorization_headers = 0;
  for (const auto& field : req) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "authorization") ++authorization_headers;
    out.headers[name] = std::string(field.value());
  }
  out.remote_address = remote;
  return out;
}

std::string error_body(const char* code, const std::string& message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    escaped += c;
  }
  return fmt::format(R"({{"error":{{"code":"{}","message":"{}"}}}})", code, escaped) + "\n";
}

HttpResponse error_answer(int status, const char* code, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = error_body(code, message);
  return r;
}

// "::ffff:1.2.3.4" -> "1.2.3.4": one source, whichever socket family it came in on.
std::string source_of(const tcp::socket& socket) {
  boost::system::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return "";
  auto address = ep.address();
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).to_string();
  return address.to_string();
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  // One open connection, as the limits see it.
  struct Connection {
    std::string source;
    std::function<void()> close;  // closes the socket; only on the loop's thread
    // Set while the connection may be closed to make room: before its first request head, and
    // while a kept-alive connection waits for its next request.
    std::optional<std::list<Connection*>::iterator> evictable;
  };

  EventLoop& loop;
  HttpHandler handler;
  HeadCheck head_check;
  HttpServerConfig config;
  int max_connections = 0;
  std::optional<tcp::acceptor> acceptor;
  std::optional<ssl::context> tls;  // set when serving https
  std::unordered_map<std::string, int> per_source;
  std::unordered_set<std::string> trusted;
  std::list<Connection*> evictable;  // connections that may be closed, oldest first
  HttpServerStats stats;
  std::minstd_rand jitter{std::random_device{}()};

  Impl(EventLoop& l, HttpHandler h) : loop(l), handler(std::move(h)) {}
  asio::io_context& ioc() { return *static_cast<asio::io_context*>(loop.native_handle()); }

  // Counts a connection in; the destructor counts it out (the coroutine frame owns it).
  struct Registration {
    Impl& impl;
    Connection& conn;
    Registration(Impl& i, Connection& c) : impl(i), conn(c) { impl.make_evictable(conn); }
    ~Registration() {
      impl.mark_used(conn);
      --impl.stats.open_connections;
      auto it = impl.per_source.find(conn.source);
      if (it != impl.per_source.end() && --it->second <= 0) impl.per_source.erase(it);
    }
  };

  // The time a new connection has for its first request head: the header timeout less up to a
  // quarter, drawn per connection, so that connections opened together (an attack) are not all
  // closed, and reopened, in the same instant.
  milliseconds first_head_timeout() {
    std::uniform_int_distribution<int> quarter(0, config.header_timeout_ms / 4);
    return milliseconds(config.header_timeout_ms - quarter(jitter));
  }

  void make_evictable(Connection& conn) {
    if (conn.evictable) return;
    evictable.push_back(&conn);
    conn.evictable = std::prev(evictable.end());
  }

  void mark_used(Connection& conn) {
    if (!conn.evictable) return;
    evictable.erase(*conn.evictable);
    conn.evictable.reset();
  }

  // Answers 503 on a plain connection (best effort, never blocking) and closes it.
  void refuse(tcp::socket& socket, const std::string& why) {
    boost::system::error_code ec;
    if (!tls) {
      std::string body = error_body("unavailable", why);
      std::string answer = fmt::format(
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
          "Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{}",
          body.size(), body);
      socket.non_blocking(true, ec);
      socket.send(asio::buffer(answer), 0, ec);
    }
    socket.close(ec);
  }

  // self keeps this alive while the coroutine exists (its frame may outlive the HttpServer).
  asio::awaitable<void> accept_loop(std::shared_ptr<Impl> self) {
    TimeMs last_warning = 0;
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket =
          co_await acceptor->async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
        // Out of file descriptors, most likely: wait a little instead of spinning.
        TimeMs now = std::chrono::duration_cast<milliseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
        if (now - last_warning > 10'000) {
          spdlog::warn("http: accept failed: {}; pausing accepts for 100 ms ({} connections open)",
                       ec.message(), stats.open_connections);
          last_warning = now;
        }
        asio::steady_timer pause(co_await asio::this_coro::executor, milliseconds(100));
        co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      std::string source = source_of(socket);
      // Nodes' addresses get more room (many agents may share one NAT address), not unlimited.
      int cap = trusted.count(source) ? config.max_connections_per_source * 16
                                      : config.max_connections_per_source;
      auto counted = per_source.find(source);
      if (counted != per_source.end() && counted->second >= cap) {
        ++stats.refused_per_source;
        refuse(socket, fmt::format("too many connections from {} (at most {}); reuse connections",
                                   source, cap));
        continue;
      }
      if (stats.open_connections >= max_connections) {
        if (evictable.empty()) {
          ++stats.refused_full;
          refuse(socket, fmt::format("the server is at its limit of {} connections; retry later",
                                     max_connections));
          continue;
        }
        Connection* victim = evictable.front();
        mark_used(*victim);
        victim->close();
        ++stats.evicted_idle;
      }
      socket.set_option(tcp::no_delay(true), ec);
      ++stats.open_connections;
      ++per_source[source];
      asio::co_spawn(ioc(), session(std::move(socket), std::move(source), self), asio::detached);
    }
  }

  asio::awaitable<void> session(tcp::socket socket, std::string source,
                                std::shared_ptr<Impl> self) {
    (void)self;  // held by the frame: the limits' state outlives every connection
    Connection conn;
    conn.source = std::move(source);
    Registration registration(*this, conn);
    boost::system::error_code ec;
    if (!tls) {
      beast::tcp_stream stream(std::move(socket));
      conn.close = [&stream] {
        boost::system::error_code ignored;
        stream.socket().close(ignored);
      };
      stream.expires_after(first_head_timeout());
      co_await serve(stream, conn);
      stream.socket().shutdown(tcp::socket::shutdown_send, ec);
      co_return;
    }
    TlsStream stream(std::move(socket), *tls);
    conn.close = [&stream] {
      boost::system::error_code ignored;
      beast::get_lowest_layer(stream).socket().close(ignored);
    };
    // The handshake counts towards the time to send the first request head.
    beast::get_lowest_layer(stream).expires_after(first_head_timeout());
    co_await stream.async_handshake(ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      spdlog::debug("http: TLS handshake with {} failed: {}", conn.source, ec.message());
      co_return;
    }
    co_await serve(stream, conn);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
    co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
  }

  // Writes a final answer, then reads and drops what the client still sends (up to 2 s and
  // 1 MiB), so that closing the socket does not reset the connection before the client has
  // read the answer.
  template <class Stream>
  asio::awaitable<void> answer_and_close(Stream& stream, const HttpResponse& answer) {
    boost::system::error_code ec;
    auto& lowest = beast::get_lowest_layer(stream);
    http::response<http::string_body> res{static_cast<http::status>(answer.status), 11};
    res.set(http::field::server, "gpucloud");
    res.set(http::field::content_type, answer.content_type);
    for (const auto& [k, v] : answer.headers) res.set(k, v);
    res.body() = answer.body;
    res.keep_alive(false);
    res.prepare_payload();
    lowest.expires_after(milliseconds(config.write_timeout_ms));
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    if (!tls) lowest.socket().shutdown(tcp::socket::shutdown_send, ec);
    lowest.expires_after(std::chrono::seconds(2));
    char sink[65536];
    size_t drained = 0;
    while (!ec && drained < (1 << 20))
      drained += co_await stream.async_read_some(asio::buffer(sink),
                                                 asio::redirect_error(asio::use_awaitable, ec));
  }

  // The answer to a failed read, or nullopt when the connection just ended or timed out.
  std::optional<HttpResponse> read_failure(const boost::system::error_code& ec, bool in_head) {
    if (ec == http::error::header_limit)
      return error_answer(431, "too_large",
                          fmt::format("request headers are above the limit of {} bytes; send "
                                      "fewer or shorter headers",
                                      config.header_limit));
    if (ec == http::error::body_limit)
      return error_answer(
          413, "too_large",
          fmt::format("request body is above the limit of {} bytes", config.body_limit));
    if (ec == beast::error::timeout) {
      if (in_head) ++stats.header_timeouts;
      return std::nullopt;
    }
    if (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
        ec == asio::error::eof || ec == asio::error::operation_aborted ||
        ec == asio::error::bad_descriptor || ec == ssl::error::stream_truncated)
      return std::nullopt;
    return error_answer(400, "invalid_argument", "malformed HTTP request: " + ec.message());
  }

  // Reads requests and writes responses on one connection until it closes.
  template <class Stream>
  asio::awaitable<void> serve(Stream& stream, Connection& conn) {
    auto& lowest = beast::get_lowest_layer(stream);
    beast::flat_buffer buffer;
    bool first = true;
    for (;;) {
      boost::system::error_code ec;
      if (!first) {
        // A kept-alive connection may wait idle_timeout_ms for its next request; once that
        // starts, its head must arrive within header_timeout_ms.
        if (buffer.size() == 0) {
          make_evictable(conn);
          lowest.expires_after(milliseconds(config.idle_timeout_ms));
          size_t n = co_await stream.async_read_some(buffer.prepare(4096),
                                                     asio::redirect_error(asio::use_awaitable, ec));
          mark_used(conn);
          if (ec) co_return;
          buffer.commit(n);
        }
        lowest.expires_after(milliseconds(config.header_timeout_ms));
      }
      http::request_parser<http::string_body> parser;
      parser.body_limit(config.body_limit);
      parser.header_limit(static_cast<std::uint32_t>(config.header_limit));
      co_await http::async_read_header(stream, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
      first = false;
      mark_used(conn);
      if (ec) {
        if (auto answer = read_failure(ec, true)) co_await answer_and_close(stream, *answer);
        co_return;
      }
      int authorization_headers = 0;
      HttpRequest request = head_of(parser.get(), conn.source, authorization_headers);
      std::optional<HttpResponse> early;
      if (authorization_headers > 1)
        early = error_answer(400, "invalid_argument",
                             fmt::format("the request has {} Authorization headers; send one",
                                         authorization_headers));
      else if (head_check)
        early = head_check(request);
      if (early) {
        co_await answer_and_close(stream, *early);
        co_return;
      }
      if (!parser.is_done()) {
        if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
          http::response<http::empty_body> go_on{http::status::continue_, 11};
          lowest.expires_after(milliseconds(config.write_timeout_ms));
          co_await http::async_write(stream, go_on, asio::redirect_error(asio::use_awaitable, ec));
          if (ec) co_return;
        }
        lowest.expires_after(milliseconds(config.body_timeout_ms));
        co_await http::async_read(stream, buffer, parser,
                                  asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
          if (auto answer = read_failure(ec, false)) co_await answer_and_close(stream, *answer);
          co_return;
        }
      }
      auto req = parser.release();
      request.body = std::move(req.body());
      bool keep_alive = req.keep_alive();
      unsigned version = req.version();
      bool head = req.method() == http::verb::head;
      auto pending = std::make_shared<PendingResponse>(stream.get_executor());
      auto ex = stream.get_executor();
      lowest.expires_never();
      handler(std::move(request),
              [pending, ex, done = std::make_shared<std::atomic<bool>>(false)](HttpResponse r) {
                if (done->exchange(true)) return;
                asio::post(ex, [pending, r = std::move(r)]() mutable {
                  pending->response = std::move(r);
                  pending->timer.cancel();
                });
              });
      while (!pending->response)
        co_await pending->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      HttpResponse& out = *pending->response;
      http::response<http::string_body> res{static_cast<http::status>(out.status), version};
      res.set(http::field::server, "gpucloud");
      res.set(http::field::content_type, out.content_type);
      for (const auto& [k, v] : out.headers) res.set(k, v);
      res.keep_alive(keep_alive);
      res.body() = std::move(out.body);
      res.prepare_payload();
      if (head) res.body().clear();
      lowest.expires_after(milliseconds(config.write_timeout_ms));
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !keep_alive) co_return;
    }
  }
};

HttpServer::HttpServer(EventLoop& loop, HttpHandler handler)
    : impl_(std::make_shared<Impl>(loop, std::move(handler))) {}
HttpServer::~HttpServer() = default;

void HttpServer::set_head_check(HeadCheck check) {
  impl_->head_check = std::move(check);
}

void HttpServer::trust_source(const std::string& address) {
  if (impl_->trusted.size() < 100'000) impl_->trusted.insert(address);
}

int HttpServer::max_connections() const {
  return impl_->max_connections;
}

HttpServerStats HttpServer::stats() const {
  return impl_->stats;
}

int raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur > 1'000'000 ? 1'000'000 : static_cast<int>(limit.rlim_cur);
}

Result<int> HttpServer::listen(const HttpServerConfig& config) {
  impl_->config = config;
  if (config.max_connections > 0) {
    impl_->max_connections = config.max_connections;
  } else {
    rlimit limit{};
    int files = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 1'000'000
                    ? static_cast<int>(limit.rlim_cur)
                    : 1'000'000;
    impl_->max_connections = std::max(16, files - std::min(1024, files / 4));
  }
  boost::system::error_code ec;
  if (!config.tls_cert_file.empty() || !config.tls_key_file.empty()) {
    if (config.tls_cert_file.empty() || config.tls_key_file.empty())
      return invalid("TLS needs both a certificate and a key (--tls-cert FILE --tls-key FILE)");
    auto& ctx = impl_->tls.emplace(ssl::context::tls_server);
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    ctx.use_certificate_chain_file(config.tls_cert_file, ec);
    if (ec)
      return invalid(fmt::format("--tls-cert {}: {}; give a PEM certificate (chain)",
                                 config.tls_cert_file, ec.message()));
    ctx.use_private_key_file(config.tls_key_file, ssl::context::pem, ec);
    if (ec)
      return invalid(fmt::format("--tls-key {}: {}; give the PEM private key of the certificate",
                                 config.tls_key_file, ec.message()));
    // Resumed sessions spare reconnecting agents a full handshake after a server hiccup.
    SSL_CTX_set_session_cache_mode(ctx.native_handle(), SSL_SESS_CACHE_SERVER);
  }
  auto address = asio::ip::make_address(config.host, ec);
  if (ec)
    return invalid(
        fmt::format("listen address '{}' is not an IP address: {}", config.host, ec.message()));
  tcp::endpoint endpoint(address, static_cast<unsigned short>(config.port));
  impl_->acceptor.emplace(impl_->ioc());
  auto& acc = *impl_->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Error{ErrorCode::kUnavailable,
                 fmt::format("cannot listen on {}:{}: {}; choose another with --listen HOST:PORT",
                             config.host, config.port, ec.message())};
  int port = acc.local_endpoint().port();
  // Connections that send nothing stay in the kernel for a while, costing no descriptor here.
  int defer_s = std::max(1, config.header_timeout_ms / 1000);
  ::setsockopt(acc.native_handle(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof defer_s);
  asio::co_spawn(impl_->ioc(), impl_->accept_loop(impl_), asio::detached);
  return port;
}

void HttpServer::close() {
  asio::post(impl_->ioc(), [impl = impl_] {
    boost::system::error_code ec;
    if (impl->acceptor) impl->acceptor->close(ec);
  });
}

}  // namespace gpucloud::net
