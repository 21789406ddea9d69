#include "net/http_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>

#include "net/asio_ssl.h"

namespace gpucloud::net {
namespace {

// A response that a handler delivers later; the session waits on the timer until then.
struct PendingResponse {
  explicit PendingResponse(asio::any_io_executor ex)
      : timer(ex, asio::steady_timer::time_point::max()) {}
  asio::steady_timer timer;
  std::optional<HttpResponse> response;
};

HttpRequest to_request(http::request<http::string_body>&& req, const std::string& remote) {
  HttpRequest out;
  out.method = std::string(req.method_string());
  out.target = std::string(req.target());
  size_t q = out.target.find('?');
  out.path = url_decode(out.target.substr(0, q));
  if (q != std::string::npos) out.query = parse_query(out.target.substr(q + 1));
  for (const auto& field : req) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(field.value());
  }
  out.body = std::move(req.body());
  out.remote_address = remote;
  return out;
}

std::string error_body(const char* code, const std::string& message) {
  return fmt::format(R"({{"error":{{"code":"{}","message":"{}"}}}})", code, message);
}

}  // namespace

struct HttpServer::Impl {
  EventLoop& loop;
  HttpHandler handler;
  HttpServerConfig config;
  std::optional<tcp::acceptor> acceptor;
  std::optional<ssl::context> tls;  // set when serving https

  Impl(EventLoop& l, HttpHandler h) : loop(l), handler(std::move(h)) {}
  asio::io_context& ioc() { return *static_cast<asio::io_context*>(loop.native_handle()); }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket =
          co_await acceptor->async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
        // Out of file descriptors, most likely: wait a little instead of spinning.
        spdlog::warn("http: accept failed: {}; pausing accepts for 100 ms", ec.message());
        asio::steady_timer pause(co_await asio::this_coro::executor,
                                 std::chrono::milliseconds(100));
        co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      socket.set_option(tcp::no_delay(true), ec);
      asio::co_spawn(ioc(), session(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> session(tcp::socket socket) {
    boost::system::error_code ec;
    std::string remote;
    auto ep = socket.remote_endpoint(ec);
    if (!ec) remote = ep.address().to_string();
    if (!tls) {
      beast::tcp_stream stream(std::move(socket));
      co_await serve(stream, remote);
      stream.socket().shutdown(tcp::socket::shutdown_send, ec);
      co_return;
    }
    TlsStream stream(std::move(socket), *tls);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    co_await stream.async_handshake(ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      spdlog::debug("http: TLS handshake with {} failed: {}", remote, ec.message());
      co_return;
    }
    co_await serve(stream, remote);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
    co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
  }

  // Reads requests and writes responses on one connection until it closes.
  template <class Stream>
  asio::awaitable<void> serve(Stream& stream, const std::string& remote) {
    boost::system::error_code ec;
    auto& lowest = beast::get_lowest_layer(stream);
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(config.body_limit);
      parser.header_limit(64 * 1024);
      lowest.expires_after(std::chrono::milliseconds(config.idle_timeout_ms));
      co_await http::async_read(stream, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (ec == http::error::body_limit || ec == http::error::header_limit) {
          http::response<http::string_body> res{http::status::payload_too_large, 11};
          res.set(http::field::content_type, "application/json");
          res.body() = error_body(
              "too_large",
              fmt::format("request body is above the limit of {} bytes", config.body_limit));
          res.keep_alive(false);
          res.prepare_payload();
          co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
          // Read and drop what the client still sends (up to 2 s), so that closing the socket
          // does not reset the connection before the client has read the answer.
          if (!tls) lowest.socket().shutdown(tcp::socket::shutdown_send, ec);
          lowest.expires_after(std::chrono::seconds(2));
          char sink[65536];
          while (!ec)
            co_await stream.async_read_some(asio::buffer(sink),
                                            asio::redirect_error(asio::use_awaitable, ec));
          co_return;
        } else if (ec != http::error::end_of_stream && ec != beast::error::timeout &&
                   ec != asio::error::connection_reset && ec != asio::error::eof &&
                   ec != asio::error::operation_aborted && ec != ssl::error::stream_truncated) {
          http::response<http::string_body> res{http::status::bad_request, 11};
          res.set(http::field::content_type, "application/json");
          res.body() = error_body("invalid_argument", "malformed HTTP request: " + ec.message());
          res.keep_alive(false);
          res.prepare_payload();
          co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
        }
        co_return;
      }
      auto req = parser.release();
      bool keep_alive = req.keep_alive();
      unsigned version = req.version();
      bool head = req.method() == http::verb::head;
      auto pending = std::make_shared<PendingResponse>(stream.get_executor());
      auto ex = stream.get_executor();
      lowest.expires_never();
      handler(to_request(std::move(req), remote),
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
      lowest.expires_after(std::chrono::seconds(30));
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !keep_alive) co_return;
    }
  }
};

HttpServer::HttpServer(EventLoop& loop, HttpHandler handler)
    : impl_(std::make_unique<Impl>(loop, std::move(handler))) {}
HttpServer::~HttpServer() = default;

Result<int> HttpServer::listen(const HttpServerConfig& config) {
  impl_->config = config;
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
  asio::co_spawn(impl_->ioc(), impl_->accept_loop(), asio::detached);
  return port;
}

void HttpServer::close() {
  asio::post(impl_->ioc(), [this] {
    boost::system::error_code ec;
    if (impl_->acceptor) impl_->acceptor->close(ec);
  });
}

}  // namespace gpucloud::net
