// Rendering of metric families as Prometheus text (format 0.0.4) or OpenMetrics 1.0 text.
#pragma once

#include <string>
#include <vector>

#include "prometheus/metric_family.h"

namespace gpucloud::metrics {

enum class Format { kPrometheusText, kOpenMetrics };

/// The format a scraper asked for in its Accept header: OpenMetrics when it names
/// application/openmetrics-text (with a q above 0), else Prometheus text 0.0.4.
Format negotiate_format(const std::string& accept);

/// The Content-Type of an answer in `format`.
const char* content_type(Format format);

/// Renders the families (counters, gauges, histograms; untyped as unknown) in `format`.
/// Label values are escaped (backslash, double quote, newline), HELP text too; an OpenMetrics
/// answer names counters without their `_total` suffix in TYPE/HELP and ends with `# EOF`.
std::string render(const std::vector<prometheus::MetricFamily>& families, Format format);

/// Escapes a label value: backslash, double quote and newline become \\, \" and \n.
std::string escape_label_value(const std::string& value);

}  // namespace gpucloud::metrics
