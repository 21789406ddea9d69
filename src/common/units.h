// Parsing and printing of the human units users type: durations and sizes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpucloud {

/// Parses a duration such as "30s", "1h30m", "500ms", "2d" or a bare number of seconds
/// into milliseconds. Rejects negatives, unknown units and values above 10 years.
Result<int64_t> parse_duration_ms(std::string_view text);

/// Formats milliseconds as a short duration: "1h30m", "45s", "250ms", "1d2h5s" (zero parts
/// left out). Exact: parse_duration_ms reads back the same value.
std::string format_duration_ms(int64_t ms);

/// Parses a memory size such as "16GiB", "512Mi", "1.5G", "80GB" or a bare number of MiB
/// into MiB (decimal and binary prefixes are both read as binary, as GPU vendors do).
/// Rejects negatives, unknown units and values above 1 PiB.
Result<int64_t> parse_size_mib(std::string_view text);

/// Formats MiB as "80GiB", "512MiB", "1.5TiB".
std::string format_size_mib(int64_t mib);

}  // namespace gpucloud
