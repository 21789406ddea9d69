// Bounded JSON parsing for text that comes from outside the process (request bodies, agent
// polls, job files): a nesting limit checked without recursion before nlohmann parses anything,
// a size limit, and numbers that do not fit a double reported as errors, not exceptions.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "common/result.h"

namespace gpucloud {

/// The limits parse_json_limited() applies. The defaults suit API bodies and job files.
struct JsonLimits {
  /// Deepest nesting of arrays and objects; `[[1]]` has depth 2. Deeper input is refused before
  /// parsing, so a hostile body cannot exhaust the stack of a recursive parser or printer.
  int max_depth = 64;
  /// Largest text accepted, in bytes; 0 means no limit (the caller bounded it already).
  size_t max_bytes = 64u << 20;
};

/// The default nesting limit of JSON and YAML documents read from outside.
constexpr int kMaxDocumentDepth = 64;

/// Scans text (without recursion, skipping brackets inside strings) and fails when arrays and
/// objects nest deeper than max_depth, or a number overflows a double (1e400, a 400-digit
/// integer). Messages name `what`, the byte offset, and for a number the field it belongs to,
/// e.g. "request body: number 1e400 at byte 9 (field gpus) is out of range". Syntax errors are
/// left to the parser.
Status check_json_text(std::string_view text, std::string_view what, int max_depth);

/// Parses JSON text within limits. Every failure (size, depth, syntax, number out of range) is an
/// invalid-argument Error whose message starts with `what` ("request body", "job.json") and
/// says where the text went wrong; no nlohmann exception escapes.
Result<nlohmann::json> parse_json_limited(std::string_view text, std::string_view what,
                                          const JsonLimits& limits = {});

}  // namespace gpucloud
