// Range-checked reads of whole numbers from JSON, for the decoders of src/model/. nlohmann's
// get<int>() silently wraps 1e18 and truncates 2.5; these throw a JsonFieldError that names the
// field and its range, which each decoder turns into an invalid-argument Error.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "common/result.h"

namespace gpucloud {

/// A field of the wrong type or out of its range.
struct JsonFieldError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The compact JSON text of v, with invalid UTF-8 replaced: nlohmann's plain dump() throws on
/// it, and YAML and CSV input is not checked by their parsers.
inline std::string json_text(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// json_text() of v for an error message, cut to at most `max_chars` bytes.
inline std::string json_excerpt(const nlohmann::json& v, size_t max_chars = 64) {
  std::string text = json_text(v);
  if (text.size() > max_chars) text = text.substr(0, max_chars - 3) + "...";
  return text;
}

constexpr int64_t kJsonIntMax = std::numeric_limits<int>::max();
constexpr int64_t kJsonInt64Max = std::numeric_limits<int64_t>::max();

/// The whole number v within lo..hi, or a JsonFieldError naming `field` and the range.
inline int64_t json_whole(const nlohmann::json& v, const std::string& field, int64_t lo,
                          int64_t hi) {
  if (!v.is_number_integer())
    throw JsonFieldError(fmt::format("{}: expected a whole number, got {}", field, v.type_name()));
  // Parsed non-negative numbers are unsigned in nlohmann: compare those as unsigned, against
  // both ends (a 0 must still fail a minimum of 1).
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(hi) ||
                                   (lo > 0 && v.get<uint64_t>() < static_cast<uint64_t>(lo))
                             : (v.get<int64_t>() < lo || v.get<int64_t>() > hi))
    throw JsonFieldError(fmt::format("{}: {} is outside {}..{}", field, json_excerpt(v), lo, hi));
  return v.get<int64_t>();
}

/// json_whole() of the member `key` of object j, which must be present.
inline int64_t json_whole_at(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi) {
  return json_whole(j.at(key), key, lo, hi);
}

/// json_whole() of the member `key` of j, or `fallback` when j has no such member.
inline int64_t json_whole_or(const nlohmann::json& j, const char* key, int64_t fallback, int64_t lo,
                             int64_t hi) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  return json_whole(j.at(key), key, lo, hi);
}

/// Ok when j is an object with only the given keys; otherwise kInvalidArgument naming the place
/// and the first unknown key, e.g. "tenants[0].idle.window: unknown field; expected timeout, ...".
inline Status json_known_keys(const nlohmann::json& j, const std::string& where,
                              std::initializer_list<const char*> keys) {
  if (!j.is_object()) return invalid(fmt::format("{}: expected a mapping", where));
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : keys) known |= key == k;
    if (!known) {
      std::string list;
      for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
      return invalid(fmt::format("{}.{}: unknown field; expected {}", where, key, list));
    }
  }
  return {};
}

}  // namespace gpucloud
