// Quota windows: a tenant's GPU quota by time of day and day of the week, e.g. 48 A100 on
// weekdays 08:00-20:00 Berlin time and its plain quota otherwise (docs/config.md, "Quota
// windows"). The server applies them at each change; the simulator's replay does the same on
// virtual time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/time_zone.h"

namespace gpucloud {

/// One weekly window: it starts on each of its days at `from_min` (local time of its zone) and
/// lasts until `to_min`, the next day when `to_min` is not after `from_min` (20:00-08:00).
struct QuotaWindow {
  uint8_t days = 0;  // bit 0 = Monday ... bit 6 = Sunday: the days it starts on
  int from_min = 0;  // minutes after local midnight, 0..1439
  int to_min = 0;    // 0..1440 (24:00)
  std::shared_ptr<const TimeZone> zone;
  std::map<std::string, int> quota;  // GPUs per model while it is in force (other models: the
                                     // tenant's plain quota)
  int length_min() const {
    return to_min > from_min ? to_min - from_min : to_min + 1440 - from_min;
  }
};

/// Limits on `quota_windows`.
struct QuotaWindowLimits {
  static constexpr size_t kMaxWindows = 32;
};

/// Reads a tenant's `quota_windows` list. `where` names the tenant, e.g. "tenants[0]
/// (inference).quota_windows"; errors add the window's index and field, e.g. "tenants[0]
/// (inference).quota_windows[1].from: '8am' is not a time like 08:00". Refuses unknown days
/// and zones, from == to, negative quotas, windows of one tenant in different zones, and
/// windows that overlap.
Result<std::vector<QuotaWindow>> quota_windows_from_json(const nlohmann::json& j,
                                                         const std::string& where);

/// The index of the window in force at the instant, or -1 when none is.
int active_quota_window(const std::vector<QuotaWindow>& windows, TimeMs now_ms);

/// The first instant after `now_ms` at which the window in force changes (one starts or ends);
/// nullopt without windows.
std::optional<TimeMs> next_quota_change(const std::vector<QuotaWindow>& windows, TimeMs now_ms);

/// The quota in force: `base` with the models the active window names replaced.
std::map<std::string, int> quota_at(const std::map<std::string, int>& base,
                                    const std::vector<QuotaWindow>& windows, TimeMs now_ms);

/// "mon-fri 08:00-20:00 Europe/Berlin": the window as the config file could say it.
std::string describe_quota_window(const QuotaWindow& window);

}  // namespace gpucloud
