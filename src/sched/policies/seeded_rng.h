// A seeded random-number generator whose draws are the same on every platform (std::mt19937_64
// is specified bit for bit; the std distributions are not, so bounded draws are done here).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace gpucloud::sched {

/// Deterministic random numbers from a seed.
class SeededRng {
 public:
  explicit SeededRng(uint64_t seed) : engine_(seed) {}

  /// A uniform integer in [0, n) (n > 0), by rejection: no modulo bias.
  uint64_t below(uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v = engine_();
    while (v >= limit) v = engine_();
    return v % n;
  }

  /// Shuffles in place (Fisher–Yates, from the back).
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace gpucloud::sched
