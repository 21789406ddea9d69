#include "cli/api_client.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "model/json_limits.h"

namespace gpucloud::cli {

namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

ErrorCode code_for_status(int status) {
  switch (status) {
    case 400:
      return ErrorCode::kInvalidArgument;
    case 401:
      return ErrorCode::kUnauthenticated;
    case 403:
      return ErrorCode::kPermissionDenied;
    case 404:
      return ErrorCode::kNotFound;
    case 409:
      return ErrorCode::kConflict;
    case 413:
      return ErrorCode::kTooLarge;
    case 422:
      return ErrorCode::kUnsatisfiable;
    case 503:
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kInternal;
  }
}

}  // namespace

Error error_from_response(const net::HttpResponse& r) {
  std::string message = fmt::format("server answered HTTP {}: {}", r.status, r.body.substr(0, 300));
  if (auto j = parse_json_limited(r.body, "server response", {kMaxDocumentDepth, 0}); j.ok()) {
    try {
      message = j->at("error").at("message").get<std::string>();
    } catch (const nlohmann::json::exception&) {
    }
  }
  if (r.status == 401)
    message += " (is GPUCLOUD_TOKEN set, or is there a .gpucloud/admin.token here?)";
  return {code_for_status(r.status), message};
}

Result<ApiClient> ApiClient::from_environment() {
  ApiClient c;
  const char* addr = std::getenv("GPUCLOUD_ADDR");
  const char* token = std::getenv("GPUCLOUD_TOKEN");
  c.address_ = addr && *addr ? addr : read_first_line(".gpucloud/address");
  if (c.address_.empty()) c.address_ = "http://127.0.0.1:8080";
  c.token_ = token && *token ? token : read_first_line(".gpucloud/admin.token");
  net::TlsClientOptions tls;
  const char* ca = std::getenv("GPUCLOUD_CA");
  const char* fingerprint = std::getenv("GPUCLOUD_FINGERPRINT");
  if (ca && *ca) tls.ca_file = ca;
  if (fingerprint && *fingerprint) tls.fingerprint = fingerprint;
  if (tls.ca_file.empty() && tls.fingerprint.empty() && (!addr || !*addr)) {
    // The local server's own data dir: pin the certificate it made.
    if (auto fp = net::certificate_fingerprint(".gpucloud/tls/server.crt")) tls.fingerprint = *fp;
  }
  auto http = net::HttpClient::create(c.address_, tls);
  if (!http) return http.error();
  c.http_ = std::move(*http);
  return c;
}

Result<net::HttpResponse> ApiClient::raw(const std::string& method, const std::string& target,
                                         int64_t timeout_ms) {
  std::map<std::string, std::string> headers;
  if (!token_.empty()) headers["Authorization"] = "Bearer " + token_;
  auto r = http_->request(method, target, "", headers, timeout_ms);
  if (!r) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("cannot reach the gpucloud server at {}: {} (start one with `gpucloud "
                             "dev`, or set GPUCLOUD_ADDR)",
                             address_, r.error().message)};
  }
  return r;
}

Result<nlohmann::json> ApiClient::call(const std::string& method, const std::string& target,
                                       const nlohmann::json* body, int64_t timeout_ms) {
  std::map<std::string, std::string> headers;
  if (!token_.empty()) headers["Authorization"] = "Bearer " + token_;
  auto r = http_->request(method, target, body ? body->dump() : "", headers, timeout_ms);
  if (!r)
    return Error{ErrorCode::kUnavailable,
                 fmt::format("cannot reach the gpucloud server at {}: {} (start one with `gpucloud "
                             "dev`, or set GPUCLOUD_ADDR)",
                             address_, r.error().message)};
  if (r->status < 200 || r->status >= 300) return error_from_response(*r);
  auto j = parse_json_limited(r->body, "server response", {kMaxDocumentDepth, 0});
  if (!j)
    return internal(
        fmt::format("server answered with a body that is not JSON: {}", j.error().message));
  return std::move(*j);
}

}  // namespace gpucloud::cli
