// Plain HTTP request/response types: the rest of gpucloud sees these, never Beast.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gpucloud::net {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // path plus query, as sent
  std::string path;                            // decoded path without the query
  std::map<std::string, std::string> query;    // decoded query parameters
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string remote_address;

  /// A header's value, or "" when absent. name must be lower-case.
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Completes a request. Call exactly once, from any thread; later calls are ignored.
using Responder = std::function<void(HttpResponse)>;

/// Handles one request; may answer at once or keep the responder for later (long-poll).
using HttpHandler = std::function<void(HttpRequest&& request, Responder respond)>;

/// Percent-decodes a URL component ('+' stays '+').
std::string url_decode(const std::string& s);
/// Percent-encodes a URL component.
std::string url_encode(const std::string& s);
/// Splits "a=1&b=two" into a map, decoding both sides.
std::map<std::string, std::string> parse_query(const std::string& query);

}  // namespace gpucloud::net
