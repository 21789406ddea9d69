// ApiClient: the CLI's view of the server. It finds the server and the token the same way
// for every command: GPUCLOUD_ADDR / GPUCLOUD_TOKEN, else the files in ./.gpucloud.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "net/http_client.h"

namespace gpucloud::cli {

class ApiClient {
 public:
  /// Resolves address and token from the environment and ./.gpucloud.
  static Result<ApiClient> from_environment();

  /// A JSON request; a non-2xx answer becomes an Error carrying the server's message.
  Result<nlohmann::json> call(const std::string& method, const std::string& target,
                              const nlohmann::json* body = nullptr, int64_t timeout_ms = 30'000);
  /// A raw request (logs); returns the response as is.
  Result<net::HttpResponse> raw(const std::string& method, const std::string& target,
                                int64_t timeout_ms);

  const std::string& address() const { return address_; }

 private:
  std::shared_ptr<net::HttpClient> http_;
  std::string address_;
  std::string token_;
};

/// Turns an error response (JSON error body or not) into an Error with the right code.
Error error_from_response(const net::HttpResponse& response);

}  // namespace gpucloud::cli
