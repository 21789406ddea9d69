// HttpClient: a blocking HTTP/1.1 (or https) client with one keep-alive connection, used by the CLI
// and by agents. One request at a time per client; interrupt() may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/result.h"
#include "net/http_types.h"
#include "net/tls.h"

namespace gpucloud::net {

class HttpClient {
 public:
  /// base_url: "https://HOST:PORT" (trusted as tls says) or "http://HOST:PORT". Fails on a
  /// malformed URL, an unsupported scheme, or an unreadable CA file or malformed fingerprint.
  static Result<std::unique_ptr<HttpClient>> create(const std::string& base_url,
                                                    const TlsClientOptions& tls = {});
  ~HttpClient();

  /// Sends a request and waits up to timeout_ms for the whole response. A connection the server
  /// closed while idle is reopened once. Errors: kUnavailable when the server cannot be reached.
  Result<HttpResponse> request(const std::string& method, const std::string& target,
                               const std::string& body,
                               const std::map<std::string, std::string>& headers,
                               int64_t timeout_ms);

  /// Aborts the request in flight, if any (it returns kUnavailable with "interrupted"); the
  /// next request reconnects. Thread-safe.
  void interrupt();

  const std::string& base_url() const { return base_url_; }

 private:
  HttpClient();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string base_url_;
};

}  // namespace gpucloud::net
