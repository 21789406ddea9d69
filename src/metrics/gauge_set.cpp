#include "metrics/gauge_set.h"

#include "metrics/capped_family.h"

namespace gpucloud::metrics {

GaugeSet::GaugeSet(std::string name, std::string help, size_t max_series)
    : name_(std::move(name)), help_(std::move(help)), max_series_(max_series) {}

void GaugeSet::add(const prometheus::Labels& labels, double value) {
  if (auto it = series_.find(labels); it != series_.end()) {
    it->second += value;
    return;
  }
  if (series_.size() < max_series_) {
    series_.emplace(labels, value);
    return;
  }
  prometheus::Labels over;
  for (const auto& [name, v] : labels) over[name] = kOverflowLabelValue;
  overflow_[over] += value;
}

prometheus::MetricFamily GaugeSet::family() const {
  prometheus::MetricFamily f;
  f.name = name_;
  f.help = help_;
  f.type = prometheus::MetricType::Gauge;
  for (const auto* set : {&series_, &overflow_})
    for (const auto& [labels, value] : *set) {
      prometheus::ClientMetric m;
      for (const auto& [name, v] : labels) m.label.push_back({name, v});
      m.gauge.value = value;
      f.metric.push_back(std::move(m));
    }
  return f;
}

}  // namespace gpucloud::metrics
