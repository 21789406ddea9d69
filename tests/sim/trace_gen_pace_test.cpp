// `sim gen`'s pace: burst arrivals, and the arrival rate that offers a given GPU load.
#include <gtest/gtest.h>

#include <map>

#include "sim/trace_gen.h"

namespace gpucloud::sim {
namespace {

std::vector<TraceJob> shapes() {
  TraceJob share;  // a quarter of a GPU
  share.gpus = 1;
  share.gpu_milli = 250;
  TraceJob gang;  // 2 replicas of 8 GPUs
  gang.gpus = 8;
  gang.replicas = 2;
  TraceJob cpu;
  cpu.gpus = 0;
  return {share, gang, gang, cpu};  // mean GPUs per job: (0.25 + 16 + 16 + 0) / 4
}

TEST(TraceGenPaceTest, BurstsArriveTogetherAtEachInterval) {
  GenOptions o;
  o.jobs = 2500;
  o.burst_size = 1000;
  o.burst_interval_ms = 60'000;
  std::map<int64_t, int> per_instant;
  for (const TraceJob& j : generate_trace(shapes(), o)) ++per_instant[j.submit_ms];
  EXPECT_EQ(per_instant, (std::map<int64_t, int>{{0, 1000}, {60'000, 1000}, {120'000, 500}}));
}

TEST(TraceGenPaceTest, TheRateForALoadOffersThatLoad) {
  GenOptions o;
  o.duration_median_s = 100;
  o.duration_sigma = 0;  // every job runs 100 s
  EXPECT_DOUBLE_EQ(mean_gpus_per_job(shapes()), 32.25 / 4);
  EXPECT_DOUBLE_EQ(mean_duration_s(o), 100);
  auto rate = rate_for_load(0.5, 1000, shapes(), o);
  ASSERT_TRUE(rate.ok()) << rate.error().message;
  EXPECT_DOUBLE_EQ(*rate, 0.5 * 1000 / (32.25 / 4 * 100));
  // The trace it gives asks, on average over its span, for half of 1,000 GPUs.
  o.jobs = 20000;
  o.rate_per_s = *rate;
  double gpu_seconds = 0;
  int64_t last_ms = 0;
  for (const TraceJob& j : generate_trace(shapes(), o)) {
    gpu_seconds += static_cast<double>(j.replicas * j.gpu_milli_per_replica()) / 1000 *
                   static_cast<double>(j.duration_ms) / 1000;
    last_ms = j.submit_ms;
  }
  EXPECT_NEAR(gpu_seconds / (static_cast<double>(last_ms) / 1000) / 1000, 0.5, 0.5 * 0.03);
}

TEST(TraceGenPaceTest, ALoadNeedsGpusOnBothSides) {
  GenOptions o;
  auto no_gpus = rate_for_load(0.9, 0, shapes(), o);
  ASSERT_FALSE(no_gpus.ok());
  EXPECT_NE(no_gpus.error().message.find("--cluster: the cluster has no GPU"), std::string::npos);
  TraceJob cpu;
  cpu.gpus = 0;
  auto cpu_only = rate_for_load(0.9, 8, {cpu}, o);
  ASSERT_FALSE(cpu_only.ok());
  EXPECT_NE(cpu_only.error().message.find("--trace-like: no job asks for a GPU"),
            std::string::npos);
}

TEST(TraceGenPaceTest, BadBurstOptionsNameTheFlag) {
  GenOptions o;
  o.burst_size = 10;
  o.burst_interval_ms = 0;
  EXPECT_NE(validate_gen_options(o).error().message.find("--burst-interval: 0 ms"),
            std::string::npos);
  o.burst_interval_ms = 1000;
  o.burst_size = -3;
  EXPECT_NE(validate_gen_options(o).error().message.find("--burst-size: -3"), std::string::npos);
}

}  // namespace
}  // namespace gpucloud::sim
