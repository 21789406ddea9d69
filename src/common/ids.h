// Identifiers. Job and node ids are time-ordered (UUIDv7 layout), so they sort by creation.
#pragma once

#include <random>
#include <string>

#include "common/clock.h"

namespace gpucloud {

/// Makes ids: 32 lowercase hex digits, a UUIDv7 without dashes (48-bit ms time, then random).
class IdGenerator {
 public:
  explicit IdGenerator(uint64_t seed) : rng_(seed) {}
  /// A new id for time t. Ids from one generator are strictly increasing.
  std::string next(TimeMs t);

 private:
  std::mt19937_64 rng_;
  TimeMs last_time_ = 0;
  uint64_t counter_ = 0;
};

/// A random token of 32 bytes from the system's CSPRNG, as 64 hex digits.
std::string random_token();

/// Whether s looks like an id (hex digits only, 4 to 32 of them): ids may be abbreviated.
bool looks_like_id_prefix(const std::string& s);

}  // namespace gpucloud
