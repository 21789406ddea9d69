#include "net/http_client.h"

#include <fmt/format.h>

#include <atomic>
#include <optional>

#include "net/asio.h"

namespace gpucloud::net {

struct HttpClient::Impl {
  asio::io_context ioc{1};
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  std::string host, port;
  // interrupt() sets `interrupted` and cancels the request in flight. The flag stays set until
  // a request consumes it, so an interrupt that arrives just before a request starts, or while
  // it connects, is not lost: that request returns "interrupted".
  std::atomic<bool> interrupted{false};

  void disconnect() {
    if (stream) {
      boost::system::error_code ec;
      stream->socket().shutdown(tcp::socket::shutdown_both, ec);
      stream->socket().close(ec);
    }
    stream.reset();
    buffer.clear();
  }

  // One attempt on the current (or a new) connection. `reused` tells whether the connection
  // existed before, so a failure before any response byte can be retried.
  asio::awaitable<Result<HttpResponse>> attempt(const std::string& method,
                                                const std::string& target, const std::string& body,
                                                const std::map<std::string, std::string>& headers,
                                                int64_t timeout_ms, bool& retryable) {
    boost::system::error_code ec;
    bool reused = stream.has_value();
    retryable = false;
    if (!stream) {
      stream.emplace(ioc);
      tcp::resolver resolver(ioc);
      auto results = co_await resolver.async_resolve(host, port,
                                                     asio::redirect_error(asio::use_awaitable, ec));
      if (ec)
        co_return Error{ErrorCode::kUnavailable,
                        fmt::format("cannot resolve {}: {}", host, ec.message())};
      stream->expires_after(std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 10'000)));
      co_await stream->async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
      if (ec)
        co_return Error{ErrorCode::kUnavailable,
                        fmt::format("cannot connect to {}:{}: {}", host, port, ec.message())};
      stream->socket().set_option(tcp::no_delay(true), ec);
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
    stream->expires_after(std::chrono::milliseconds(timeout_ms));
    co_await http::async_write(*stream, req, asio::redirect_error(asio::use_awaitable, ec));
    boost::system::error_code write_ec = ec;
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 << 20);
    // Even when sending failed, the server may have answered (e.g. 413 before the body was read).
    co_await http::async_read(*stream, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec && write_ec) {
      retryable = reused && !interrupted && !parser.got_some();
      co_return Error{ErrorCode::kUnavailable,
                      fmt::format("sending to {}:{} failed: {}", host, port, write_ec.message())};
    }
    if (ec) {
      retryable = reused && !interrupted &&
                  (ec == http::error::end_of_stream || ec == asio::error::connection_reset) &&
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

Result<std::unique_ptr<HttpClient>> HttpClient::create(const std::string& base_url) {
  const std::string scheme = "http://";
  if (base_url.rfind(scheme, 0) != 0)
    return invalid(fmt::format(
        "server address '{}' must start with http:// (e.g. http://127.0.0.1:8080)", base_url));
  std::string rest = base_url.substr(scheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  size_t colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  std::string port = colon == std::string::npos ? "80" : rest.substr(colon + 1);
  if (!host.empty() && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos)
    return invalid(fmt::format("server address '{}' is not http://HOST:PORT", base_url));
  std::unique_ptr<HttpClient> client(new HttpClient());
  client->impl_->host = host;
  client->impl_->port = port;
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
    if (impl->interrupted && impl->stream) {
      boost::system::error_code ec;
      impl->stream->socket().cancel(ec);
      impl->stream->socket().shutdown(tcp::socket::shutdown_both, ec);
    }
  });
}

}  // namespace gpucloud::net
