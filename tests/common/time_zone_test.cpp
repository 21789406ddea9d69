#include "common/time_zone.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>

namespace gpucloud {
namespace {

using namespace std::chrono;

int64_t utc_s(year_month_day day, int hour, int minute = 0) {
  return sys_days{day}.time_since_epoch().count() * 86400 + hour * 3600 + minute * 60;
}

TEST(TimeZone, BerlinOffsetsFollowSummerTime) {
  auto berlin = TimeZone::load("Europe/Berlin");
  ASSERT_TRUE(berlin) << berlin.error().message;
  EXPECT_EQ((*berlin)->offset_s(utc_s(2026y / 1 / 15, 12)), 3600);
  EXPECT_EQ((*berlin)->offset_s(utc_s(2026y / 7 / 15, 12)), 7200);
  // 2026-03-29: clocks go forward at 01:00 UTC; 2026-10-25: back at 01:00 UTC.
  EXPECT_EQ((*berlin)->offset_s(utc_s(2026y / 3 / 29, 0, 59)), 3600);
  EXPECT_EQ((*berlin)->offset_s(utc_s(2026y / 3 / 29, 1)), 7200);
  EXPECT_EQ((*berlin)->offset_s(utc_s(2026y / 10 / 25, 0, 59)), 7200);
  EXPECT_EQ((*berlin)->offset_s(utc_s(2026y / 10 / 25, 1)), 3600);
}

TEST(TimeZone, YearsAfterTheLastTransitionFollowTheFootersRule) {
  auto berlin = TimeZone::load("Europe/Berlin");
  ASSERT_TRUE(berlin);
  EXPECT_EQ((*berlin)->offset_s(utc_s(2090y / 1 / 15, 12)), 3600);
  EXPECT_EQ((*berlin)->offset_s(utc_s(2090y / 7 / 15, 12)), 7200);
  // The last Sunday of March 2090 is the 26th.
  EXPECT_EQ((*berlin)->offset_s(utc_s(2090y / 3 / 26, 0, 59)), 3600);
  EXPECT_EQ((*berlin)->offset_s(utc_s(2090y / 3 / 26, 1)), 7200);
  auto sydney = TimeZone::load("Australia/Sydney");  // summer time across New Year
  ASSERT_TRUE(sydney);
  EXPECT_EQ((*sydney)->offset_s(utc_s(2090y / 1 / 15, 12)), 11 * 3600);
  EXPECT_EQ((*sydney)->offset_s(utc_s(2090y / 7 / 15, 12)), 10 * 3600);
}

TEST(TimeZone, LocalTimesAcrossClockChanges) {
  auto berlin = TimeZone::load("Europe/Berlin");
  ASSERT_TRUE(berlin);
  const TimeZone& z = **berlin;
  // Summer: 08:00 local is 06:00 UTC.
  EXPECT_EQ(z.to_utc_s(utc_s(2026y / 7 / 1, 8)), utc_s(2026y / 7 / 1, 6));
  // 02:30 does not happen on 2026-03-29: read in CET, it is 01:30 UTC (03:30 CEST).
  EXPECT_EQ(z.to_utc_s(utc_s(2026y / 3 / 29, 2, 30)), utc_s(2026y / 3 / 29, 1, 30));
  // 02:30 happens twice on 2026-10-25: the first, in CEST, is 00:30 UTC.
  EXPECT_EQ(z.to_utc_s(utc_s(2026y / 10 / 25, 2, 30)), utc_s(2026y / 10 / 25, 0, 30));
}

TEST(TimeZone, UnknownNamesAreRefusedWithTheFix) {
  for (const char* name : {"Europe/Berln", "../../etc/passwd", "/etc/passwd", "", "Europe"}) {
    auto z = TimeZone::load(name);
    ASSERT_FALSE(z) << name;
    EXPECT_NE(z.error().message.find("not in the time zone database"), std::string::npos)
        << z.error().message;
    EXPECT_NE(z.error().message.find("Europe/Berlin"), std::string::npos);
  }
}

TEST(TimeZone, DamagedFilesAreRefused) {
  EXPECT_FALSE(TimeZone::parse("X", "TZif2"));
  EXPECT_FALSE(TimeZone::parse("X", std::string("TZif2") + std::string(39, '\0')));  // no types
  std::string huge_counts = std::string("TZif2") + std::string(15, '\0') + std::string(24, '\xff');
  auto z = TimeZone::parse("X", huge_counts);
  ASSERT_FALSE(z);
  EXPECT_NE(z.error().message.find("not valid TZif"), std::string::npos);
}

TEST(TimeZone, AFootersOffsetBeyondTwentySixHoursIsIgnored) {
  std::ifstream in("/usr/share/zoneinfo/UTC", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 6u);
  ASSERT_EQ(bytes.substr(bytes.size() - 6), "\nUTC0\n");
  std::string body = bytes.substr(0, bytes.size() - 6);
  auto far = TimeZone::parse("X", body + "\n<X>-25\n");
  ASSERT_TRUE(far) << far.error().message;
  EXPECT_EQ((*far)->offset_s(2'000'000'000), 25 * 3600);
  // A footer rule beyond that is ignored: the zone keeps its last transition's offset.
  for (const char* footer : {"\n<X>-30\n", "\n<X>0<Y>-100,M3.5.0,M10.5.0\n"}) {
    auto zone = TimeZone::parse("X", body + footer);
    ASSERT_TRUE(zone) << footer;
    EXPECT_EQ((*zone)->offset_s(2'000'000'000), 0) << footer;
  }
}

}  // namespace
}  // namespace gpucloud
