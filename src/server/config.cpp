#include "server/config.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/units.h"
#include "model/job_spec.h"
#include "model/json_fields.h"
#include "model/yaml_json.h"

namespace gpucloud::server {

using json = nlohmann::json;

namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_' || c == '.'))
      return false;
  return true;
}

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Result<std::map<std::string, int>> gpu_counts(const json& j, const std::string& where) {
  std::map<std::string, int> out;
  if (!j.is_object())
    return invalid(
        fmt::format("{}: expected a mapping of GPU model to count, e.g. {{A100: 16}}", where));
  for (const auto& [model, count] : j.items()) {
    if (!count.is_number_integer() || count.get<int64_t>() < 0 || count.get<int64_t>() > 1'000'000)
      return invalid(
          fmt::format("{}.{}: expected a whole number of GPUs 0..1000000", where, model));
    out[model] = count.get<int>();
  }
  return out;
}

// A tenant's uid, gid and allow_root: ids of 1..4294967294, a uid no other tenant has (jobs of
// one uid can signal and read each other), never 0 (that is what allow_root says).
Status tenant_ids(const json& t, const std::string& where, TenantConfig& tc,
                  const std::vector<TenantConfig>& earlier) {
  for (const char* field : {"uid", "gid"}) {
    if (!t.contains(field)) continue;
    const json& v = t[field];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 4294967294LL)
      return invalid(fmt::format("{}.{}: expected a whole number 1..4294967294", where, field));
    if (v.get<int64_t>() == 0)
      return invalid(fmt::format(
          "{}.{}: 0 is root; to let this tenant's jobs run as root, set allow_root: true", where,
          field));
    (std::string(field) == "uid" ? tc.uid : tc.gid) = v.get<int64_t>();
  }
  if (tc.gid >= 0 && tc.uid < 0)
    return invalid(where + ".gid: given without a uid; give the uid too");
  if (tc.uid >= 0 && tc.gid < 0) tc.gid = tc.uid;
  if (t.contains("allow_root")) {
    if (!t["allow_root"].is_boolean())
      return invalid(where + ".allow_root: expected true or false");
    tc.allow_root = t["allow_root"].get<bool>();
  }
  if (tc.allow_root && tc.uid >= 0)
    return invalid(where + ": both uid and allow_root are set; keep one");
  for (const auto& other : earlier) {
    if (tc.uid >= 0 && other.uid == tc.uid)
      return invalid(fmt::format(
          "{}.uid: {} is also tenant {}'s; tenants sharing a uid can read and signal each "
          "other's jobs, give each its own",
          where, tc.uid, other.name));
  }
  return {};
}

// A window of `idle`: a duration ("2h", or seconds) within 1s..30d, or "off" (0) where allowed.
Result<int64_t> idle_duration(const json& v, const std::string& where, bool off_allowed) {
  if (off_allowed && v.is_string() && v.get<std::string>() == "off") return int64_t{0};
  Result<int64_t> ms = invalid("");
  if (v.is_number() && v.get<double>() >= 0 && v.get<double>() <= 30.0 * 86400)
    ms = static_cast<int64_t>(v.get<double>() * 1000);
  else if (v.is_string())
    ms = parse_duration_ms(v.get<std::string>());
  if (!ms || *ms < JobSpecLimits::kMinIdleTimeoutMs || *ms > JobSpecLimits::kMaxIdleTimeoutMs)
    return invalid(fmt::format("{}: expected a duration within 1s..30d like 2h{}, got {}", where,
                               off_allowed ? ", or off" : "", json_excerpt(v)));
  return *ms;
}

// An `idle` mapping (at the top or in a tenant): timeout, threshold, max_timeout.
Result<IdleOverrides> idle_block(const json& j, const std::string& where) {
  if (auto st = json_known_keys(j, where, {"timeout", "threshold", "max_timeout"}); !st.ok())
    return st.error();
  IdleOverrides out;
  if (j.contains("timeout")) {
    auto ms = idle_duration(j["timeout"], where + ".timeout", true);
    if (!ms) return ms.error();
    out.timeout_ms = *ms;
  }
  if (j.contains("threshold")) {
    const json& v = j["threshold"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 100)
      return invalid(
          fmt::format("{}.threshold: expected a GPU utilisation percentage 1..100, got {}", where,
                      json_excerpt(v)));
    out.threshold_pct = v.get<int>();
  }
  if (j.contains("max_timeout")) {
    auto ms = idle_duration(j["max_timeout"], where + ".max_timeout", false);
    if (!ms) return ms.error();
    out.max_timeout_ms = *ms;
  }
  return out;
}

