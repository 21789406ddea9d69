#include "server/http_util.h"

#include <fmt/format.h>

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
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    // nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1,
    // column 5: ..."
    size_t pos = what.find("parse error");
    return invalid(fmt::format("the request body is not valid JSON: {}",
                               pos == std::string::npos ? what : what.substr(pos)));
  }
}

}  // namespace gpucloud::server
