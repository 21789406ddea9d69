// Converts YAML documents to JSON, so YAML files go through the same validation as API bodies.
// YAML is read within limits: its size, its nesting (checked on the text before yaml-cpp, whose
// parser recurses, sees it) and the nodes it expands to (aliases may repeat a subtree many times).
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/result.h"

namespace gpucloud {

/// The limits of YAML documents read from files and requests.
struct YamlLimits {
  /// Largest text accepted, in bytes.
  size_t max_bytes = 4u << 20;
  /// Deepest nesting accepted. The text check estimates the depth from above (flow brackets,
  /// indentation levels and `- `/`? ` indicators), so real documents stay well below it.
  int max_depth = 64;
  /// Most JSON values a document may expand to, aliases counted each time they are used.
  size_t max_nodes = 100'000;
  /// Most bytes of scalars a document may expand to, aliases counted each time they are used.
  size_t max_scalar_bytes = 16u << 20;
};

/// Checks YAML text before it is handed to yaml-cpp: its size and an upper bound of its nesting
/// depth. Messages name `source_name`, the line and the limit.
Status check_yaml_text(const std::string& text, const std::string& source_name,
                       const YamlLimits& limits = {});

/// Parses YAML text into JSON. Plain scalars become numbers, booleans or null where they look
/// like one; quoted scalars stay strings. Errors carry the line and column. Refuses documents
/// above the limits, naming aliases when the expansion is what exceeded them.
Result<nlohmann::json> yaml_to_json(const std::string& text, const std::string& source_name,
                                    const YamlLimits& limits = {});

}  // namespace gpucloud
