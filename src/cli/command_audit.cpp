// `gpucloud audit` and `gpucloud audit verify` (docs/audit.md): read the audit log, newest
// first, and check its hash chain.
#include <fmt/format.h>

#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "common/clock.h"
#include "common/units.h"
#include "net/http_types.h"

namespace gpucloud::cli {

using json = nlohmann::json;

namespace {

// "2026-12-01T10:00:00Z" or "2026-12-01" (UTC) as ms since the epoch.
std::optional<TimeMs> utc_time(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) {
    tm = {};
    end = ::strptime(text.c_str(), "%Y-%m-%d", &tm);
  }
  if (end == nullptr || (*end != '\0' && std::string(end) != "Z")) return std::nullopt;
  return static_cast<TimeMs>(::timegm(&tm)) * 1000;
}

// "1h" (that long ago) or a UTC time, as ms since the epoch.
Result<TimeMs> since_ms(const std::string& text) {
  if (auto d = parse_duration_ms(text); d.ok()) return SystemClock().now_ms() - *d;
  if (auto t = utc_time(text)) return *t;
  return invalid(fmt::format(
      "--since: '{}' is neither a duration like 2h nor a time like 2026-12-01T10:00:00Z", text));
}

}  // namespace

int cmd_audit(const AuditOptions& o) {
  std::string query = fmt::format("limit={}", o.limit);
  if (!o.since.empty()) {
    auto t = since_ms(o.since);
    if (!t) return std::cerr << "error: " << t.error().message << "\n", kExitUsage;
    query += fmt::format("&since_ms={}", *t);
  }
  if (!o.tenant.empty()) query += "&tenant=" + net::url_encode(o.tenant);
  if (!o.action.empty()) query += "&action=" + net::url_encode(o.action);
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  auto r = api->call("GET", "/v1/audit?" + query);
  if (!r) return fail(r.error().message);
  const json& entries = (*r)["entries"];
  if (o.json) {
    std::cout << entries.dump(2) << "\n";
    return 0;
  }
  Table t({"SEQ", "TIME", "ACTOR", "SOURCE", "ACTION", "OBJECT", "TENANT", "OUTCOME", "DETAIL"});
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {  // oldest first on screen
    const json& e = *it;
    t.add({std::to_string(e.value("seq", 0)), e.value("at", ""),
           e.value("actor", "") +
               (e.value("role", "").empty() ? "" : " (" + e.value("role", "") + ")"),
           e.value("source", "").empty() ? "-" : e.value("source", ""), e.value("action", ""),
           e.value("object", ""), e.value("tenant", "").empty() ? "-" : e.value("tenant", ""),
           e.value("outcome", ""), e.value("detail", "")});
  }
  t.print(std::cout);
  return 0;
}

int cmd_audit_verify(bool as_json) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  auto r = api->call("GET", "/v1/audit/verify");
  if (!r) return fail(r.error().message);
  if (as_json) std::cout << r->dump(2) << "\n";
  const json& head = (*r)["head"];
  if (r->value("ok", false)) {
    if (!as_json)
      std::cout << fmt::format(
          "ok: {} entries chained{}, head {} {}\n", r->value("entries", 0),
          r->value("unchained", 0) > 0
              ? fmt::format(" ({} older ones written before chaining)", r->value("unchained", 0))
              : "",
          head.value("seq", 0), head.value("hash", ""));
    return 0;
  }
  std::cerr << fmt::format("error: the audit log was tampered with: {}\n",
                           r->value("problem", "(no detail)"));
  return kExitError;
}

}  // namespace gpucloud::cli
