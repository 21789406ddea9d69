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

}  // namespace gpucloud::server
