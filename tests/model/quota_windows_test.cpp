#include "model/quota_windows.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "model/yaml_json.h"

namespace gpucloud {
namespace {

using namespace std::chrono;
using json = nlohmann::json;

const std::string kWhere = "tenants[0] (inference).quota_windows";

TimeMs utc_ms(year_month_day day, int hour, int minute = 0) {
  return (sys_days{day}.time_since_epoch().count() * 86400 + hour * 3600 + minute * 60) * 1000;
}

std::vector<QuotaWindow> windows(const std::string& yaml) {
  auto doc = yaml_to_json(yaml, "test");
  EXPECT_TRUE(doc) << doc.error().message;
  auto w = quota_windows_from_json(*doc, kWhere);
  EXPECT_TRUE(w) << w.error().message;
  return w ? *w : std::vector<QuotaWindow>{};
}

std::string error_of(const std::string& yaml) {
  auto doc = yaml_to_json(yaml, "test");
  EXPECT_TRUE(doc) << doc.error().message;
  auto w = quota_windows_from_json(*doc, kWhere);
  EXPECT_FALSE(w) << yaml;
  return w ? "" : w.error().message;
}

TEST(QuotaWindows, BadWindowsAreRefusedNamingTenantWindowAndField) {
  const std::string ok =
      "{days: mon-fri, from: \"08:00\", to: \"20:00\", zone: UTC, quota: {A100: 8}}";
  struct Case {
    std::string second_window, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"{days: mon-fry, from: \"08:00\", to: \"09:00\", zone: UTC, quota: {A100: 1}}",
            kWhere + "[1].days: \"mon-fry\" is not a list of days"},
           {"{days: sat, from: 8am, to: \"09:00\", zone: UTC, quota: {A100: 1}}",
            kWhere + "[1].from: \"8am\" is not a time like \"08:00\""},
           {"{days: sat, from: \"07:00\", to: \"25:00\", zone: UTC, quota: {A100: 1}}",
            kWhere + "[1].to: \"25:00\" is not a time"},
           {"{days: sat, from: \"07:00\", to: \"07:00\", zone: UTC, quota: {A100: 1}}",
            kWhere + "[1]: from and to are both 07:00"},
           {"{days: sat, from: \"07:00\", to: \"09:00\", zone: Europe/Berln, quota: {A100: 1}}",
            kWhere + "[1].zone: time zone 'Europe/Berln' is not in the time zone database"},
           {"{days: sat, from: \"07:00\", to: \"09:00\", zone: UTC, quota: {A100: -1}}",
            kWhere + "[1].quota.A100: -1 is not a whole number of GPUs"},
           {"{days: sat, from: \"07:00\", to: \"09:00\", zone: UTC}",
            kWhere + "[1]: 'quota' is missing"},
           {"{days: sat, from: \"07:00\", to: \"09:00\", zone: Europe/Berlin, quota: {A100: 1}}",
            kWhere + "[1].zone: Europe/Berlin differs from window 0's UTC"},
           {"{days: wed, from: \"19:00\", to: \"21:00\", zone: UTC, quota: {A100: 1}}",
            kWhere + "[1]: overlaps window 0 on wed at 19:00"},
       }) {
    std::string message = error_of("[" + ok + ", " + c.second_window + "]");
    EXPECT_NE(message.find(c.expect), std::string::npos) << message << "\nexpected: " << c.expect;
  }
}

TEST(QuotaWindows, WindowsCrossingMidnightOverlapTheNextDay) {
  std::string message = error_of(
      "[{days: fri, from: \"20:00\", to: \"08:00\", zone: UTC, quota: {A100: 1}},"
      " {days: sat, from: \"07:00\", to: \"09:00\", zone: UTC, quota: {A100: 2}}]");
  EXPECT_NE(message.find(kWhere + "[1]: overlaps window 0 on sat at 07:00"), std::string::npos)
      << message;
  // Back to back is no overlap.
  EXPECT_EQ(windows("[{days: fri, from: \"20:00\", to: \"08:00\", zone: UTC, quota: {A100: 1}},"
                    " {days: sat, from: \"08:00\", to: \"09:00\", zone: UTC, quota: {A100: 2}}]")
                .size(),
            2u);
}

