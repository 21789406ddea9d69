#include "metrics/exposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace gpucloud::metrics {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Shortest round-trip form; +Inf, -Inf and NaN as both formats spell them.
std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// OpenMetrics wants `le` as a float ("1.0", not "1").
std::string format_le(double v, Format format) {
  std::string s = format_value(v);
  if (format == Format::kOpenMetrics && std::isfinite(v) &&
      s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}

std::string escape_help(const std::string& help, Format format) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && format == Format::kOpenMetrics)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

const char* type_name(prometheus::MetricType type, Format format) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Histogram:
      return "histogram";
    case prometheus::MetricType::Summary:
      return "summary";
    default:
      return format == Format::kOpenMetrics ? "unknown" : "untyped";
  }
}

// One sample line: name{labels[,extra]} value
void write_sample(std::string& out, const std::string& name,
                  const std::vector<prometheus::ClientMetric::Label>& labels,
                  const std::string& extra_name, const std::string& extra_value,
                  const std::string& value) {
  out += name;
  if (!labels.empty() || !extra_name.empty()) {
    out += '{';
    bool first = true;
    for (const auto& l : labels) {
      if (!first) out += ',';
      first = false;
      out += l.name + "=\"" + escape_label_value(l.value) + '"';
    }
    if (!extra_name.empty()) {
      if (!first) out += ',';
      out += extra_name + "=\"" + extra_value + '"';
    }
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

constexpr size_t npos = std::string_view::npos;

// The q parameter of a media range's ";a=b;q=0.5" parameters (1 when absent or malformed).
double quality(std::string_view params) {
  while (!params.empty()) {
    size_t next = params.find(';', 1);
    std::string_view p = params.substr(1, next == npos ? npos : next - 1);
    while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
    if (p.size() > 2 && p[0] == 'q' && p[1] == '=') {
      std::string digits(p.substr(2, 8));
      char* end = nullptr;
      double q = std::strtod(digits.c_str(), &end);
      return end == digits.c_str() ? 1 : q;
    }
    if (next == npos) break;
    params.remove_prefix(next);
  }
  return 1;
}

}  // namespace

Format negotiate_format(const std::string& accept) {
  // Media ranges separated by commas, each with optional ;params (q=0 refuses it).
  size_t start = 0;
  while (start <= accept.size()) {
    size_t end = accept.find(',', start);
    if (end == std::string::npos) end = accept.size();
    std::string_view range(accept.data() + start, end - start);
    size_t semi = range.find(';');
    std::string_view type = range.substr(0, semi);
    while (!type.empty() && type.front() == ' ') type.remove_prefix(1);
    while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
    if (type == "application/openmetrics-text" &&
        quality(range.substr(semi == npos ? range.size() : semi)) > 0)
      return Format::kOpenMetrics;
    start = end + 1;
  }
  return Format::kPrometheusText;
}

const char* content_type(Format format) {
  return format == Format::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

std::string escape_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string render(const std::vector<prometheus::MetricFamily>& families, Format format) {
  std::string out;
  const bool om = format == Format::kOpenMetrics;
  for (const auto& f : families) {
    const bool counter = f.type == prometheus::MetricType::Counter;
    // OpenMetrics names a counter family without _total; its samples carry it.
    std::string family_name = f.name;
    if (om && counter && ends_with(family_name, "_total"))
      family_name.resize(family_name.size() - 6);
    if (!f.help.empty()) out += "# HELP " + family_name + ' ' + escape_help(f.help, format) + '\n';
    out += "# TYPE " + family_name + ' ' + type_name(f.type, format) + '\n';
    for (const auto& m : f.metric) {
      switch (f.type) {
        case prometheus::MetricType::Counter:
          write_sample(out, om ? family_name + "_total" : f.name, m.label, "", "",
                       format_value(m.counter.value));
          break;
        case prometheus::MetricType::Gauge:
          write_sample(out, f.name, m.label, "", "", format_value(m.gauge.value));
          break;
        case prometheus::MetricType::Histogram: {
          for (const auto& b : m.histogram.bucket)
            write_sample(out, f.name + "_bucket", m.label, "le", format_le(b.upper_bound, format),
                         std::to_string(b.cumulative_count));
          write_sample(out, f.name + "_sum", m.label, "", "", format_value(m.histogram.sample_sum));
          write_sample(out, f.name + "_count", m.label, "", "",
                       std::to_string(m.histogram.sample_count));
          break;
        }
        case prometheus::MetricType::Summary: {
          for (const auto& q : m.summary.quantile)
            write_sample(out, f.name, m.label, "quantile", format_value(q.quantile),
                         format_value(q.value));
          write_sample(out, f.name + "_sum", m.label, "", "", format_value(m.summary.sample_sum));
          write_sample(out, f.name + "_count", m.label, "", "",
                       std::to_string(m.summary.sample_count));
          break;
        }
        default:
          write_sample(out, f.name, m.label, "", "", format_value(m.untyped.value));
      }
    }
  }
  if (om) out += "# EOF\n";
  return out;
}

}  // namespace gpucloud::metrics
