#include "common/ids.h"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

namespace gpucloud {

std::string IdGenerator::next(TimeMs t) {
  // Monotonic: the same millisecond takes an incrementing 12-bit counter (UUIDv7 "rand_a").
  if (t <= last_time_) {
    t = last_time_;
    if (++counter_ >= 0x1000) {
      ++t;
      counter_ = 0;
    }
  } else {
    counter_ = rng_() & 0x3ff;
  }
  last_time_ = t;
  uint64_t hi = (static_cast<uint64_t>(t) << 16) | 0x7000 | counter_;
  uint64_t lo = (rng_() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  return fmt::format("{:016x}{:016x}", hi, lo);
}

std::string random_token() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  unsigned char buf[32];
  if (!urandom.read(reinterpret_cast<char*>(buf), sizeof buf))
    throw std::runtime_error("cannot read /dev/urandom");
  std::string out;
  for (unsigned char c : buf) out += fmt::format("{:02x}", c);
  return out;
}

bool looks_like_id_prefix(const std::string& s) {
  if (s.size() < 4 || s.size() > 32) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace gpucloud