TEST(QuotaWindows, NextChangeAcrossMidnightAndTheWeekend) {
  // Nights on weekdays: starts mon..fri at 20:00 and ends at 08:00 the next morning.
  auto w =
      windows("[{days: mon-fri, from: \"20:00\", to: \"08:00\", zone: UTC, quota: {A100: 48}}]");
  ASSERT_EQ(w.size(), 1u);
  // Friday 2026-03-27 21:00: in the window, which ends Saturday 08:00.
  EXPECT_EQ(active_quota_window(w, utc_ms(2026y / 3 / 27, 21)), 0);
  EXPECT_EQ(next_quota_change(w, utc_ms(2026y / 3 / 27, 21)), utc_ms(2026y / 3 / 28, 8));
  // Saturday 02:00: still Friday's night.
  EXPECT_EQ(active_quota_window(w, utc_ms(2026y / 3 / 28, 2)), 0);
  // Saturday noon: no window until Monday 20:00.
  EXPECT_EQ(active_quota_window(w, utc_ms(2026y / 3 / 28, 12)), -1);
  EXPECT_EQ(next_quota_change(w, utc_ms(2026y / 3 / 28, 12)), utc_ms(2026y / 3 / 30, 20));
  // Sunday 23:00: Sunday starts no window.
  EXPECT_EQ(active_quota_window(w, utc_ms(2026y / 3 / 29, 23)), -1);
  // The quota in force.
  std::map<std::string, int> base{{"A100", 8}, {"H100", 2}};
  EXPECT_EQ(quota_at(base, w, utc_ms(2026y / 3 / 27, 21)),
            (std::map<std::string, int>{{"A100", 48}, {"H100", 2}}));
  EXPECT_EQ(quota_at(base, w, utc_ms(2026y / 3 / 28, 12)), base);
}

TEST(QuotaWindows, BerlinWindowsFollowTheClocksThroughSummerTime) {
  auto w = windows(
      "[{days: mon-fri, from: \"08:00\", to: \"20:00\", zone: Europe/Berlin, quota: {A100: 48}}]");
  ASSERT_EQ(w.size(), 1u);
  // Friday 2026-03-27 (CET, UTC+1): 08:00-20:00 is 07:00-19:00 UTC.
  EXPECT_EQ(active_quota_window(w, utc_ms(2026y / 3 / 27, 6, 59)), -1);
  EXPECT_EQ(active_quota_window(w, utc_ms(2026y / 3 / 27, 7)), 0);
  EXPECT_EQ(next_quota_change(w, utc_ms(2026y / 3 / 27, 12)), utc_ms(2026y / 3 / 27, 19));
  // Clocks go forward on Sunday 2026-03-29: Monday's 08:00 CEST is 06:00 UTC.
  EXPECT_EQ(next_quota_change(w, utc_ms(2026y / 3 / 27, 19)), utc_ms(2026y / 3 / 30, 6));
  EXPECT_EQ(active_quota_window(w, utc_ms(2026y / 3 / 30, 6, 30)), 0);
  // And back on Sunday 2026-10-25: Monday's 08:00 CET is 07:00 UTC again.
  EXPECT_EQ(next_quota_change(w, utc_ms(2026y / 10 / 23, 20)), utc_ms(2026y / 10 / 26, 7));
  EXPECT_EQ(describe_quota_window(w[0]), "mon-fri 08:00-20:00 Europe/Berlin");
}

TEST(QuotaWindows, AWindowOnTheSkippedHourStartsWhenTheClocksJump) {
  auto w = windows(
      "[{days: daily, from: \"02:30\", to: \"04:00\", zone: Europe/Berlin, quota: {A100: 1}}]");
  ASSERT_EQ(w.size(), 1u);
  // 2026-03-29: 02:30 CET does not happen; it is read as 01:30 UTC (03:30 CEST). 04:00 CEST is
  // 02:00 UTC.
  EXPECT_EQ(next_quota_change(w, utc_ms(2026y / 3 / 29, 0)), utc_ms(2026y / 3 / 29, 1, 30));
  EXPECT_EQ(next_quota_change(w, utc_ms(2026y / 3 / 29, 1, 30)), utc_ms(2026y / 3 / 29, 2));
}

}  // namespace
}  // namespace gpucloud
