#include "common/units.h"

#include <gtest/gtest.h>

#include <string>

namespace gpucloud {
namespace {

int64_t duration(const std::string& text) {
  auto r = parse_duration_ms(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error().message;
  return r.ok() ? *r : -1;
}

Error duration_error(const std::string& text) {
  auto r = parse_duration_ms(text);
  EXPECT_FALSE(r.ok()) << text << " was accepted as " << (r.ok() ? *r : 0);
  return r.ok() ? Error{} : r.error();
}

int64_t size(const std::string& text) {
  auto r = parse_size_mib(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error().message;
  return r.ok() ? *r : -1;
}

Error size_error(const std::string& text) {
  auto r = parse_size_mib(text);
  EXPECT_FALSE(r.ok()) << text << " was accepted as " << (r.ok() ? *r : 0);
  return r.ok() ? Error{} : r.error();
}

constexpr int64_t kDayMs = 86'400'000;

TEST(ParseDuration, ReadsEachUnit) {
  EXPECT_EQ(duration("500ms"), 500);
  EXPECT_EQ(duration("30s"), 30'000);
  EXPECT_EQ(duration("5m"), 300'000);
  EXPECT_EQ(duration("2h"), 7'200'000);
  EXPECT_EQ(duration("2d"), 2 * kDayMs);
}

TEST(ParseDuration, AddsCompoundParts) {
  EXPECT_EQ(duration("1h30m"), 5'400'000);
  EXPECT_EQ(duration("1d2h3m4s5ms"), kDayMs + 2 * 3'600'000 + 3 * 60'000 + 4'000 + 5);
}

TEST(ParseDuration, BareNumberIsSeconds) {
  EXPECT_EQ(duration("45"), 45'000);
  EXPECT_EQ(duration("0"), 0);
}

TEST(ParseDuration, AcceptsFractionsAndUpperCase) {
  EXPECT_EQ(duration("1.5h"), 5'400'000);
  EXPECT_EQ(duration("30S"), 30'000);
}

TEST(ParseDuration, RejectsNegative) {
  Error e = duration_error("-1s");
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message.find("'-1s'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("negative"), std::string::npos) << e.message;
}

TEST(ParseDuration, RejectsUnknownUnitNamingIt) {
  Error e = duration_error("1x");
  EXPECT_NE(e.message.find("'1x'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("unit 'x'"), std::string::npos) << e.message;
  duration_error("10y");
}

TEST(ParseDuration, RejectsEmptyAndNonNumbers) {
  EXPECT_NE(duration_error("").message.find("empty"), std::string::npos);
  EXPECT_NE(duration_error("abc").message.find("'abc'"), std::string::npos);
  duration_error("1h 30m");
  duration_error("1h30");  // a trailing number without a unit is ambiguous
  duration_error(".");
}

TEST(ParseDuration, RejectsAboveTenYears) {
  EXPECT_EQ(duration("3650d"), 3650 * kDayMs);
  Error e = duration_error("3651d");
  EXPECT_NE(e.message.find("'3651d'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("10 years"), std::string::npos) << e.message;
}

TEST(ParseDuration, RejectsNumbersTooLongForADoubleWithoutThrowing) {
  std::string huge = "1" + std::string(400, '0') + "s";
  Error e = duration_error(huge);
  EXPECT_NE(e.message.find("10 years"), std::string::npos) << e.message;
}

TEST(FormatDuration, PrintsShortForms) {
  EXPECT_EQ(format_duration_ms(250), "250ms");
  EXPECT_EQ(format_duration_ms(45'000), "45s");
  EXPECT_EQ(format_duration_ms(300'000), "5m");
  EXPECT_EQ(format_duration_ms(5'400'000), "1h30m");
  EXPECT_EQ(format_duration_ms(2 * kDayMs), "2d");
}

TEST(FormatDuration, ParsesBackToTheSameValue) {
  for (int64_t ms : {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{1'500}, int64_t{61'000},
                     int64_t{3'661'000}, int64_t{5'415'000}, 90'061'001 + kDayMs, 3650 * kDayMs}) {
    std::string text = format_duration_ms(ms);
    EXPECT_EQ(duration(text), ms) << text;
  }
}

TEST(ParseSize, ReadsBinaryAndDecimalPrefixesAsBinary) {
  EXPECT_EQ(size("16GiB"), 16 * 1024);
  EXPECT_EQ(size("512Mi"), 512);
  EXPECT_EQ(size("1.5G"), 1536);
  EXPECT_EQ(size("80GB"), 80 * 1024);
  EXPECT_EQ(size("2TiB"), 2 * 1024 * 1024);
  EXPECT_EQ(size("1KiB"), 1);  // rounded up to whole MiB
  EXPECT_EQ(size("16gib"), 16 * 1024);
}

TEST(ParseSize, BareNumberIsMiB) {
  EXPECT_EQ(size("100"), 100);
  EXPECT_EQ(size("0"), 0);
}

TEST(ParseSize, RejectsUnknownUnitsNamingThem) {
  Error e = size_error("1ZB");
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message.find("'1ZB'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("unknown unit"), std::string::npos) << e.message;
  size_error("1 GiB");
  size_error("abc");
}

TEST(ParseSize, RejectsBytesInsteadOfReadingThemAsMiB) {
  // "512B" is 512 bytes, not 512 MiB; gpucloud sizes start at KiB.
  size_error("512B");
  size_error("512iB");
}

TEST(ParseSize, RejectsNegativeAndEmpty) {
  Error e = size_error("-5G");
  EXPECT_NE(e.message.find("'-5G'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("negative"), std::string::npos) << e.message;
  EXPECT_NE(size_error("").message.find("empty"), std::string::npos);
}

TEST(ParseSize, RejectsAboveOnePiB) {
  EXPECT_EQ(size("1PiB"), int64_t{1024} * 1024 * 1024);
  EXPECT_NE(size_error("2PiB").message.find("1 PiB"), std::string::npos);
  size_error("1" + std::string(400, '0') + "G");
}

TEST(FormatSize, PicksTheLargestWholeUnit) {
  EXPECT_EQ(format_size_mib(512), "512MiB");
  EXPECT_EQ(format_size_mib(80 * 1024), "80GiB");
  EXPECT_EQ(format_size_mib(1536), "1.5GiB");
  EXPECT_EQ(format_size_mib(2 * 1024 * 1024), "2TiB");
  EXPECT_EQ(format_size_mib(1024 * 1024 * 3 / 2), "1.5TiB");
}

}  // namespace
}  // namespace gpucloud
