#include "model/yaml_json.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "model/job_spec.h"

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

/// Converts a loaded document, counting what it expands to: an alias is a second path to its
/// anchor's node, so a small file can describe an exponentially large tree.
class Converter {
 public:
  explicit Converter(const YamlLimits& limits) : limits_(limits) {}

  nlohmann::json convert(const YAML::Node& node, int depth) {
    if (depth > limits_.max_depth)
      throw YAML::Exception(node.Mark(),
                            fmt::format("nesting deeper than {} levels (an alias used inside its "
                                        "own anchor repeats forever); flatten the document",
                                        limits_.max_depth));
    if (++nodes_ > limits_.max_nodes)
      throw YAML::Exception(
          node.Mark(), fmt::format("the document expands to more than {} values; aliases (*name) "
                                   "repeat their anchor's content each time they are used, so "
                                   "use fewer of them",
                                   limits_.max_nodes));
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        scalar_bytes_ += node.Scalar().size();
        if (scalar_bytes_ > limits_.max_scalar_bytes)
          throw YAML::Exception(
              node.Mark(), fmt::format("the document expands to more than {} bytes of text; "
                                       "aliases (*name) repeat their anchor's content each time "
                                       "they are used, so use fewer of them",
                                       limits_.max_scalar_bytes));
        return scalar_to_json(node);
      case YAML::NodeType::Sequence: {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& item : node) arr.push_back(convert(item, depth + 1));
        return arr;
      }
      case YAML::NodeType::Map: {
        nlohmann::json obj = nlohmann::json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar())
            throw YAML::Exception(kv.first.Mark(), "map keys must be plain strings");
          obj[kv.first.Scalar()] = convert(kv.second, depth + 1);
        }
        return obj;
      }
    }
    return nullptr;
  }

 private:
  const YamlLimits& limits_;
  size_t nodes_ = 0;
  size_t scalar_bytes_ = 0;
};

/// Whether a quote, bracket or block scalar indicator at `i` starts a token (and is not text
/// inside a plain scalar such as `it's` or `a[1]`).
bool token_start(const std::string& line, size_t i, size_t content) {
  if (i == content) return true;
  char p = line[i - 1];
  return p == ' ' || p == '\t' || p == '[' || p == '{' || p == ',' || p == ':';
}

}  // namespace

Status check_yaml_text(const std::string& text, const std::string& source_name,
                       const YamlLimits& limits) {
  if (text.size() > limits.max_bytes)
    return Error{ErrorCode::kTooLarge,
                 fmt::format("{}: {} bytes is above the limit of {} bytes for a YAML document",
                             source_name, text.size(), limits.max_bytes)};
  // An upper bound of the nesting, line by line: block levels are the open indentation columns
  // plus the content column after each `- `, `? ` or `: ` indicator (counted twice, as a
  // sequence may sit at its parent key's column); flow levels are the open brackets.
  std::vector<size_t> columns;
  int flow = 0;
  bool dq = false, sq = false;  // inside a double- or single-quoted scalar
  long block_scalar = -1;       // indentation of the line that opened a | or > scalar
  size_t line_start = 0;
  int line_no = 0;
  while (line_start < text.size()) {
    size_t nl = text.find('\n', line_start);
    std::string line =
        text.substr(line_start, nl == std::string::npos ? std::string::npos : nl - line_start);
    line_start = nl == std::string::npos ? text.size() : nl + 1;
    ++line_no;
    // YAML is UTF-8 text; yaml-cpp passes other bytes through, and JSON output would throw on
    // them later, far from the line that held them.
    if (!is_valid_utf8(line))
      return invalid(fmt::format("{}:{}: the line is not valid UTF-8; save the file as UTF-8",
                                 source_name, line_no));
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    if (block_scalar >= 0) {
      if (static_cast<long>(indent) > block_scalar) continue;
      block_scalar = -1;
    }
    size_t pos = indent;
    if (!dq && !sq && flow == 0) {
      while (!columns.empty() && columns.back() >= indent) columns.pop_back();
      columns.push_back(indent);
      while (pos < line.size() && (line[pos] == '-' || line[pos] == '?' || line[pos] == ':') &&
             (pos + 1 == line.size() || line[pos + 1] == ' ')) {
        pos = line.find_first_not_of(' ', pos + 1);
        if (pos == std::string::npos) pos = line.size();
        columns.push_back(pos);
      }
    }
    size_t content = pos;
    for (size_t i = pos; i < line.size(); ++i) {
      char c = line[i];
      if (dq) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          dq = false;
      } else if (sq) {
        if (c == '\'' && i + 1 < line.size() && line[i + 1] == '\'')
          ++i;
        else if (c == '\'')
          sq = false;
      } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
        break;
      } else if ((c == '"' || c == '\'') && token_start(line, i, content)) {
        (c == '"' ? dq : sq) = true;
      } else if ((c == '[' || c == '{') && (flow > 0 || token_start(line, i, content))) {
        ++flow;
        if (static_cast<int>(columns.size()) * 2 + flow > limits.max_depth)
          return invalid(
              fmt::format("{}:{}:{}: nesting deeper than {} levels; flatten the "
                          "document",
                          source_name, line_no, i + 1, limits.max_depth));
      } else if ((c == ']' || c == '}') && flow > 0) {
        --flow;
      } else if ((c == '|' || c == '>') && flow == 0 && token_start(line, i, content) &&
                 line.find_first_not_of("0123456789+- \t\r", i + 1) == std::string::npos) {
        block_scalar = static_cast<long>(indent);
        break;
      }
    }
    if (static_cast<int>(columns.size()) * 2 + flow > limits.max_depth)
      return invalid(fmt::format("{}:{}:1: nesting deeper than {} levels; flatten the document",
                                 source_name, line_no, limits.max_depth));
  }
  return {};
}

Result<nlohmann::json> yaml_to_json(const std::string& text, const std::string& source_name,
                                    const YamlLimits& limits) {
  GPUCLOUD_TRY(check_yaml_text(text, source_name, limits));
  try {
    YAML::Node root = YAML::Load(text);
    Converter converter(limits);
    return converter.convert(root, 0);
  } catch (const YAML::Exception& e) {
    return invalid(
        fmt::format("{}:{}:{}: {}", source_name, e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const std::bad_alloc&) {
    return Error{ErrorCode::kTooLarge, fmt::format("{}: too large to read in memory", source_name)};
  }
}

}  // namespace gpucloud
