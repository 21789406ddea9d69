#include "model/container_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "model/job_spec.h"
#include "model/json_fields.h"

namespace gpucloud {

using json = nlohmann::json;

const char* to_string(PullPolicy p) {
  switch (p) {
    case PullPolicy::kIfNotPresent:
      return "if-not-present";
    case PullPolicy::kAlways:
      return "always";
    case PullPolicy::kNever:
      return "never";
  }
  return "if-not-present";
}

bool is_plain_name(const std::string& name) {
  if (name.empty() || name.size() > ContainerSpecLimits::kMaxNameLength) return false;
  if (name[0] == '.' || name[0] == '-') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-' || c == '.'))
      return false;
  return true;
}

namespace {

Error field_error(const std::string& field, const std::string& what) {
  return invalid(fmt::format("{}: {}", field, what));
}

Result<std::string> read_string(const json& v, const std::string& field) {
  if (!v.is_string())
    return field_error(field, fmt::format("expected a string, got {}", json_excerpt(v)));
  if (!is_valid_utf8(v.get_ref<const std::string&>()))
    return field_error(field, "is not valid UTF-8");
  return v.get<std::string>();
}

bool valid_image_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == '/' || c == ':' || c == '@' || c == '+';
}

// An absolute path without "..", NUL or ',' (podman's --mount separator).
Status check_path(const std::string& field, const std::string& path, const char* what) {
  if (path.empty() || path[0] != '/')
    return field_error(field, fmt::format("'{}' is not an absolute path; give the {} as /path",
                                          path.substr(0, 128), what));
  if (path.size() > ContainerSpecLimits::kMaxPathLength)
    return field_error(field, fmt::format("is {} characters long; the maximum is {}", path.size(),
                                          ContainerSpecLimits::kMaxPathLength));
  if (path.find('\0') != std::string::npos) return field_error(field, "contains a NUL byte");
  if (path.find(',') != std::string::npos)
    return field_error(
        field, fmt::format("'{}' contains ',', which a mount path may not", path.substr(0, 128)));
  if (path == "/.." || path.find("/../") != std::string::npos ||
      (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0))
    return field_error(
        field, fmt::format("'{}' contains '..'; give the path without it", path.substr(0, 128)));
  return {};
}

Result<ContainerMount> read_mount(const json& v, const std::string& field) {
  if (!v.is_object())
    return field_error(field, fmt::format("expected {{\"source\": ..., \"target\": ..., "
                                          "\"read_only\": false}}, got {}",
                                          json_excerpt(v)));
  ContainerMount m;
  for (const auto& [key, value] : v.items()) {
    if (key == "source" || key == "target") {
      auto s = read_string(value, field + "." + key);
      if (!s) return s.error();
      (key == "source" ? m.source : m.target) = *s;
    } else if (key == "read_only") {
      if (!value.is_boolean())
        return field_error(field + ".read_only",
                           fmt::format("expected true or false, got {}", json_excerpt(value)));
      m.read_only = value.get<bool>();
    } else {
      return field_error(field + "." + key.substr(0, 64),
                         "unknown field; a mount has source, target and read_only");
    }
  }
  return m;
}

Result<std::vector<std::string>> read_string_list(const json& v, const std::string& field,
                                                  size_t max_items) {
  if (!v.is_array())
    return field_error(field, fmt::format("expected a list of strings, got {}", json_excerpt(v)));
  if (v.size() > max_items)
    return field_error(field,
                       fmt::format("has {} entries; the maximum is {}", v.size(), max_items));
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].is_number() || v[i].is_boolean()) {  // YAML: [sleep, 10]
      out.push_back(v[i].dump());
      continue;
    }
    auto s = read_string(v[i], fmt::format("{}[{}]", field, i));
    if (!s) return s.error();
    out.push_back(*s);
  }
  return out;
}

}  // namespace

bool is_container_field(const std::string& key) {
  return key == "image" || key == "mounts" || key == "shm_size" || key == "pull_policy" ||
         key == "entrypoint" || key == "registry_auth";
}

