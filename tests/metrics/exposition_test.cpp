#include "metrics/exposition.h"

#include <gtest/gtest.h>

#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace gpucloud::metrics {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Exposition, EscapesBackslashQuoteAndNewlineInLabelValues) {
  EXPECT_EQ(escape_label_value(R"(a\b"c)"
                               "\n"
                               "d"),
            R"(a\\b\"c\nd)");
  prometheus::MetricFamily f{"gpucloud_jobs", "Jobs.", prometheus::MetricType::Gauge, {}};
  prometheus::ClientMetric m;
  m.label.push_back({"tenant", "evil\"} 1\nfake_metric 2"});
  m.gauge.value = 3;
  f.metric.push_back(m);
  std::string text = render({f}, Format::kPrometheusText);
  // The injected line stays inside the label value: no line starts with fake_metric.
  EXPECT_TRUE(contains(text, "gpucloud_jobs{tenant=\"evil\\\"} 1\\nfake_metric 2\"} 3\n")) << text;
  EXPECT_FALSE(contains(text, "\nfake_metric")) << text;
}

TEST(Exposition, EscapesHelpPerFormat) {
  prometheus::MetricFamily f{"x", "a \\ b\n\"c\"", prometheus::MetricType::Gauge, {}};
  EXPECT_TRUE(contains(render({f}, Format::kPrometheusText), "# HELP x a \\\\ b\\n\"c\"\n"));
  EXPECT_TRUE(contains(render({f}, Format::kOpenMetrics), "# HELP x a \\\\ b\\n\\\"c\\\"\n"));
}

TEST(Exposition, HistogramHasCumulativeBucketsSumAndCount) {
  prometheus::Registry registry;
  auto& family = prometheus::BuildHistogram().Name("wait_seconds").Help("Wait.").Register(registry);
  auto& h =
      family.Add({{"route", "/v1/jobs"}}, prometheus::Histogram::BucketBoundaries{0.1, 1, 10});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(0.5);
  h.Observe(100);
  std::string text = render(registry.Collect(), Format::kPrometheusText);
  EXPECT_TRUE(contains(text, "# TYPE wait_seconds histogram\n")) << text;
  EXPECT_TRUE(contains(text, "wait_seconds_bucket{route=\"/v1/jobs\",le=\"0.1\"} 1\n")) << text;
  EXPECT_TRUE(contains(text, "wait_seconds_bucket{route=\"/v1/jobs\",le=\"1\"} 3\n")) << text;
  EXPECT_TRUE(contains(text, "wait_seconds_bucket{route=\"/v1/jobs\",le=\"10\"} 3\n")) << text;
  EXPECT_TRUE(contains(text, "wait_seconds_bucket{route=\"/v1/jobs\",le=\"+Inf\"} 4\n")) << text;
  EXPECT_TRUE(contains(text, "wait_seconds_sum{route=\"/v1/jobs\"} 101.05\n")) << text;
  EXPECT_TRUE(contains(text, "wait_seconds_count{route=\"/v1/jobs\"} 4\n")) << text;
  // OpenMetrics spells le as a float.
  std::string om = render(registry.Collect(), Format::kOpenMetrics);
  EXPECT_TRUE(contains(om, "wait_seconds_bucket{route=\"/v1/jobs\",le=\"1.0\"} 3\n")) << om;
}

TEST(Exposition, OpenMetricsNamesCounterFamiliesWithoutTotalAndEndsWithEof) {
  prometheus::Registry registry;
  auto& family = prometheus::BuildCounter()
                     .Name("gpucloud_agent_polls_total")
                     .Help("Polls.")
                     .Register(registry);
  family.Add({}).Increment(2);
  std::string text = render(registry.Collect(), Format::kPrometheusText);
  EXPECT_TRUE(contains(text, "# TYPE gpucloud_agent_polls_total counter\n")) << text;
  EXPECT_TRUE(contains(text, "\ngpucloud_agent_polls_total 2\n")) << text;
  EXPECT_FALSE(contains(text, "# EOF"));
  std::string om = render(registry.Collect(), Format::kOpenMetrics);
  EXPECT_TRUE(contains(om, "# TYPE gpucloud_agent_polls counter\n")) << om;
  EXPECT_TRUE(contains(om, "\ngpucloud_agent_polls_total 2\n")) << om;
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
}

TEST(Exposition, NegotiatesOpenMetricsOnlyWhenAskedFor) {
  // What Prometheus 2.42 sends.
  EXPECT_EQ(negotiate_format("application/openmetrics-text;version=1.0.0,application/"
                             "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
                             "*/*;q=0.1"),
            Format::kOpenMetrics);
  EXPECT_EQ(negotiate_format(""), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("text/plain"), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("*/*"), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text; q=0, text/plain"),
            Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("text/plain;q=0.5, application/openmetrics-text ;q=0.2"),
            Format::kOpenMetrics);
  EXPECT_STREQ(content_type(Format::kPrometheusText), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace
}  // namespace gpucloud::metrics