// A tenant's `budget` mapping: monthly_usd, alert_at, hard_cap, stop_running.
Result<BudgetConfig> budget_block(const json& j, const std::string& where) {
  if (auto st = json_known_keys(j, where, {"monthly_usd", "alert_at", "hard_cap", "stop_running"});
      !st.ok())
    return st.error();
  BudgetConfig b;
  const json* usd = j.contains("monthly_usd") ? &j["monthly_usd"] : nullptr;
  if (!usd || !usd->is_number() || !(usd->get<double>() >= 0) || usd->get<double>() > 1e12)
    return invalid(fmt::format(
        "{}.monthly_usd: expected the monthly budget in USD, 0..1e12, e.g. 10000", where));
  b.monthly_usd = usd->get<double>();
  if (j.contains("alert_at")) {
    const json& a = j["alert_at"];
    if (!a.is_number() || !(a.get<double>() > 0) || a.get<double>() > 1)
      return invalid(fmt::format(
          "{}.alert_at: expected the share of the budget that raises the alert, in (0, 1], "
          "e.g. 0.8",
          where));
    b.alert_at = a.get<double>();
  }
  for (const char* field : {"hard_cap", "stop_running"}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_boolean())
      return invalid(fmt::format("{}.{}: expected true or false", where, field));
    (std::string(field) == "hard_cap" ? b.hard_cap : b.stop_running) = j[field].get<bool>();
  }
  if (b.stop_running && !b.hard_cap)
    return invalid(where +
                   ".stop_running: needs hard_cap: true (a budget that stops running "
                   "jobs must also hold new ones)");
  return b;
}

IdlePolicy apply_overrides(IdlePolicy policy, const IdleOverrides& o) {
  if (o.timeout_ms) policy.timeout_ms = *o.timeout_ms;
  if (o.threshold_pct) policy.threshold_pct = *o.threshold_pct;
  if (o.max_timeout_ms) policy.max_timeout_ms = *o.max_timeout_ms;
  return policy;
}

}  // namespace

const TenantConfig* ServerFileConfig::find_tenant(const std::string& name) const {
  for (const auto& t : tenants)
    if (t.name == name) return &t;
  return nullptr;
}

IdlePolicy ServerFileConfig::idle_policy_for(const std::string& tenant) const {
  for (const auto& t : tenants)
    if (t.name == tenant) return apply_overrides(idle, t.idle);
  return idle;
}

Result<int64_t> idle_window_for(const IdlePolicy& policy, int64_t job_idle_timeout_ms) {
  int64_t max = policy.max_timeout_ms;
  if (job_idle_timeout_ms == kIdleTimeoutOff) {
    if (max > 0)
      return invalid(fmt::format(
          "idle_timeout: off is not allowed here: an administrator set a maximum idle window "
          "of {}; give a window of at most that",
          format_duration_ms(max)));
    return int64_t{0};
  }
  if (job_idle_timeout_ms > 0) {
    if (max > 0 && job_idle_timeout_ms > max)
      return invalid(fmt::format(
          "idle_timeout: {} is above the maximum idle window of {} an administrator set; give "
          "at most {}",
          format_duration_ms(job_idle_timeout_ms), format_duration_ms(max),
          format_duration_ms(max)));
    return job_idle_timeout_ms;
  }
  if (max > 0 && (policy.timeout_ms == 0 || policy.timeout_ms > max)) return max;
  return policy.timeout_ms;
}

