#include "server/http_util.h"

#include <fmt/format.h>

#include "model/json_limits.h"

namespace gpucloud::server {

net::HttpResponse json_response(int status, const nlohmann::json& body) {
  net::HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.body += '\n';
  return r;
}

net::HttpResponse error_response(const Error& error) {
  return json_response(
      http_status(error.code),
      {{"error", {{"code", error_code_name(error.code)}, {"message", error.message}}}});
}

Result<nlohmann::json> parse_json_body(const std::string& body) {
  if (body.empty()) return invalid("the request body is empty; send a JSON object");
  // The HTTP server bounds the size; the depth and number checks keep a hostile body a 400.
  return parse_json_limited(body, "request body", JsonLimits{kMaxDocumentDepth, 0});
}

std::optional<int64_t> parse_whole_param(const std::string& text, int64_t max) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n <= max ? std::optional<int64_t>(n) : std::nullopt;
}

}  // namespace gpucloud::server
