#include "metrics/capped_family.h"

#include <gtest/gtest.h>

#include "metrics/exposition.h"
#include "metrics/gauge_set.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace gpucloud::metrics {
namespace {

size_t count_lines_starting(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (text.compare(at, prefix.size(), prefix) == 0) ++n;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return n;
}

TEST(CappedFamily, AFloodOfLabelValuesEndsOnOneOverflowSeries) {
  prometheus::Registry registry;
  auto& family =
      prometheus::BuildCounter().Name("submits_total").Help("Submits.").Register(registry);
  CappedFamily<prometheus::Counter> capped(family, 3);
  for (int i = 0; i < 10'000; ++i) capped.with({{"tenant", "t" + std::to_string(i)}}).Increment();
  capped.with({{"tenant", "t1"}}).Increment();  // an existing series still counts on its own
  EXPECT_EQ(capped.size(), 3u);
  std::string text = render(registry.Collect(), Format::kPrometheusText);
  EXPECT_EQ(count_lines_starting(text, "submits_total{"), 4u) << text;
  EXPECT_NE(text.find("submits_total{tenant=\"t1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("submits_total{tenant=\"_overflow\"} 9997\n"), std::string::npos) << text;
}

TEST(GaugeSet, SumsPerLabelSetAndCapsSeries) {
  GaugeSet jobs("gpucloud_jobs", "Jobs.", 2);
  jobs.touch({{"state", "running"}, {"tenant", "a"}});
  jobs.add({{"state", "pending"}, {"tenant", "a"}}, 1);
  jobs.add({{"state", "pending"}, {"tenant", "a"}}, 1);
  jobs.add({{"state", "pending"}, {"tenant", "b"}}, 5);
  jobs.add({{"state", "pending"}, {"tenant", "c"}}, 1);
  std::string text = render({jobs.family()}, Format::kPrometheusText);
  EXPECT_NE(text.find("gpucloud_jobs{state=\"running\",tenant=\"a\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpucloud_jobs{state=\"pending\",tenant=\"a\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpucloud_jobs{state=\"_overflow\",tenant=\"_overflow\"} 6\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(count_lines_starting(text, "gpucloud_jobs{"), 3u) << text;
}

}  // namespace
}  // namespace gpucloud::metrics
