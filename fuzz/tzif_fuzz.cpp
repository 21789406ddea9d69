// Quota windows' time zones (src/common/time_zone.h): TZif bytes as read from the zoneinfo
// database. An accepted zone answers offset and local-time queries across centuries without
// crashing, and its offsets stay within the 26 hours the reader accepts.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/time_zone.h"
#include "fuzz_check.h"

using namespace gpucloud;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto zone = TimeZone::parse("Fuzz/Zone", std::string(reinterpret_cast<const char*>(data), size));
  if (!zone) {
    fuzz::require_user_error(zone.error(), "TimeZone::parse");
    return 0;
  }
  for (int64_t t : {int64_t{-4'000'000'000}, int64_t{0}, int64_t{1'711'846'800},
                    int64_t{1'798'761'600}, int64_t{40'000'000'000}}) {
    int64_t offset = (*zone)->offset_s(t);
    fuzz::require(offset >= -26 * 3600 && offset <= 26 * 3600, "offset within 26 hours",
                  std::to_string(offset));
    (void)(*zone)->to_utc_s(t);
  }
  return 0;
}