Result<ServerFileConfig> load_server_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid(fmt::format("{}: cannot read the config file", path));
  std::stringstream text;
  text << in.rdbuf();
  auto doc = yaml_to_json(text.str(), path);
  if (!doc) return doc.error();
  auto fail = [&](const Error& e) { return invalid(fmt::format("{}: {}", path, e.message)); };
  if (doc->is_null()) return ServerFileConfig{};
  if (auto st = json_known_keys(*doc, "config",
                                {"tenants", "tokens", "priority_classes", "idle", "cost"});
      !st.ok())
    return fail(st.error());
  ServerFileConfig config;
  if (doc->contains("idle")) {
    auto idle = idle_block((*doc)["idle"], "idle");
    if (!idle) return fail(idle.error());
    config.idle = apply_overrides(config.idle, *idle);
  }
  if (doc->contains("cost")) {
    auto cost = cost::cost_settings_from_json((*doc)["cost"], "cost");
    if (!cost) return fail(cost.error());
    config.cost = std::move(*cost);
  }
  std::set<std::string> tenant_names;
  if (doc->contains("tenants")) {
    const json& tenants = (*doc)["tenants"];
    if (!tenants.is_array()) return fail(invalid("tenants: expected a list"));
    for (size_t i = 0; i < tenants.size(); ++i) {
      const json& t = tenants[i];
      std::string where = fmt::format("tenants[{}]", i);
      if (auto st =
              json_known_keys(t, where,
                              {"name", "weight", "cohort", "quota", "borrowing_limit",
                               "quota_windows", "uid", "gid", "allow_root", "idle", "budget"});
          !st.ok())
        return fail(st.error());
      TenantConfig tc;
      if (!t.contains("name") || !t["name"].is_string() ||
          !valid_name(t["name"].get<std::string>()))
        return fail(
            invalid(where + ".name: expected a name of 1..63 letters, digits, '-', '_' or '.'"));
      tc.name = t["name"].get<std::string>();
      if (!tenant_names.insert(tc.name).second)
        return fail(invalid(fmt::format("{}.name: '{}' is listed twice", where, tc.name)));
      if (t.contains("weight")) {
        if (!t["weight"].is_number() || !(t["weight"].get<double>() > 0) ||
            t["weight"].get<double>() > 1000)
          return fail(invalid(where + ".weight: expected a number in (0, 1000]"));
        tc.weight = t["weight"].get<double>();
      }
      if (t.contains("cohort")) {
        if (!t["cohort"].is_string() || !valid_name(t["cohort"].get<std::string>()))
          return fail(invalid(where + ".cohort: expected a name"));
        tc.cohort = t["cohort"].get<std::string>();
      }
      for (const char* field : {"quota", "borrowing_limit"}) {
        if (!t.contains(field)) continue;
        auto counts = gpu_counts(t[field], where + "." + field);
        if (!counts) return fail(counts.error());
        (std::string(field) == "quota" ? tc.quota : tc.borrowing_limit) = std::move(*counts);
      }
      if (t.contains("quota_windows")) {
        auto windows = quota_windows_from_json(
            t["quota_windows"], fmt::format("{} ({}).quota_windows", where, tc.name));
        if (!windows) return fail(windows.error());
        tc.quota_windows = std::move(*windows);
      }
      auto ids = tenant_ids(t, where, tc, config.tenants);
      if (!ids.ok()) return fail(ids.error());
      if (t.contains("idle")) {
        auto idle = idle_block(t["idle"], where + ".idle");
        if (!idle) return fail(idle.error());
        tc.idle = *idle;
      }
      if (t.contains("budget")) {
        auto budget = budget_block(t["budget"], where + ".budget");
        if (!budget) return fail(budget.error());
        tc.budget = *budget;
      }
      config.tenants.push_back(std::move(tc));
    }
  }
  if (doc->contains("priority_classes")) {
    const json& classes = (*doc)["priority_classes"];
    if (!classes.is_object())
      return fail(invalid(
          "priority_classes: expected a mapping of class name to value, e.g. {critical: 10000}"));
    for (const auto& [name, value] : classes.items()) {
      if (!valid_priority_name(name))
        return fail(invalid(fmt::format(
            "priority_classes.{}: a class name has 1..32 lowercase letters, digits or '-'", name)));
      if (!value.is_number_integer() || value.get<int64_t>() < -1'000'000 ||
          value.get<int64_t>() > 1'000'000)
        return fail(invalid(fmt::format(
            "priority_classes.{}: expected a whole number in -1000000..1000000", name)));
      config.priority_classes[name] = value.get<int>();
    }
  }
  if (doc->contains("tokens")) {
    const json& tokens = (*doc)["tokens"];
    if (!tokens.is_array()) return fail(invalid("tokens: expected a list"));
    std::set<std::string> names, hashes;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const json& t = tokens[i];
      std::string where = fmt::format("tokens[{}]", i);
      if (auto st = json_known_keys(t, where, {"name", "sha256", "role", "tenants"}); !st.ok())
        return fail(st.error());
      store::TokenRecord tr;
      if (!t.contains("name") || !t["name"].is_string() ||
          !valid_name(t["name"].get<std::string>()))
        return fail(
            invalid(where + ".name: expected a name of 1..63 letters, digits, '-', '_' or '.'"));
      tr.name = t["name"].get<std::string>();
      if (!names.insert(tr.name).second)
        return fail(invalid(fmt::format("{}.name: '{}' is listed twice", where, tr.name)));
      if (!t.contains("sha256") || !t["sha256"].is_string() ||
          !is_sha256_hex(t["sha256"].get<std::string>()))
        return fail(invalid(where +
                            ".sha256: expected the token's SHA-256 as 64 lower-case hex digits "
                            "(printf %s \"$TOKEN\" | sha256sum)"));
      tr.sha256 = t["sha256"].get<std::string>();
      if (!hashes.insert(tr.sha256).second)
        return fail(invalid(where + ".sha256: the same token is listed twice"));
      std::string role =
          t.contains("role") && t["role"].is_string() ? t["role"].get<std::string>() : "";
      if (role != "admin" && role != "member")
        return fail(invalid(fmt::format("{}.role: '{}' is not admin or member", where, role)));
      tr.role = role;
      if (t.contains("tenants")) {
        if (!t["tenants"].is_array())
          return fail(invalid(where + ".tenants: expected a list of tenant names"));
        for (const auto& name : t["tenants"]) {
          if (!name.is_string())
            return fail(invalid(where + ".tenants: expected a list of tenant names"));
          std::string n = name.get<std::string>();
          if (n != "default" && !tenant_names.count(n))
            return fail(
                invalid(fmt::format("{}.tenants: '{}' is not a tenant of this file", where, n)));
          tr.tenants.push_back(n);
        }
      }
      if (role == "member" && tr.tenants.empty())
        return fail(invalid(where + ".tenants: a member needs at least one tenant"));
      config.tokens.push_back(std::move(tr));
    }
  }
  return config;
}

Result<int> ServerFileConfig::priority_value(const std::string& name) const {
  if (auto it = priority_classes.find(name); it != priority_classes.end()) return it->second;
  std::string known;
  for (const auto& [n, v] : priority_classes)
    known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", n, v);
  return invalid(
      fmt::format("priority: '{}' is not a priority class of this server; known: {}", name, known));
}

}  // namespace gpucloud::server
