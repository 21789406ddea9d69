// The HTTP request path of the server: bytes from a socket into Beast's request parser with the
// limits src/net/http_server.cpp sets (64 KiB of header, 16 MiB of body), converted to the
// server's HttpRequest as http_server.cpp's to_request() does, and a POST /v1/jobs body read
// as the API reads it (parse_json_body, then the job spec).
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>  // before Boost.Asio (see DESIGN.md)

#include "fuzz_check.h"
#include "model/job_spec.h"
#include "model/json_limits.h"
#include "net/http_types.h"

using namespace gpucloud;
namespace http = boost::beast::http;

namespace {

constexpr size_t kHeaderLimit = 64 * 1024;  // as HttpServer::Impl::serve
constexpr size_t kBodyLimit = 16 << 20;     // HttpServerConfig::body_limit's default

// The same conversion as to_request() in src/net/http_server.cpp.
net::HttpRequest to_request(http::request<http::string_body>&& req) {
  net::HttpRequest out;
  out.method = std::string(req.method_string());
  out.target = std::string(req.target());
  size_t q = out.target.find('?');
  out.path = net::url_decode(out.target.substr(0, q));
  if (q != std::string::npos) out.query = net::parse_query(out.target.substr(q + 1));
  for (const auto& field : req) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(field.value());
  }
  out.body = std::move(req.body());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kBodyLimit);
  parser.eager(true);
  boost::beast::error_code ec;
  boost::asio::const_buffer buf(data, size);
  while (buf.size() > 0 && !parser.is_done()) {
    size_t used = parser.put(buf, ec);
    if (ec == http::error::need_more) return 0;  // the server would wait for more bytes
    if (ec) return 0;                            // the server answers 400 or 413
    if (used == 0) return 0;
    buf += used;
  }
  if (!parser.is_done()) {
    // End of stream: as Beast's read does, before any byte it is end_of_stream, not put_eof.
    if (!parser.got_some()) return 0;
    parser.put_eof(ec);
    if (ec || !parser.is_done()) return 0;
  }
  net::HttpRequest req = to_request(parser.release());
  fuzz::require(req.body.size() <= kBodyLimit, "body limit");
  if (req.method == "POST" && req.path == "/v1/jobs") {
    if (req.body.empty()) return 0;  // parse_json_body answers 400 without parsing
    auto doc = parse_json_limited(req.body, "request body", JsonLimits{kMaxDocumentDepth, 0});
    if (!doc) {
      fuzz::require_user_error(doc.error(), "parse_json_body");
      return 0;
    }
    auto spec = job_spec_from_json(*doc);
    if (!spec) fuzz::require_user_error(spec.error(), "job_spec_from_json");
  }
  return 0;
}
