#include "model/json_limits.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpucloud {

namespace {

/// One open array or object while scanning, enough to name the field a number belongs to.
struct Frame {
  bool object = false;
  bool want_key = false;  // objects: the next string is a key
  std::string key;        // objects: the last key seen (raw text, cut at 64 bytes)
  size_t index = 0;       // arrays: the element being read
};

std::string field_path(const std::vector<Frame>& frames) {
  std::string path;
  for (const Frame& f : frames) {
    if (f.object) {
      if (!path.empty()) path += '.';
      path += f.key;
    } else {
      path += fmt::format("[{}]", f.index);
    }
  }
  return path;
}

bool number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1, ...":
// keep the part a user can read.
std::string readable(const std::string& what, const char* from) {
  size_t pos = what.find(from);
  if (pos != std::string::npos) return what.substr(pos);
  pos = what.find("] ");
  return pos == std::string::npos ? what : what.substr(pos + 2);
}

}  // namespace

Status check_json_text(std::string_view text, std::string_view what, int max_depth) {
  std::vector<Frame> frames;
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    char c = text[i];
    if (c == '"') {
      size_t start = ++i;
      while (i < n && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      if (i >= n) return {};  // unterminated: the parser says so
      if (!frames.empty() && frames.back().object && frames.back().want_key) {
        frames.back().key = std::string(text.substr(start, std::min<size_t>(i - start, 64)));
        frames.back().want_key = false;
      }
      ++i;
      continue;
    }
    if (c == '[' || c == '{') {
      if (static_cast<int>(frames.size()) >= max_depth)
        return invalid(fmt::format(
            "{}: arrays and objects nest deeper than {} levels at byte {}; flatten the document",
            what, max_depth, i));
      frames.push_back({c == '{', c == '{', {}, 0});
    } else if (c == ']' || c == '}') {
      if (!frames.empty()) frames.pop_back();
    } else if (c == ',') {
      if (!frames.empty()) {
        if (frames.back().object)
          frames.back().want_key = true;
        else
          ++frames.back().index;
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t start = i;
      while (i < n && number_char(text[i])) ++i;
      std::string token(text.substr(start, i - start));
      double v = std::strtod(token.c_str(), nullptr);
      if (std::isinf(v)) {
        std::string shown = token.size() > 24 ? token.substr(0, 20) + "..." : token;
        std::string path = field_path(frames);
        return invalid(fmt::format(
            "{}: number {} at byte {}{} is out of range; numbers must fit a double (about 1e308)",
            what, shown, start, path.empty() ? "" : fmt::format(" (field {})", path)));
      }
      continue;
    }
    ++i;
  }
  return {};
}

Result<nlohmann::json> parse_json_limited(std::string_view text, std::string_view what,
                                          const JsonLimits& limits) {
  if (limits.max_bytes > 0 && text.size() > limits.max_bytes)
    return Error{ErrorCode::kTooLarge, fmt::format("{}: {} bytes is above the limit of {} bytes",
                                                   what, text.size(), limits.max_bytes)};
  GPUCLOUD_TRY(check_json_text(text, what, limits.max_depth));
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return invalid(fmt::format("{}: not valid JSON: {}", what, readable(e.what(), "parse error")));
  } catch (const nlohmann::json::exception& e) {
    // out_of_range (a number the scan did not catch) or anything else nlohmann refuses.
    return invalid(fmt::format("{}: not accepted as JSON: {}", what, readable(e.what(), "")));
  } catch (const std::bad_alloc&) {
    return Error{ErrorCode::kTooLarge, fmt::format("{}: too large to parse in memory", what)};
  }
}

}  // namespace gpucloud
