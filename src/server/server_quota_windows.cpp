// Quota windows in the server: the quota in force goes to the scheduler at start, on reload
// and at each window change, which a timer wakes the server for (docs/config.md, "Quota
// windows").
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/server.h"

namespace gpucloud::server {

using json = nlohmann::json;

namespace {

// The longest a timer sleeps: a wall clock set forward is noticed within a minute.
constexpr int64_t kMaxQuotaTimerMs = 60'000;

std::string quota_text(const std::map<std::string, int>& quota) {
  std::string out;
  for (const auto& [model, n] : quota)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", model, n);
  return out.empty() ? "none" : out;
}

}  // namespace

void Server::arm_quota_window_timer() {
  TimeMs now = clock_.now_ms();
  quota_change_at_.reset();
  for (const auto& t : file_config_.tenants)
    if (auto next = next_quota_change(t.quota_windows, now))
      quota_change_at_ = std::min(quota_change_at_.value_or(*next), *next);
  if (quota_timer_) loop_.cancel(quota_timer_);
  quota_timer_ = 0;
  if (!quota_change_at_) return;
  int64_t delay = std::clamp<int64_t>(*quota_change_at_ - now, 0, kMaxQuotaTimerMs);
  quota_timer_ = loop_.run_after(delay, [this] {
    quota_timer_ = 0;
    if (quota_change_at_ && *quota_change_at_ <= clock_.now_ms())
      apply_quota_window_change();
    else
      arm_quota_window_timer();
  });
}

void Server::apply_quota_window_change() {
  TimeMs now = clock_.now_ms();
  store::WriteBatch batch;
  for (const auto& t : file_config_.tenants) {
    if (t.quota_windows.empty()) continue;
    auto quota = quota_at(t.quota, t.quota_windows, now);
    auto& was = quota_in_force_[t.name];
    if (quota == was) continue;
    int window = active_quota_window(t.quota_windows, now);
    std::string what =
        fmt::format("quota {} (was {}): {}", quota_text(quota), quota_text(was),
                    window < 0 ? "outside its quota windows"
                               : fmt::format("window {} ({})", window,
                                             describe_quota_window(t.quota_windows[window])));
    spdlog::info("tenant {}: {}", t.name, what);
    batch.audit.push_back({now, "server", "tenant.quota_window", t.name, what});
  }
  if (!batch.audit.empty()) (void)commit(batch);
  apply_tenants();  // the scheduler reclaims use above the new quotas at its next pass
  schedule_soon();
}

json Server::quota_window_json(const TenantConfig& t) const {
  TimeMs now = clock_.now_ms();
  json out;
  out["quota"] = quota_at(t.quota, t.quota_windows, now);
  if (t.quota_windows.empty()) return out;
  out["base_quota"] = t.quota;
  json windows = json::array();
  for (const auto& w : t.quota_windows)
    windows.push_back({{"window", describe_quota_window(w)}, {"quota", w.quota}});
  out["quota_windows"] = windows;
  int active = active_quota_window(t.quota_windows, now);
  out["quota_window"] =
      active < 0
          ? json(nullptr)
          : json{{"index", active}, {"window", describe_quota_window(t.quota_windows[active])}};
  if (auto next = next_quota_change(t.quota_windows, now)) {
    int then = active_quota_window(t.quota_windows, *next);
    out["next_quota_change"] = {
        {"at", format_time_iso(*next)},
        {"at_ms", *next},
        {"quota", quota_at(t.quota, t.quota_windows, *next)},
        {"window", then < 0 ? json(nullptr) : json(describe_quota_window(t.quota_windows[then]))}};
  }
  return out;
}

}  // namespace gpucloud::server
