#include "net/http_client.h"

#include <fmt/format.h>

#include <atomic>
#include <optional>

#include "net/asio_ssl.h"
#include "net/tls.h"

namespace gpucloud::net {

struct HttpClient::Impl {
  asio::io_context ioc{1};
  std::optional<beast::tcp_stream> stream;  // plain http, or the TCP layer before TLS is on
  std::optional<TlsStream> secure;          // https: owns the connection once set up
  std::optional<ssl::context> tls;          // set for https:// addresses
  std::string pinned;                       // normalised fingerprint to pin, or ""
  std::shared_ptr<std::string> seen_fingerprint = std::make_shared<std::string>();
  beast::flat_buffer buffer;
  std::string host, port;
  // interrupt() sets `interrupted` and cancels the request in flight. The flag stays set until
  // a request consumes it, so an interrupt that arrives just before a request starts, or while
  // it connects, is not lost: that request returns "interrupted".
  std::atomic<bool> interrupted{false};

  bool connected() const { return stream.has_value() || secure.has_value(); }
  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *stream; }

  void disconnect() {
    if (connected()) {
      boost::system::error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
      lowest().socket().close(ec);
    }
    secure.reset();
    stream.reset();
    buffer.clear();
  }

  // Sets up the TLS context for https: a pinned fingerprint, a CA file, or the system's CAs.
  Status configure_tls(const TlsClientOptions& options) {
    auto& ctx = tls.emplace(ssl::context::tls_client);
    boost::system::error_code ec;
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    ctx.set_verify_mode(ssl::verify_peer);
    if (!options.fingerprint.empty()) {
      auto fp = fingerprint_normalize(options.fingerprint);
      if (!fp) return fp.error();
      pinned = *fp;
      // Only the server's own certificate counts: its chain is not consulted.
      ctx.set_verify_callback(
          [want = pinned, seen = seen_fingerprint](bool, ssl::verify_context& vc) {
            X509_STORE_CTX* sc = vc.native_handle();
            if (X509_STORE_CTX_get_error_depth(sc) > 0) return true;
            X509* cert = X509_STORE_CTX_get_current_cert(sc);
            unsigned char* der = nullptr;
            int len = i2d_X509(cert, &der);
            if (len <= 0) return false;
            *seen = der_fingerprint_hex(der, len);
            OPENSSL_free(der);
            return *seen == want;
          });
      return {};
    }
    if (!options.ca_file.empty()) {
      ctx.load_verify_file(options.ca_file, ec);
      if (ec)
        return invalid(fmt::format("--ca {}: {}; give the server's CA certificate in PEM form",
                                   options.ca_file, ec.message()));
    } else {
      ctx.set_default_verify_paths(ec);
    }
    ctx.set_verify_callback(ssl::host_name_verification(host));
    return {};
  }

