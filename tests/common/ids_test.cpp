#include "common/ids.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gpucloud {
namespace {

bool is_lower_hex(const std::string& s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

TEST(IdGenerator, IdsAre32LowercaseHexDigits) {
  IdGenerator ids(1);
  std::string id = ids.next(1'700'000'000'000);
  EXPECT_EQ(id.size(), 32u);
  EXPECT_TRUE(is_lower_hex(id)) << id;
  EXPECT_EQ(id[12], '7') << "UUIDv7 version nibble: " << id;
}

TEST(IdGenerator, StrictlyIncreasingWithinOneMillisecond) {
  IdGenerator ids(2);
  std::string prev = ids.next(1'700'000'000'000);
  for (int i = 0; i < 10'000; ++i) {  // more than the 12-bit counter holds
    std::string id = ids.next(1'700'000'000'000);
    ASSERT_GT(id, prev) << "after " << i << " ids";
    prev = id;
  }
}

TEST(IdGenerator, StrictlyIncreasingWithTimeAndWhenTheClockGoesBack) {
  IdGenerator ids(3);
  std::string prev = ids.next(1'000);
  for (TimeMs t :
       {TimeMs{1'001}, TimeMs{5'000}, TimeMs{4'000}, TimeMs{5'000}, TimeMs{1'700'000'000'000}}) {
    std::string id = ids.next(t);
    EXPECT_GT(id, prev) << "t=" << t;
    prev = id;
  }
}

TEST(IdGenerator, LaterTimesSortLaterAcrossGenerators) {
  IdGenerator a(4), b(5);
  EXPECT_LT(a.next(1'700'000'000'000), b.next(1'700'000'000'001));
}

TEST(IdGenerator, DifferentSeedsGiveDifferentIds) {
  IdGenerator a(6), b(7);
  EXPECT_NE(a.next(1'000), b.next(1'000));
}

TEST(RandomToken, Is64HexDigitsAndUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    std::string t = random_token();
    EXPECT_EQ(t.size(), 64u);
    EXPECT_TRUE(is_lower_hex(t)) << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 20u);
}

TEST(LooksLikeIdPrefix, AcceptsFourToThirtyTwoLowercaseHexDigits) {
  EXPECT_TRUE(looks_like_id_prefix("0a1b"));
  EXPECT_TRUE(looks_like_id_prefix(IdGenerator(8).next(1'000)));
  EXPECT_FALSE(looks_like_id_prefix("0a1"));
  EXPECT_FALSE(looks_like_id_prefix(std::string(33, 'a')));
  EXPECT_FALSE(looks_like_id_prefix("train-job"));
  EXPECT_FALSE(looks_like_id_prefix("ABCD"));
  EXPECT_FALSE(looks_like_id_prefix(""));
}

}  // namespace
}  // namespace gpucloud
