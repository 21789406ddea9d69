// Replay statistics, reports, the price catalog and the line chart, on hand-made results.
#include "sim/replay_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/svg_plot.h"

namespace gpucloud::sim {
namespace {

TEST(DistributionTest, MeanAndNearestRankPercentiles) {
  std::vector<int64_t> ms;
  for (int i = 1; i <= 100; ++i) ms.push_back(i * 1000);
  Distribution d = distribution_ms(ms);
  EXPECT_EQ(d.count, 100u);
  EXPECT_DOUBLE_EQ(d.mean_s, 50.5);
  EXPECT_DOUBLE_EQ(d.p50_s, 50);
  EXPECT_DOUBLE_EQ(d.p95_s, 95);
  EXPECT_DOUBLE_EQ(d.p99_s, 99);
  EXPECT_DOUBLE_EQ(d.max_s, 100);
  EXPECT_DOUBLE_EQ(distribution_ms({}).p99_s, 0);
  EXPECT_DOUBLE_EQ(distribution_ms({7000}).p50_s, 7);
}

TEST(TimelineMeansTest, WeightsEachStateByHowLongItHeld) {
  // 2 GPUs: 1 GPU busy for 30 s, then 2 for 10 s; queue 4 then 0.
  std::vector<TimePoint> t{{0, 1000, 4, 1, 500}, {30'000, 2000, 0, 2, 0}, {40'000, 0, 0, 0, 0}};
  TimelineMeans m = timeline_means(t, 2);
  EXPECT_DOUBLE_EQ(m.gpu_alloc_pct, 100 * (0.5 * 30 + 1.0 * 10) / 40);
  EXPECT_DOUBLE_EQ(m.peak_gpu_alloc_pct, 100);
  EXPECT_DOUBLE_EQ(m.queued, 4 * 30 / 40.0);
  EXPECT_EQ(m.peak_queued, 4);
  EXPECT_DOUBLE_EQ(m.frag_ratio_pct, 100 * (0.5 * 30) / 40);  // 500 of 1000 free, for 30 s
  EXPECT_DOUBLE_EQ(m.frag_milli_pct, 100 * (0.25 * 30) / 40);
  // A window: only the first 30 s, or 20 s around the change.
  EXPECT_DOUBLE_EQ(timeline_means(t, 2, 0, 30'000).gpu_alloc_pct, 50);
  EXPECT_DOUBLE_EQ(timeline_means(t, 2, 20'000, 40'000).gpu_alloc_pct, 75);
}

ReplayResult sample() {
  ReplayResult r;
  r.policy = "default";
  r.nodes = 1;
  r.gpus = 2;
  r.jobs = {{"a", "t1", 0, 0, 3'600'000, 0, 1, false},
            {"b", "t2", 0, 600'000, 4'200'000, 600'000, 1, true},
            {"c", "t2", 100, -1, -1, 0, 0, false}};
  r.never_fit = {{"d", "t.csv:5:7: job d: gpus: 12 requested but the largest node has 2"}};
  r.timeline = {{0, 1000, 1, 1, 0}, {3'600'000, 1000, 0, 1, 0}, {4'200'000, 0, 0, 0, 0}};
  r.gpu_hours = {{"t1", {{"A100", 1.0}}}, {"t2", {{"A100", 1.0}, {"T4", 2.0}}}};
  return r;
}

TEST(ReplayJsonTest, HasTheDocumentedFields) {
  auto prices = PriceCatalog::parse_csv("gpu_model,usd_per_gpu_hour\nA100,2.5\n*,0.5\n", "p.csv");
  ASSERT_TRUE(prices.ok()) << prices.error().message;
  nlohmann::json j = replay_json(sample(), &*prices);
  EXPECT_EQ(j["policy"], "default");
  EXPECT_EQ(j["jobs"]["total"], 4);
  EXPECT_EQ(j["jobs"]["completed"], 2);
  EXPECT_EQ(j["jobs"]["unfinished"], 1);
  EXPECT_EQ(j["jobs"]["stopped_at_max_runtime"], 1);
  EXPECT_EQ(j["never_fit"]["count"], 1);
  EXPECT_EQ(j["never_fit"]["examples"][0]["message"],
            "t.csv:5:7: job d: gpus: 12 requested but the largest node has 2");
  EXPECT_DOUBLE_EQ(j["queueing_delay_s"]["mean"].get<double>(), 300);
  EXPECT_DOUBLE_EQ(j["completion_time_s"]["p99"].get<double>(), 4200);
  EXPECT_DOUBLE_EQ(j["gpu_allocation_pct"]["time_weighted_mean"].get<double>(), 50);
  ASSERT_EQ(j["tenants"].size(), 2u);
  EXPECT_EQ(j["tenants"][1]["tenant"], "t2");
  EXPECT_DOUBLE_EQ(j["tenants"][1]["gpu_hours"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(j["tenants"][1]["usd"].get<double>(), 2.5 + 2 * 0.5);
  EXPECT_DOUBLE_EQ(j["total_usd"].get<double>(), 2.5 + 3.5);
  EXPECT_TRUE(replay_json(sample(), nullptr)["total_usd"].is_null());
}

TEST(ReplayReportTest, TextListsDelaysCostsAndNeverFitJobs) {
  std::string text = format_replay_report(sample(), nullptr);
  EXPECT_NE(text.find("queueing delay"), std::string::npos) << text;
  EXPECT_NE(text.find("p99"), std::string::npos);
  EXPECT_NE(text.find("1 never fit"), std::string::npos);
  EXPECT_NE(text.find("t.csv:5:7: job d"), std::string::npos);
  EXPECT_NE(text.find("no --prices"), std::string::npos);
}

TEST(ReplayPlotTest, HasAxesLabelsAndLegend) {
  std::string svg = replay_plot_svg(sample(), "replay <test>");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("replay &lt;test&gt;"), std::string::npos);
  EXPECT_NE(svg.find("virtual time (minutes)"), std::string::npos) << svg;
  EXPECT_NE(svg.find("% of GPU capacity"), std::string::npos);
  EXPECT_NE(svg.find("jobs queued (right axis)"), std::string::npos);
  EXPECT_NE(svg.find("GPUs allocated (%)"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
}

TEST(PriceCatalogTest, CsvAndYamlAndErrors) {
  auto yaml = PriceCatalog::parse_yaml("usd_per_gpu_hour:\n  A100: 1.8\n  T4: 0.35\n", "p.yaml");
  ASSERT_TRUE(yaml.ok()) << yaml.error().message;
  EXPECT_DOUBLE_EQ(*yaml->usd_per_gpu_hour("T4"), 0.35);
  EXPECT_FALSE(yaml->usd_per_gpu_hour("H100").has_value());
  EXPECT_EQ(yaml->check_covers({"A100", "H100"}).error().message,
            "p.yaml: no price for GPU model 'H100' of the cluster; add a line "
            "'H100,<usd per GPU-hour>' (or '*,<usd>' for every model not listed)");
  auto bad = PriceCatalog::parse_yaml("usd_per_gpu_hour:\n  A100: cheap\n", "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "p.yaml:2:9: usd_per_gpu_hour: 'cheap' is not a number");
  auto csv = PriceCatalog::parse_csv("gpu_model,usd_per_gpu_hour\nA100,-1\n", "p.csv");
  ASSERT_FALSE(csv.ok());
  EXPECT_EQ(csv.error().message, "p.csv:2:6: usd_per_gpu_hour: -1 is negative");
}

TEST(LineChartTest, RightAxisAndSteps) {
  LineChart c;
  c.title = "t";
  c.x_label = "x";
  c.y_label = "y";
  c.y2_label = "y2";
  c.series = {{"left", {{0, 1}, {10, 50}}, false, true}, {"right", {{0, 3}, {10, 7}}, true}};
  std::string svg = line_chart_svg(c);
  EXPECT_NE(svg.find(">y2</text>"), std::string::npos);
  EXPECT_NE(svg.find("right (right axis)"), std::string::npos);
  EXPECT_NE(svg.find(">left</text>"), std::string::npos);
}

}  // namespace
}  // namespace gpucloud::sim
