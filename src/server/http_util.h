// Small helpers for JSON responses and the uniform error body {"error":{"code","message"}}.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/result.h"
#include "net/http_types.h"

namespace gpucloud::server {

net::HttpResponse json_response(int status, const nlohmann::json& body);
net::HttpResponse error_response(const Error& error);
/// Parses a request body as JSON within limits (nesting depth 64, numbers that fit a double);
/// every failure is an invalid-argument error naming the byte where parsing failed.
Result<nlohmann::json> parse_json_body(const std::string& body);
/// A query parameter that must be a whole number 0..max (digits only, at most 18 of them), or
/// nullopt.
std::optional<int64_t> parse_whole_param(const std::string& text, int64_t max);

}  // namespace gpucloud::server
