#include "model/quota_windows.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <nlohmann/json.hpp>

#include "model/json_fields.h"

namespace gpucloud {
namespace {

using json = nlohmann::json;

constexpr std::array<const char*, 7> kDays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
constexpr int kWeekMin = 7 * 1440;

int day_index(const std::string& name) {
  for (size_t i = 0; i < kDays.size(); ++i)
    if (name == kDays[i]) return static_cast<int>(i);
  return -1;
}

// "mon-fri", "sat,sun", "fri-mon", "daily": the days as a mask, or -1.
int parse_days(const std::string& text) {
  if (text == "daily") return 0x7f;
  int mask = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = item.find('-');
    int first = day_index(item.substr(0, dash));
    int last = dash == std::string::npos ? first : day_index(item.substr(dash + 1));
    if (first < 0 || last < 0) return -1;
    for (int d = first;; d = (d + 1) % 7) {  // a range may wrap: fri-mon
      mask |= 1 << d;
      if (d == last) break;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return mask;
}

// "08:00" (or "24:00" where allowed) in minutes after midnight, or -1.
int parse_time(const json& v, bool allow_24) {
  if (!v.is_string()) return -1;
  const std::string s = v.get<std::string>();
  if (s.size() != 5 || s[2] != ':') return -1;
  for (int i : {0, 1, 3, 4})
    if (s[i] < '0' || s[i] > '9') return -1;
  int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');
  if (m > 59 || h > 24 || (h == 24 && (m != 0 || !allow_24))) return -1;
  return h * 60 + m;
}

std::string hhmm(int minutes) {
  return fmt::format("{:02}:{:02}", minutes / 60, minutes % 60);
}

// The local day number (days since 1970-01-01) of the instant, and its weekday (0 = Monday).
int64_t local_day(const TimeZone& zone, int64_t utc_s) {
  int64_t local = utc_s + zone.offset_s(utc_s);
  return local >= 0 ? local / 86400 : (local - 86399) / 86400;
}
int weekday_of_day(int64_t day) {
  return static_cast<int>(((day + 3) % 7 + 7) % 7);
}  // 1970-01-01: thu

// Calls f(start_ms, end_ms) for each occurrence of the window that starts on a local day
// within [first_day, last_day].
template <typename F>
void occurrences(const QuotaWindow& w, int64_t first_day, int64_t last_day, F&& f) {
  for (int64_t day = first_day; day <= last_day; ++day) {
    if (!(w.days >> weekday_of_day(day) & 1)) continue;
    int64_t start = w.zone->to_utc_s(day * 86400 + int64_t{w.from_min} * 60);
    int64_t end = w.zone->to_utc_s(day * 86400 + int64_t{w.from_min + w.length_min()} * 60);
    f(start * 1000, end * 1000);
  }
}

}  // namespace

Result<std::vector<QuotaWindow>> quota_windows_from_json(const json& j, const std::string& where) {
  if (!j.is_array())
    return invalid(fmt::format(
        "{}: expected a list of windows like {{days: mon-fri, from: \"08:00\", to: \"20:00\", "
        "zone: Europe/Berlin, quota: {{A100: 48}}}}",
        where));
  if (j.size() > QuotaWindowLimits::kMaxWindows)
    return invalid(fmt::format("{}: {} windows, at most {} are allowed", where, j.size(),
                               QuotaWindowLimits::kMaxWindows));
  std::vector<QuotaWindow> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const json& w = j[i];
    std::string at = fmt::format("{}[{}]", where, i);
    if (auto st = json_known_keys(w, at, {"days", "from", "to", "zone", "quota"}); !st.ok())
      return st.error();
    for (const char* field : {"days", "from", "to", "zone", "quota"})
      if (!w.contains(field))
        return invalid(
            fmt::format("{}: '{}' is missing; a window needs days, from, to, zone and "
                        "quota",
                        at, field));
    QuotaWindow qw;
    const json& days = w["days"];
    int mask = days.is_string() && days.get<std::string>().size() <= 64
                   ? parse_days(days.get<std::string>())
                   : -1;
    if (mask <= 0)
      return invalid(fmt::format(
          "{}.days: {} is not a list of days; use mon..sun, ranges and commas like mon-fri or "
          "sat,sun, or daily",
          at, json_excerpt(days)));
    qw.days = static_cast<uint8_t>(mask);
    qw.from_min = parse_time(w["from"], false);
    if (qw.from_min < 0)
      return invalid(fmt::format("{}.from: {} is not a time like \"08:00\" (00:00..23:59)", at,
                                 json_excerpt(w["from"])));
    qw.to_min = parse_time(w["to"], true);
    if (qw.to_min < 0)
      return invalid(fmt::format("{}.to: {} is not a time like \"20:00\" (00:00..24:00)", at,
                                 json_excerpt(w["to"])));
    if (qw.to_min % 1440 == qw.from_min && qw.to_min != 1440)
      return invalid(
          fmt::format("{}: from and to are both {}; a window needs a length (for all day, use from "
                      "\"00:00\" to \"24:00\")",
                      at, hhmm(qw.from_min)));
    if (!w["zone"].is_string())
      return invalid(
          fmt::format("{}.zone: expected an IANA time zone name such as Europe/Berlin", at));
    auto zone = TimeZone::load(w["zone"].get<std::string>());
    if (!zone) return invalid(fmt::format("{}.zone: {}", at, zone.error().message));
    qw.zone = *zone;
    if (!out.empty() && out[0].zone->name() != qw.zone->name())
      return invalid(fmt::format(
          "{}.zone: {} differs from window 0's {}; give all windows of a tenant one zone", at,
          qw.zone->name(), out[0].zone->name()));
    const json& quota = w["quota"];
    if (!quota.is_object() || quota.empty() || quota.size() > 64)
      return invalid(
          fmt::format("{}.quota: expected a mapping of GPU model to count, e.g. {{A100: 48}}", at));
    for (const auto& [model, count] : quota.items()) {
      if (!count.is_number_integer() || count.get<int64_t>() < 0 ||
          count.get<int64_t>() > 1'000'000)
        return invalid(fmt::format("{}.quota.{}: {} is not a whole number of GPUs 0..1000000", at,
                                   model, json_excerpt(count)));
      qw.quota[model] = count.get<int>();
    }
    out.push_back(std::move(qw));
  }
  // Overlaps, in local minutes of the week (all windows share one zone).
  std::vector<int8_t> owner(kWeekMin, -1);
  for (size_t i = 0; i < out.size(); ++i)
    for (int d = 0; d < 7; ++d) {
      if (!(out[i].days >> d & 1)) continue;
      int start = d * 1440 + out[i].from_min;
      for (int m = start; m < start + out[i].length_min(); ++m) {
        int8_t& o = owner[m % kWeekMin];
        if (o >= 0)
          return invalid(fmt::format(
              "{}[{}]: overlaps window {} on {} at {}; windows of a tenant must not overlap", where,
              i, o, kDays[(m % kWeekMin) / 1440], hhmm(m % 1440)));
        o = static_cast<int8_t>(i);
      }
    }
  return out;
}

int active_quota_window(const std::vector<QuotaWindow>& windows, TimeMs now_ms) {
  for (size_t i = 0; i < windows.size(); ++i) {
    int64_t today = local_day(*windows[i].zone, now_ms / 1000);
    bool active = false;
    occurrences(windows[i], today - 2, today + 1,
                [&](TimeMs start, TimeMs end) { active |= start <= now_ms && now_ms < end; });
    if (active) return static_cast<int>(i);
  }
  return -1;
}

std::optional<TimeMs> next_quota_change(const std::vector<QuotaWindow>& windows, TimeMs now_ms) {
  std::optional<TimeMs> next;
  for (const auto& w : windows) {
    int64_t today = local_day(*w.zone, now_ms / 1000);
    occurrences(w, today - 2, today + 8, [&](TimeMs start, TimeMs end) {
      for (TimeMs t : {start, end})
        if (t > now_ms && (!next || t < *next)) next = t;
    });
  }
  return next;
}

std::map<std::string, int> quota_at(const std::map<std::string, int>& base,
                                    const std::vector<QuotaWindow>& windows, TimeMs now_ms) {
  std::map<std::string, int> quota = base;
  if (int i = active_quota_window(windows, now_ms); i >= 0)
    for (const auto& [model, count] : windows[i].quota) quota[model] = count;
  return quota;
}

std::string describe_quota_window(const QuotaWindow& w) {
  std::string days;
  if (w.days == 0x7f) {
    days = "daily";
  } else {
    for (int d = 0; d < 7;) {
      if (!(w.days >> d & 1)) {
        ++d;
        continue;
      }
      int last = d;
      while (last + 1 < 7 && (w.days >> (last + 1) & 1)) ++last;
      if (!days.empty()) days += ",";
      days += last == d ? kDays[d] : fmt::format("{}-{}", kDays[d], kDays[last]);
      d = last + 1;
    }
  }
  return fmt::format("{} {}-{} {}", days, hhmm(w.from_min), hhmm(w.to_min),
                     w.zone ? w.zone->name() : "");
}

}  // namespace gpucloud