Status read_container_field(const std::string& key, const json& v, ContainerSpec& spec) {
  if (key == "image" || key == "registry_auth") {
    auto s = read_string(v, key);
    if (!s) return s.error();
    (key == "image" ? spec.image : spec.registry_auth) = *s;
  } else if (key == "mounts") {
    if (!v.is_array())
      return field_error(key, fmt::format("expected a list of mounts, got {}", json_excerpt(v)));
    if (v.size() > ContainerSpecLimits::kMaxMounts)
      return field_error(key, fmt::format("has {} mounts; the maximum is {}", v.size(),
                                          ContainerSpecLimits::kMaxMounts));
    spec.mounts.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      auto m = read_mount(v[i], fmt::format("mounts[{}]", i));
      if (!m) return m.error();
      spec.mounts.push_back(*m);
    }
  } else if (key == "shm_size") {
    if (v.is_number()) {
      double mib = v.get<double>();
      if (!(mib >= 0) || mib > static_cast<double>(ContainerSpecLimits::kMaxShmSizeMib))
        return field_error(key, fmt::format("{} MiB is outside 0..{} MiB", json_excerpt(v),
                                            ContainerSpecLimits::kMaxShmSizeMib));
      spec.shm_size_mib = static_cast<int64_t>(std::ceil(mib));
    } else if (v.is_string()) {
      auto mib = parse_size_mib(v.get<std::string>());
      if (!mib) return field_error(key, mib.error().message);
      spec.shm_size_mib = *mib;
    } else {
      return field_error(key,
                         fmt::format("expected a size like \"1GiB\", got {}", json_excerpt(v)));
    }
  } else if (key == "pull_policy") {
    auto s = read_string(v, key);
    if (!s) return s.error();
    if (*s == "if-not-present" || *s == "missing")
      spec.pull_policy = PullPolicy::kIfNotPresent;
    else if (*s == "always")
      spec.pull_policy = PullPolicy::kAlways;
    else if (*s == "never")
      spec.pull_policy = PullPolicy::kNever;
    else
      return field_error(
          key, fmt::format("'{}' is not one of: always, if-not-present, never", s->substr(0, 64)));
  } else if (key == "entrypoint") {
    auto list = read_string_list(v, key, ContainerSpecLimits::kMaxEntrypointArgs);
    if (!list) return list.error();
    spec.entrypoint = *list;
  } else {
    return field_error(key, "is not a container field");
  }
  return {};
}

