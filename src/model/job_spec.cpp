#include "model/job_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "model/json_fields.h"
#include "model/spot_price.h"

namespace gpucloud {

using json = nlohmann::json;

const char* to_string(CapacityClass c) {
  switch (c) {
    case CapacityClass::kOnDemand:
      return "on-demand";
    case CapacityClass::kSpot:
      return "spot";
    case CapacityClass::kAny:
      return "any";
  }
  return "any";
}

const char* to_string(RestartPolicy r) {
  switch (r) {
    case RestartPolicy::kNever:
      return "never";
    case RestartPolicy::kOnLost:
      return "on-lost";
    case RestartPolicy::kOnFailure:
      return "on-failure";
    case RestartPolicy::kAlways:
      return "always";
  }
  return "on-lost";
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int extra = 0;
    uint32_t cp = 0;
    if ((c & 0xe0) == 0xc0) {
      extra = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i <= static_cast<size_t>(extra)) return false;
    for (int k = 1; k <= extra; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((extra == 1 && cp < 0x80) ||
        (extra == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (extra == 3 && (cp < 0x10000 || cp > 0x10ffff)))
      return false;
    i += extra + 1;
  }
  return true;
}

bool valid_priority_name(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

namespace {

std::string describe(const json& v) {
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return fmt::format("{} {}", v.type_name(), text);
}

Error field_error(const std::string& field, const std::string& what) {
  return invalid(fmt::format("{}: {}", field, what));
}

Result<std::string> read_string(const json& v, const std::string& field) {
  if (!v.is_string())
    return field_error(field, fmt::format("expected a string, got {}", describe(v)));
  const auto& s = v.get_ref<const std::string&>();
  if (!is_valid_utf8(s)) return field_error(field, "is not valid UTF-8");
  return s;
}

Result<int64_t> read_int(const json& v, const std::string& field, int64_t lo, int64_t hi,
                         const std::string& hint) {
  int64_t n = 0;
  if (v.is_number_unsigned()) {  // first: is_number_integer() is true for unsigned too
    if (v.get<uint64_t>() > static_cast<uint64_t>(hi))
      return field_error(field, fmt::format("{} is above the maximum {}{}", v.dump(), hi, hint));
    n = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) {
    // 1e18 is whole but may not fit int64: compare as a double before converting.
    double d = v.get<double>();
    if (d < static_cast<double>(lo))
      return field_error(field, fmt::format("{} is below the minimum {}", v.dump(), lo));
    if (d > static_cast<double>(hi))
      return field_error(field, fmt::format("{} is above the maximum {}{}", v.dump(), hi, hint));
    n = static_cast<int64_t>(d);
  } else {
    return field_error(field, fmt::format("expected a whole number, got {}", describe(v)));
  }
  if (n < lo) return field_error(field, fmt::format("{} is below the minimum {}", n, lo));
  if (n > hi) return field_error(field, fmt::format("{} is above the maximum {}{}", n, hi, hint));
  return n;
}

Result<int64_t> read_duration(const json& v, const std::string& field) {
  if (v.is_number()) {
    double secs = v.get<double>();
    if (secs < 0)
      return field_error(field,
                         fmt::format("{} is negative; give a duration like 30s or 2h", v.dump()));
    if (secs > 10.0 * 365 * 86400)
      return field_error(field, fmt::format("{} seconds is above 10 years", v.dump()));
    return static_cast<int64_t>(std::llround(secs * 1000));
  }
  if (!v.is_string())
    return field_error(field, fmt::format("expected a duration like \"30s\", got {}", describe(v)));
  auto r = parse_duration_ms(v.get<std::string>());
  if (!r) return field_error(field, r.error().message);
  return *r;
}

Result<int64_t> read_size(const json& v, const std::string& field) {
  if (v.is_number()) {
    double mib = v.get<double>();
    if (mib < 0)
      return field_error(field, fmt::format("{} is negative; give a size like 16GiB", v.dump()));
    if (mib > 1024.0 * 1024 * 1024)
      return field_error(field, fmt::format("{} MiB is above 1 PiB", v.dump()));
    return static_cast<int64_t>(std::ceil(mib));
  }
  if (!v.is_string())
    return field_error(field, fmt::format("expected a size like \"16GiB\", got {}", describe(v)));
  auto r = parse_size_mib(v.get<std::string>());
  if (!r) return field_error(field, r.error().message);
  return *r;
}

Result<std::map<std::string, std::string>> read_string_map(const json& v, const std::string& field,
                                                           size_t max_entries) {
  if (!v.is_object())
    return field_error(field, fmt::format("expected an object of strings, got {}", describe(v)));
  if (v.size() > max_entries)
    return field_error(field,
                       fmt::format("has {} entries; the maximum is {}", v.size(), max_entries));
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : v.items()) {
    if (!is_valid_utf8(key)) return field_error(field, "a key is not valid UTF-8");
    std::string name = field + "." + key;
    if (value.is_number() || value.is_boolean()) {
      out[key] = value.dump();
      continue;
    }
    auto s = read_string(value, name);
    if (!s) return s.error();
    out[key] = *s;
  }
  return out;
}

template <typename E>
Result<E> read_enum(const json& v, const std::string& field,
                    std::initializer_list<std::pair<const char*, E>> options) {
  auto s = read_string(v, field);
  if (!s) return s.error();
  std::string names;
  for (const auto& [name, value] : options) {
    if (*s == name) return value;
    names += names.empty() ? name : std::string(", ") + name;
  }
  return field_error(field, fmt::format("'{}' is not one of: {}", *s, names));
}

Result<RestartSpec> read_restart(const json& v) {
  RestartSpec out;
  if (v.is_string()) {
    auto p = read_enum<RestartPolicy>(v, "restart",
                                      {{"never", RestartPolicy::kNever},
                                       {"on-lost", RestartPolicy::kOnLost},
                                       {"on-failure", RestartPolicy::kOnFailure},
                                       {"always", RestartPolicy::kAlways}});
    if (!p) return p.error();
    out.policy = *p;
    return out;
  }
  if (!v.is_object())
    return field_error(
        "restart", fmt::format("expected {{\"policy\": ..., \"max\": N}}, got {}", describe(v)));
  for (const auto& [key, value] : v.items()) {
    if (key == "policy") {
      auto p = read_enum<RestartPolicy>(value, "restart.policy",
                                        {{"never", RestartPolicy::kNever},
                                         {"on-lost", RestartPolicy::kOnLost},
                                         {"on-failure", RestartPolicy::kOnFailure},
                                         {"always", RestartPolicy::kAlways}});
      if (!p) return p.error();
      out.policy = *p;
    } else if (key == "max") {
      auto n = read_int(value, "restart.max", 0, JobSpecLimits::kMaxRestarts, "");
      if (!n) return n.error();
      out.max = static_cast<int>(*n);
    } else {
      return field_error("restart." + key, "unknown field; restart has 'policy' and 'max'");
    }
  }
  return out;
}

}  // namespace

Result<JobSpec> job_spec_from_json(const json& j) {
  if (!j.is_object())
    return invalid(fmt::format("a job spec must be a JSON object, got {}", describe(j)));
  JobSpec spec;
  bool gpus_given = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "name") {
      auto s = read_string(v, key);
      if (!s) return s.error();
      spec.name = *s;
    } else if (key == "command") {
      if (v.is_string())
        return field_error(key,
                           "expected a list of arguments (argv), got a string; write [\"sh\", "
                           "\"-c\", \"...\"] to use a shell");
      if (!v.is_array())
        return field_error(key, fmt::format("expected a list of strings, got {}", describe(v)));
      if (v.size() > JobSpecLimits::kMaxCommandArgs)
        return field_error(key, fmt::format("has {} arguments; the maximum is {}; put long inputs "
                                            "in a file",
                                            v.size(), JobSpecLimits::kMaxCommandArgs));
      for (size_t i = 0; i < v.size(); ++i) {
        // YAML reads `command: [sleep, 10]` as a number: arguments that are plain numbers or
        // booleans are taken as the text they were written as.
        if (v[i].is_number() || v[i].is_boolean()) {
          spec.command.push_back(v[i].dump());
          continue;
        }
        auto s = read_string(v[i], fmt::format("command[{}]", i));
        if (!s) return s.error();
        spec.command.push_back(*s);
      }
    } else if (key == "replicas") {
      auto n = read_int(v, key, 1, JobSpecLimits::kMaxReplicas, "");
      if (!n) return n.error();
      spec.replicas = static_cast<int>(*n);
    } else if (key == "gpus") {
      auto n = read_int(v, key, 0, JobSpecLimits::kMaxGpusPerReplica,
                        " GPUs per replica; use replicas for more");
      if (!n) return n.error();
      spec.gpus = static_cast<int>(*n);
      gpus_given = true;
    } else if (key == "gpu_model") {
      auto s = read_string(v, key);
      if (!s) return s.error();
      spec.gpu_model = *s;
    } else if (key == "gpu_milli") {
      auto n =
          read_int(v, key, 0, 999, " (a share of one GPU in thousandths; for whole GPUs use gpus)");
      if (!n) return n.error();
      spec.gpu_milli = static_cast<int>(*n);
    } else if (key == "gpu_memory") {
      auto n = read_size(v, key);
      if (!n) return n.error();
      spec.gpu_memory_mib = *n;
    } else if (key == "cpus") {
      if (!v.is_number())
        return field_error(
            key, fmt::format("expected a number of cores like 4 or 0.5, got {}", describe(v)));
      double cpus = v.get<double>();
      if (!(cpus > 0)) return field_error(key, fmt::format("{} must be above 0", v.dump()));
      if (cpus > JobSpecLimits::kMaxCpuMilli / 1000.0)
        return field_error(key, fmt::format("{} is above the maximum {}", v.dump(),
                                            JobSpecLimits::kMaxCpuMilli / 1000));
      spec.cpu_milli = std::max<int64_t>(1, std::llround(cpus * 1000));
    } else if (key == "memory") {
      auto n = read_size(v, key);
      if (!n) return n.error();
      spec.memory_mib = *n;
    } else if (key == "tenant") {
      auto s = read_string(v, key);
      if (!s) return s.error();
      spec.tenant = *s;
    } else if (key == "priority") {
      auto p = read_string(v, key);
      if (!p) return p.error();
      if (!valid_priority_name(*p))
        return invalid(fmt::format(
            "priority: '{}' is not a priority class name (lowercase letters, digits and '-', "
            "at most 32); e.g. low, normal, high",
            *p));
      spec.priority = *p;
    } else if (key == "capacity_class") {
      auto c = read_enum<CapacityClass>(v, key,
                                        {{"on-demand", CapacityClass::kOnDemand},
                                         {"spot", CapacityClass::kSpot},
                                         {"any", CapacityClass::kAny}});
      if (!c) return c.error();
      spec.capacity_class = *c;
    } else if (key == "max_price") {
      if (!v.is_number())
        return field_error(key,
                           fmt::format("expected USD per GPU-hour like 2.5, got {}", describe(v)));
      spec.max_price = v.get<double>();
      if (!valid_max_price(spec.max_price))
        return field_error(key, fmt::format("{} must be above 0 and at most {} USD per GPU-hour",
                                            v.dump(), kMaxPricePerGpuHour));
    } else if (key == "max_cost") {
      if (!v.is_number())
        return field_error(key, fmt::format("expected USD like 250, got {}", describe(v)));
      spec.max_cost = v.get<double>();
      if (!(spec.max_cost > 0 && spec.max_cost <= JobSpecLimits::kMaxCostUsd))
        return field_error(key, fmt::format("{} must be above 0 and at most {:g} USD",
                                            json_excerpt(v), JobSpecLimits::kMaxCostUsd));
    } else if (key == "node_selector") {
      auto m = read_string_map(v, key, JobSpecLimits::kMaxNodeSelectorLabels);
      if (!m) return m.error();
      spec.node_selector = *m;
    } else if (key == "max_runtime") {
      auto d = read_duration(v, key);
      if (!d) return d.error();
      spec.max_runtime_ms = *d;
    } else if (key == "expected_runtime") {
      auto d = read_duration(v, key);
      if (!d) return d.error();
      spec.expected_runtime_ms = *d;
    } else if (key == "restart") {
      auto r = read_restart(v);
      if (!r) return r.error();
      spec.restart = *r;
    } else if (key == "grace_period") {
      auto d = read_duration(v, key);
      if (!d) return d.error();
      spec.grace_period_ms = *d;
    } else if (key == "idle_timeout") {
      if (v.is_string() && (v.get<std::string>() == "off" || v.get<std::string>() == "never")) {
        spec.idle_timeout_ms = kIdleTimeoutOff;
      } else {
        auto d = read_duration(v, key);
        if (!d) return d.error();
        spec.idle_timeout_ms = *d;
      }
    } else if (key == "env") {
      auto m = read_string_map(v, key, JobSpecLimits::kMaxEnvVars);
      if (!m) return m.error();
      spec.env = *m;
    } else if (key == "workdir") {
      auto s = read_string(v, key);
      if (!s) return s.error();
      spec.workdir = *s;
    } else if (is_container_field(key)) {
      GPUCLOUD_TRY(read_container_field(key, v, spec.container));
    } else {
      return invalid(fmt::format(
          "{}: unknown field; a job spec has name, command, replicas, gpus, gpu_model, gpu_milli, "
          "gpu_memory, cpus, memory, tenant, priority, capacity_class, max_price, max_cost, "
          "node_selector, max_runtime, expected_runtime, restart, grace_period, idle_timeout, env, "
          "workdir, image, entrypoint, mounts, shm_size, pull_policy, registry_auth (see "
          "docs/jobspec.md)",
          key.size() > 64 ? key.substr(0, 64) + "..." : key));
    }
  }
  if (spec.gpu_milli > 0 && !gpus_given) spec.gpus = 1;
  GPUCLOUD_TRY(validate_job_spec(spec));
  return spec;
}

