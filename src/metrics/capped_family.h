// A prometheus-cpp family with a cap on its distinct label sets.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "prometheus/family.h"
#include "prometheus/labels.h"

namespace gpucloud::metrics {

/// The value every label takes on a family's overflow series.
inline constexpr const char* kOverflowLabelValue = "_overflow";

/// Hands out one instrument per label set, at most `max_series` of them: a label set beyond
/// the cap (a flood of tenant names, say) is counted on one overflow series whose every label
/// value is `_overflow`, so memory and scrape size stay bounded whatever the input.
/// Thread-safe: with() may be called from any thread.
template <class T>
class CappedFamily {
 public:
  CappedFamily(prometheus::Family<T>& family, size_t max_series)
      : family_(family), max_series_(max_series) {}

  /// The instrument of `labels` (made on first use; with `args` for its constructor, e.g. a
  /// histogram's buckets), or the overflow series once the cap is reached.
  template <class... Args>
  T& with(const prometheus::Labels& labels, Args&&... args) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = series_.find(labels); it != series_.end()) return *it->second;
    if (series_.size() >= max_series_) {
      if (!overflow_) {
        prometheus::Labels over;
        for (const auto& [name, value] : labels) over[name] = kOverflowLabelValue;
        overflow_ = &family_.Add(over, std::forward<Args>(args)...);
      }
      return *overflow_;
    }
    T& made = family_.Add(labels, std::forward<Args>(args)...);
    series_.emplace(labels, &made);
    return made;
  }

  /// The number of label sets with their own series (the overflow series not counted).
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return series_.size();
  }

 private:
  prometheus::Family<T>& family_;
  const size_t max_series_;
  mutable std::mutex mutex_;
  std::map<prometheus::Labels, T*> series_;
  T* overflow_ = nullptr;
};

}  // namespace gpucloud::metrics