Status validate_container_spec(const ContainerSpec& spec) {
  if (spec.image.empty()) {
    const char* given = !spec.mounts.empty()                            ? "mounts"
                        : spec.shm_size_mib > 0                         ? "shm_size"
                        : !spec.entrypoint.empty()                      ? "entrypoint"
                        : !spec.registry_auth.empty()                   ? "registry_auth"
                        : spec.pull_policy != PullPolicy::kIfNotPresent ? "pull_policy"
                                                                        : nullptr;
    if (given) return field_error(given, "is set but the job has no image; add image (or --image)");
    return {};
  }
  if (spec.image.size() > ContainerSpecLimits::kMaxImageLength)
    return field_error("image",
                       fmt::format("is {} characters long; the maximum is {}", spec.image.size(),
                                   ContainerSpecLimits::kMaxImageLength));
  bool first_ok = (spec.image[0] >= 'a' && spec.image[0] <= 'z') ||
                  (spec.image[0] >= 'A' && spec.image[0] <= 'Z') ||
                  (spec.image[0] >= '0' && spec.image[0] <= '9');
  for (char c : spec.image)
    if (!first_ok || !valid_image_char(c))
      return field_error("image",
                         fmt::format("'{}' is not an image reference like "
                                     "registry.example.com/team/train:1.2 or name@sha256:...",
                                     spec.image.substr(0, 128)));
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const auto& m = spec.mounts[i];
    std::string field = fmt::format("mounts[{}]", i);
    if (m.source.empty())
      return field_error(field + ".source", "is empty; give a host path or a volume name");
    if (m.source[0] == '/') {
      GPUCLOUD_TRY(check_path(field + ".source", m.source, "host path"));
    } else if (!is_plain_name(m.source)) {
      return field_error(field + ".source",
                         fmt::format("'{}' is neither an absolute host path nor a volume name "
                                     "(letters, digits, '_', '-', '.', at most 64)",
                                     m.source.substr(0, 128)));
    }
    GPUCLOUD_TRY(check_path(field + ".target", m.target, "path inside the container"));
    if (m.target == "/" || m.target.rfind("/proc", 0) == 0 || m.target.rfind("/sys", 0) == 0 ||
        m.target.rfind("/dev", 0) == 0)
      return field_error(field + ".target",
                         fmt::format("'{}' is reserved (/, /proc, /sys, /dev); mount elsewhere",
                                     m.target.substr(0, 128)));
    for (size_t k = 0; k < i; ++k)
      if (spec.mounts[k].target == m.target)
        return field_error(field + ".target",
                           fmt::format("'{}' is the target of mounts[{}] too", m.target, k));
  }
  if (spec.shm_size_mib < 0 || spec.shm_size_mib > ContainerSpecLimits::kMaxShmSizeMib)
    return field_error("shm_size",
                       fmt::format("{} is outside 0..{}", format_size_mib(spec.shm_size_mib),
                                   format_size_mib(ContainerSpecLimits::kMaxShmSizeMib)));
  size_t bytes = 0;
  for (size_t i = 0; i < spec.entrypoint.size(); ++i) {
    if (spec.entrypoint[i].find('\0') != std::string::npos)
      return field_error(fmt::format("entrypoint[{}]", i), "contains a NUL byte");
    bytes += spec.entrypoint[i].size() + 1;
  }
  if (!spec.entrypoint.empty() && spec.entrypoint[0].empty())
    return field_error("entrypoint[0]", "is empty; give the program to run");
  if (spec.entrypoint.size() > ContainerSpecLimits::kMaxEntrypointArgs ||
      bytes > ContainerSpecLimits::kMaxEntrypointBytes)
    return field_error("entrypoint", fmt::format("is too long ({} arguments, {} bytes; the "
                                                 "maximum is {} and {})",
                                                 spec.entrypoint.size(), bytes,
                                                 ContainerSpecLimits::kMaxEntrypointArgs,
                                                 ContainerSpecLimits::kMaxEntrypointBytes));
  if (!spec.registry_auth.empty() && !is_plain_name(spec.registry_auth))
    return field_error("registry_auth",
                       fmt::format("'{}' is not the plain name of a credentials file on the node "
                                   "(letters, digits, '_', '-', '.'; no '/'); put the credentials "
                                   "in <registry-auth-dir>/NAME.json there and give NAME",
                                   spec.registry_auth.substr(0, 64)));
  return {};
}

void container_spec_to_json(const ContainerSpec& spec, json& j) {
  if (spec.image.empty()) return;
  j["image"] = spec.image;
  json mounts = json::array();
  for (const auto& m : spec.mounts)
    mounts.push_back({{"source", m.source}, {"target", m.target}, {"read_only", m.read_only}});
  j["mounts"] = mounts;
  if (spec.shm_size_mib > 0) j["shm_size"] = spec.shm_size_mib;
  j["pull_policy"] = to_string(spec.pull_policy);
  if (!spec.entrypoint.empty()) j["entrypoint"] = spec.entrypoint;
  if (!spec.registry_auth.empty()) j["registry_auth"] = spec.registry_auth;
}

Result<ContainerMount> parse_mount_flag(const std::string& text) {
  ContainerMount m;
  size_t first = text.find(':');
  if (first == std::string::npos)
    return invalid(
        fmt::format("--mount '{}' must be SRC:DST or SRC:DST:ro, e.g. "
                    "/data/imagenet:/data:ro",
                    text.substr(0, 128)));
  m.source = text.substr(0, first);
  std::string rest = text.substr(first + 1);
  size_t second = rest.find(':');
  m.target = rest.substr(0, second);
  if (second != std::string::npos) {
    std::string mode = rest.substr(second + 1);
    if (mode == "ro")
      m.read_only = true;
    else if (mode != "rw")
      return invalid(fmt::format("--mount '{}': '{}' is not ro or rw", text.substr(0, 128),
                                 mode.substr(0, 16)));
  }
  return m;
}

}  // namespace gpucloud
