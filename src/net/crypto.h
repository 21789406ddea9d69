// Small cryptographic helpers on OpenSSL: token hashing and base64 for binary log chunks.
#pragma once

#include <string>

#include "common/result.h"

namespace gpucloud::net {

/// SHA-256 of data as 64 lower-case hex digits.
std::string sha256_hex(const std::string& data);
/// Standard base64 with padding.
std::string base64_encode(const std::string& data);
/// Decodes standard base64; rejects malformed input.
Result<std::string> base64_decode(const std::string& text);
/// Constant-time comparison of two strings of equal length.
bool constant_time_equal(const std::string& a, const std::string& b);

}  // namespace gpucloud::net