namespace {

bool valid_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

bool valid_env_key(const std::string& k) {
  if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

Status validate_name(const std::string& field, const std::string& value, size_t max_len) {
  if (value.size() > max_len)
    return field_error(
        field, fmt::format("is {} characters long; the maximum is {}", value.size(), max_len));
  for (char c : value)
    if (!valid_name_char(c))
      return field_error(
          field, fmt::format("'{}' may contain only letters, digits, '-', '_' and '.'", value));
  return {};
}

}  // namespace

Status validate_job_spec(JobSpec& spec) {
  // A container job may leave its command out: the image's CMD runs.
  if (spec.container.image.empty() ? spec.command.empty() || spec.command[0].empty()
                                   : !spec.command.empty() && spec.command[0].empty())
    return field_error(
        "command",
        "is empty; give the program and its arguments, e.g. gpucloud run -- python train.py");
  size_t command_bytes = 0;
  for (size_t i = 0; i < spec.command.size(); ++i) {
    if (spec.command[i].find('\0') != std::string::npos)
      return field_error(fmt::format("command[{}]", i), "contains a NUL byte");
    command_bytes += spec.command[i].size() + 1;
  }
  if (command_bytes > JobSpecLimits::kMaxCommandBytes)
    return field_error("command",
                       fmt::format("is {} bytes; the maximum is {}; put long inputs in a file",
                                   command_bytes, JobSpecLimits::kMaxCommandBytes));
  if (spec.name.empty()) {
    // From the command's program, else the image's name without registry, tag or digest.
    const std::string& image = spec.container.image;
    std::string base = !spec.command.empty()
                           ? spec.command[0].substr(spec.command[0].find_last_of('/') + 1)
                           : image.substr(image.find_last_of('/') + 1);
    if (spec.command.empty()) base = base.substr(0, base.find_first_of(":@"));
    for (char c : base)
      if (valid_name_char(c) && spec.name.size() < 63) spec.name += c;
    if (spec.name.empty()) spec.name = "job";
  }
  GPUCLOUD_TRY(validate_name("name", spec.name, JobSpecLimits::kMaxNameLength));
  if (spec.tenant.empty())
    return field_error("tenant", "is empty; leave it out for the default tenant");
  GPUCLOUD_TRY(validate_name("tenant", spec.tenant, 63));
  if (spec.replicas < 1 || spec.replicas > JobSpecLimits::kMaxReplicas)
    return field_error(
        "replicas", fmt::format("{} is outside 1..{}", spec.replicas, JobSpecLimits::kMaxReplicas));
  if (spec.gpus < 0 || spec.gpus > JobSpecLimits::kMaxGpusPerReplica)
    return field_error(
        "gpus", fmt::format("{} is outside 0..{}", spec.gpus, JobSpecLimits::kMaxGpusPerReplica));
  if (spec.gpu_milli < 0 || spec.gpu_milli > 999)
    return field_error(
        "gpu_milli",
        fmt::format("{} is outside 1..999 (a share of one GPU); for whole GPUs use gpus",
                    spec.gpu_milli));
  if (spec.gpu_milli > 0 && spec.gpus != 1)
    return field_error(
        "gpu_milli",
        fmt::format("a GPU share needs gpus 1, got gpus {}; ask for whole GPUs or for one share",
                    spec.gpus));
  if (spec.gpu_milli == 0 && spec.gpus == 0 && (!spec.gpu_model.empty() || spec.gpu_memory_mib > 0))
    return field_error(spec.gpu_model.empty() ? "gpu_memory" : "gpu_model",
                       "is set but the job asks for no GPU; add gpus");
  for (char c : spec.gpu_model)
    if (!valid_name_char(c) && c != '|' && c != '/')
      return field_error("gpu_model",
                         fmt::format("'{}' is not a list of models like A100|H100, A100-80GB or "
                                     "A100-80GB/1g.10gb (a MIG device)",
                                     spec.gpu_model));
  if (spec.gpu_model.size() > 256) return field_error("gpu_model", "is longer than 256 characters");
  if (spec.cpu_milli <= 0 || spec.cpu_milli > JobSpecLimits::kMaxCpuMilli)
    return field_error("cpus", fmt::format("{} is outside (0, {}]", spec.cpu_milli / 1000.0,
                                           JobSpecLimits::kMaxCpuMilli / 1000));
  if (spec.memory_mib < 0) return field_error("memory", "is negative");
  if (spec.gpu_memory_mib < 0) return field_error("gpu_memory", "is negative");
  for (const auto& [k, v] : spec.node_selector) {
    if (k.empty() || k.size() > 63)
      return field_error("node_selector",
                         fmt::format("label key '{}' must be 1..63 characters", k));
    if (v.size() > 256) return field_error("node_selector." + k, "is longer than 256 characters");
  }
  if (spec.max_runtime_ms < 0) return field_error("max_runtime", "is negative");
  if (spec.max_price != 0 && !valid_max_price(spec.max_price))
    return field_error("max_price", fmt::format("{} must be above 0 and at most {} USD per "
                                                "GPU-hour",
                                                spec.max_price, kMaxPricePerGpuHour));
  if (spec.max_cost != 0 && !(spec.max_cost > 0 && spec.max_cost <= JobSpecLimits::kMaxCostUsd))
    return field_error("max_cost", fmt::format("{} must be above 0 and at most {:g} USD",
                                               spec.max_cost, JobSpecLimits::kMaxCostUsd));
  if (spec.expected_runtime_ms < 0) return field_error("expected_runtime", "is negative");
  if (spec.grace_period_ms < 0 || spec.grace_period_ms > JobSpecLimits::kMaxGracePeriodMs)
    return field_error("grace_period", fmt::format("{} is outside 0s..1h",
                                                   format_duration_ms(spec.grace_period_ms)));
  if (spec.idle_timeout_ms != kIdleTimeoutOff && spec.idle_timeout_ms != 0 &&
      (spec.idle_timeout_ms < JobSpecLimits::kMinIdleTimeoutMs ||
       spec.idle_timeout_ms > JobSpecLimits::kMaxIdleTimeoutMs))
    return field_error("idle_timeout",
                       fmt::format("{} is outside 1s..30d; give a window like 2h, or off",
                                   format_duration_ms(spec.idle_timeout_ms)));
  if (spec.restart.max < 0 || spec.restart.max > JobSpecLimits::kMaxRestarts)
    return field_error("restart.max", fmt::format("{} is outside 0..{}", spec.restart.max,
                                                  JobSpecLimits::kMaxRestarts));
  if (spec.node_selector.size() > JobSpecLimits::kMaxNodeSelectorLabels)
    return field_error("node_selector",
                       fmt::format("has {} labels; the maximum is {}", spec.node_selector.size(),
                                   JobSpecLimits::kMaxNodeSelectorLabels));
  if (spec.env.size() > JobSpecLimits::kMaxEnvVars)
    return field_error("env", fmt::format("has {} variables; the maximum is {}", spec.env.size(),
                                          JobSpecLimits::kMaxEnvVars));
  size_t env_bytes = 0;
  for (const auto& [k, v] : spec.env) {
    if (!valid_env_key(k))
      return field_error("env", fmt::format("'{}' is not a valid variable name (letters, digits "
                                            "and '_', not starting with a digit)",
                                            k.size() > 64 ? k.substr(0, 64) + "..." : k));
    if (k.rfind("GPUCLOUD_", 0) == 0 || k == "CUDA_VISIBLE_DEVICES" ||
        k == "NVIDIA_VISIBLE_DEVICES")
      return field_error("env." + k, "is set by gpucloud itself and cannot be overridden");
    if (v.find('\0') != std::string::npos) return field_error("env." + k, "contains a NUL byte");
    env_bytes += k.size() + v.size() + 2;
  }
  if (env_bytes > JobSpecLimits::kMaxEnvBytes)
    return field_error("env", fmt::format("is {} bytes; the maximum is {}", env_bytes,
                                          JobSpecLimits::kMaxEnvBytes));
  if (!spec.workdir.empty() && spec.workdir[0] != '/')
    return field_error("workdir", fmt::format("'{}' is not an absolute path", spec.workdir));
  if (spec.workdir.size() > 4096) return field_error("workdir", "is longer than 4096 characters");
  return validate_container_spec(spec.container);
}

json job_spec_to_json(const JobSpec& spec) {
  json j;
  j["name"] = spec.name;
  j["command"] = spec.command;
  j["replicas"] = spec.replicas;
  j["gpus"] = spec.gpus;
  j["gpu_model"] = spec.gpu_model;
  j["gpu_milli"] = spec.gpu_milli;
  j["gpu_memory"] = spec.gpu_memory_mib;
  j["cpus"] = spec.cpu_milli / 1000.0;
  j["memory"] = spec.memory_mib;
  j["tenant"] = spec.tenant;
  j["priority"] = spec.priority;
  j["capacity_class"] = to_string(spec.capacity_class);
  if (spec.max_price > 0) j["max_price"] = spec.max_price;
  if (spec.max_cost > 0) j["max_cost"] = spec.max_cost;
  j["node_selector"] = spec.node_selector;
  j["max_runtime"] = format_duration_ms(spec.max_runtime_ms);
  if (spec.expected_runtime_ms > 0)
    j["expected_runtime"] = format_duration_ms(spec.expected_runtime_ms);
  j["restart"] = {{"policy", to_string(spec.restart.policy)}, {"max", spec.restart.max}};
  j["grace_period"] = format_duration_ms(spec.grace_period_ms);
  if (spec.idle_timeout_ms == kIdleTimeoutOff)
    j["idle_timeout"] = "off";
  else if (spec.idle_timeout_ms > 0)
    j["idle_timeout"] = format_duration_ms(spec.idle_timeout_ms);
  j["env"] = spec.env;
  j["workdir"] = spec.workdir;
  container_spec_to_json(spec.container, j);
  return j;
}

}  // namespace gpucloud
