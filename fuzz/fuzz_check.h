// Shared checks of the fuzz targets: a parser may refuse any input, but only as the caller's
// mistake (invalid argument, too large). An internal error, an escaping exception or a broken
// round trip is a bug, and abort() makes libFuzzer keep the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/result.h"

namespace gpucloud::fuzz {

/// Aborts with a message when a condition that must hold for every input does not.
inline void require(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

/// Aborts when a refusal is not a 4xx-class error: the API would answer 500 for this input.
inline void require_user_error(const Error& e, const char* what) {
  require(e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kTooLarge, what,
          "refused with a non-4xx error: " + e.message);
  require(!e.message.empty(), what, "refused with an empty message");
}

}  // namespace gpucloud::fuzz
