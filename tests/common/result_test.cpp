#include "common/result.h"

#include <gtest/gtest.h>

#include <string>

namespace gpucloud {
namespace {

TEST(HttpStatus, EachCodeMapsToItsStatusAndName) {
  struct Case {
    ErrorCode code;
    int status;
    const char* name;
  };
  const Case cases[] = {
      {ErrorCode::kInvalidArgument, 400, "invalid_argument"},
      {ErrorCode::kUnauthenticated, 401, "unauthenticated"},
      {ErrorCode::kPermissionDenied, 403, "permission_denied"},
      {ErrorCode::kNotFound, 404, "not_found"},
      {ErrorCode::kConflict, 409, "conflict"},
      {ErrorCode::kTooLarge, 413, "too_large"},
      {ErrorCode::kUnsatisfiable, 422, "unsatisfiable"},
      {ErrorCode::kInternal, 500, "internal"},
      {ErrorCode::kUnavailable, 503, "unavailable"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(http_status(c.code), c.status) << c.name;
    EXPECT_STREQ(error_code_name(c.code), c.name);
  }
}

TEST(Result, HoldsAValueOrAnError) {
  Result<int> good = 7;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  Result<int> bad = not_found("job 'abcd' not found");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(bad.error().message, "job 'abcd' not found");
}

Status fails() {
  return invalid("gpus: -1 is below the minimum 0");
}

Status passes_error_on() {
  GPUCLOUD_TRY(fails());
  return internal("not reached");
}

TEST(Result, TryReturnsTheFirstError) {
  Status s = passes_error_on();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().message, "gpus: -1 is below the minimum 0");
}

}  // namespace
}  // namespace gpucloud