  // Connects (and, for https, handshakes) a new connection.
  asio::awaitable<Status> connect(int64_t timeout_ms) {
    boost::system::error_code ec;
    stream.emplace(ioc);
    tcp::resolver resolver(ioc);
    auto results =
        co_await resolver.async_resolve(host, port, asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return Error{ErrorCode::kUnavailable,
                      fmt::format("cannot resolve {}: {}", host, ec.message())};
    stream->expires_after(std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 10'000)));
    co_await stream->async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return Error{ErrorCode::kUnavailable,
                      fmt::format("cannot connect to {}:{}: {}", host, port, ec.message())};
    stream->socket().set_option(tcp::no_delay(true), ec);
    if (!tls) co_return Status{};
    secure.emplace(std::move(*stream), *tls);
    stream.reset();
    boost::system::error_code ip_ec;
    asio::ip::make_address(host, ip_ec);
    if (ip_ec) SSL_set_tlsext_host_name(secure->native_handle(), host.c_str());  // SNI
    seen_fingerprint->clear();
    co_await secure->async_handshake(ssl::stream_base::client,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (!pinned.empty() && !seen_fingerprint->empty() && *seen_fingerprint != pinned)
        co_return Error{ErrorCode::kPermissionDenied,
                        fmt::format("the server at {}:{} presented a certificate with SHA-256 "
                                    "fingerprint {}, not the pinned {}; check --fingerprint",
                                    host, port, *seen_fingerprint, pinned)};
      co_return Error{ErrorCode::kUnavailable,
                      fmt::format("TLS handshake with {}:{} failed: {}{}", host, port, ec.message(),
                                  pinned.empty() ? " (trust the server with --ca FILE or "
                                                   "--fingerprint SHA256)"
                                                 : "")};
    }
    co_return Status{};
  }

  // One attempt on the current (or a new) connection. `reused` tells whether the connection
  // existed before, so a failure before any response byte can be retried.
  asio::awaitable<Result<HttpResponse>> attempt(const std::string& method,
                                                const std::string& target, const std::string& body,
                                                const std::map<std::string, std::string>& headers,
                                                int64_t timeout_ms, bool& retryable) {
    boost::system::error_code ec;
    bool reused = connected();
    retryable = false;
    if (!connected()) {
      auto st = co_await connect(timeout_ms);
      if (!st.ok()) co_return st.error();
      if (interrupted)
        co_return Error{ErrorCode::kUnavailable, "interrupted"};  // came while connecting
    }
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, host);
    req.set(http::field::user_agent, "gpucloud");
    for (const auto& [k, v] : headers) req.set(k, v);
    if (!body.empty() || method == "POST" || method == "PUT") {
      if (headers.find("Content-Type") == headers.end())
        req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.keep_alive(true);
    req.prepare_payload();
    lowest().expires_after(std::chrono::milliseconds(timeout_ms));
    if (secure)
      co_await http::async_write(*secure, req, asio::redirect_error(asio::use_awaitable, ec));
    else
      co_await http::async_write(*stream, req, asio::redirect_error(asio::use_awaitable, ec));
    boost::system::error_code write_ec = ec;
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 << 20);
    // Even when sending failed, the server may have answered (e.g. 413 before the body was read).
    if (secure)
      co_await http::async_read(*secure, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
    else
      co_await http::async_read(*stream, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
    if (ec && write_ec) {
      retryable = reused && !interrupted && !parser.got_some();
      co_return Error{ErrorCode::kUnavailable,
                      fmt::format("sending to {}:{} failed: {}", host, port, write_ec.message())};
    }
    if (ec) {
      retryable = reused && !interrupted &&
                  (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
                   ec == ssl::error::stream_truncated) &&
                  !parser.got_some();
      if (interrupted) co_return Error{ErrorCode::kUnavailable, "interrupted"};
      if (ec == beast::error::timeout)
        co_return Error{ErrorCode::kUnavailable,
                        fmt::format("no answer from {}:{} within {} ms", host, port, timeout_ms)};
      co_return Error{ErrorCode::kUnavailable,
                      fmt::format("reading from {}:{} failed: {}", host, port, ec.message())};
    }
    auto res = parser.release();
    HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    out.content_type = std::string(res[http::field::content_type]);
    for (const auto& field : res)
      out.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    out.body = std::move(res.body());
    if (!res.keep_alive()) disconnect();
    co_return out;
  }
};

HttpClient::HttpClient() : impl_(std::make_unique<Impl>()) {}
HttpClient::~HttpClient() = default;

Result<std::unique_ptr<HttpClient>> HttpClient::create(const std::string& base_url,
                                                       const TlsClientOptions& tls) {
  const bool https = base_url.rfind("https://", 0) == 0;
  const std::string scheme = https ? "https://" : "http://";
  if (base_url.rfind(scheme, 0) != 0)
    return invalid(
        fmt::format("server address '{}' must start with https:// or http:// (e.g. "
                    "https://10.0.0.1:8443, or http://127.0.0.1:8080 for a dev server)",
                    base_url));
  std::string rest = base_url.substr(scheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  size_t colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  if (colon != std::string::npos && rest.find(']') != std::string::npos && colon < rest.find(']'))
    colon = std::string::npos;  // [v6] without a port
  std::string port = colon == std::string::npos ? (https ? "443" : "80") : rest.substr(colon + 1);
  if (!host.empty() && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos)
    return invalid(fmt::format("server address '{}' is not {}HOST:PORT", base_url, scheme));
  std::unique_ptr<HttpClient> client(new HttpClient());
  client->impl_->host = host;
  client->impl_->port = port;
  if (https) GPUCLOUD_TRY(client->impl_->configure_tls(tls));
  client->base_url_ = scheme + rest;
  return client;
}

Result<HttpResponse> HttpClient::request(const std::string& method, const std::string& target,
                                         const std::string& body,
                                         const std::map<std::string, std::string>& headers,
                                         int64_t timeout_ms) {
  auto& impl = *impl_;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (impl.interrupted.exchange(false)) return Error{ErrorCode::kUnavailable, "interrupted"};
    std::optional<Result<HttpResponse>> result;
    bool retryable = false;
    impl.ioc.restart();
    auto run_attempt = [&]() -> asio::awaitable<void> {
      result.emplace(co_await impl.attempt(method, target, body, headers, timeout_ms, retryable));
    };
    asio::co_spawn(impl.ioc, run_attempt(), [&](std::exception_ptr e) {
      if (e && !result) result.emplace(Error{ErrorCode::kUnavailable, "request failed"});
    });
    impl.ioc.run();
    if (result && result->ok()) return std::move(*result);
    impl.disconnect();
    if (impl.interrupted.exchange(false)) return Error{ErrorCode::kUnavailable, "interrupted"};
    if (!retryable)
      return result ? result->error() : Error{ErrorCode::kUnavailable, "request did not complete"};
  }
  return Error{ErrorCode::kUnavailable, "request failed twice"};
}

void HttpClient::interrupt() {
  // The flag first: a request that starts from now on sees it. The posted cancel reaches a
  // request already in flight; once a request has consumed the flag, the cancel does nothing.
  impl_->interrupted = true;
  asio::post(impl_->ioc, [impl = impl_.get()] {
    if (impl->interrupted && impl->connected()) {
      boost::system::error_code ec;
      impl->lowest().socket().cancel(ec);
      impl->lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    }
  });
}

}  // namespace gpucloud::net
