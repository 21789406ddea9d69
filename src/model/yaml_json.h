// Converts YAML documents to JSON, so YAML files go through the same validation as API bodies.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/result.h"

namespace gpucloud {

/// Parses YAML text into JSON. Plain scalars become numbers, booleans or null where they look
/// like one; quoted scalars stay strings. Errors carry the line and column.
Result<nlohmann::json> yaml_to_json(const std::string& text, const std::string& source_name);

}  // namespace gpucloud
