// The token of a scraper, read from a file (--metrics-token-file of the server and the agent).
#pragma once

#include <string>

#include "common/result.h"

namespace gpucloud::metrics {

/// Reads one token from `path`: surrounding white space is dropped; the token must be one
/// word of at least 16 characters and the file at most 4 KiB. `flag` names the option in
/// errors, e.g. "--metrics-token-file".
Result<std::string> read_token_file(const std::string& path, const std::string& flag);

}  // namespace gpucloud::metrics
