// Gauges computed at scrape time from in-memory state, with a cap on their label sets.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "prometheus/labels.h"
#include "prometheus/metric_family.h"

namespace gpucloud::metrics {

/// One gauge family built for one scrape: add() sums values per label set. Beyond
/// `max_series` distinct label sets, values go to one series whose label values are all
/// `_overflow` (see capped_family.h), so a scrape's size is bounded whatever the state holds.
class GaugeSet {
 public:
  GaugeSet(std::string name, std::string help, size_t max_series = 1000);

  /// Adds `value` to the series of `labels`.
  void add(const prometheus::Labels& labels, double value);
  /// Makes the series of `labels` exist (at 0 if nothing is added), so that a scrape shows
  /// zero instead of no series, e.g. for every job state.
  void touch(const prometheus::Labels& labels) { add(labels, 0); }
  /// The family, its series in label order (the overflow series last).
  prometheus::MetricFamily family() const;

 private:
  std::string name_;
  std::string help_;
  size_t max_series_;
  std::map<prometheus::Labels, double> series_;
  std::map<prometheus::Labels, double> overflow_;  // at most one entry
};

}  // namespace gpucloud::metrics
