#include "model/yaml_json.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace gpucloud {
namespace {

nlohmann::json scalar_to_json(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted: always a string
  if (s == "null" || s == "~" || s.empty()) return nullptr;
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (end && *end == '\0' && errno == 0) return i;
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (end && *end == '\0' && errno == 0 && s.find_first_of("0123456789") != std::string::npos &&
      s.find_first_not_of("0123456789.eE+-") == std::string::npos)
    return d;
  return s;
}

nlohmann::json node_to_json(const YAML::Node& node, int depth) {
  if (depth > 64) throw YAML::Exception(node.Mark(), "nesting deeper than 64 levels");
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return scalar_to_json(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& item : node) arr.push_back(node_to_json(item, depth + 1));
      return arr;
    }
    case YAML::NodeType::Map: {
      nlohmann::json obj = nlohmann::json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar())
          throw YAML::Exception(kv.first.Mark(), "map keys must be plain strings");
        obj[kv.first.Scalar()] = node_to_json(kv.second, depth + 1);
      }
      return obj;
    }
  }
  return nullptr;
}

}  // namespace

Result<nlohmann::json> yaml_to_json(const std::string& text, const std::string& source_name) {
  try {
    YAML::Node root = YAML::Load(text);
    return node_to_json(root, 0);
  } catch (const YAML::Exception& e) {
    return invalid(
        fmt::format("{}:{}:{}: {}", source_name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

}  // namespace gpucloud
