// `sim gen`'s generator: the same seed gives the same trace; arrivals, shapes and durations
// follow the documented distributions.
#include "sim/trace_gen.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>

namespace gpucloud::sim {
namespace {

std::vector<TraceJob> shapes() {
  TraceJob a;
  a.id = "a";
  a.gpus = 1;
  a.gpu_milli = 250;
  a.cpu_milli = 2000;
  TraceJob b;
  b.id = "b";
  b.gpus = 8;
  b.gpu_model = "A100";
  b.replicas = 2;
  b.capacity_class = CapacityClass::kSpot;
  TraceJob c;
  c.id = "c";
  c.gpus = 0;
  c.tenant = "ops";
  return {a, b, b, c};  // b is drawn twice as often
}

std::string text(const std::vector<TraceJob>& jobs) {
  std::ostringstream out;
  write_canonical_trace(out, jobs);
  return out.str();
}

TEST(TraceGenTest, SameSeedSameTraceOtherSeedOtherTrace) {
  GenOptions o;
  o.jobs = 500;
  o.seed = 7;
  std::string first = text(generate_trace(shapes(), o));
  EXPECT_EQ(first, text(generate_trace(shapes(), o)));
  o.seed = 8;
  EXPECT_NE(first, text(generate_trace(shapes(), o)));
}

TEST(TraceGenTest, PoissonArrivalsAtTheRequestedRate) {
  GenOptions o;
  o.jobs = 20000;
  o.rate_per_s = 4;
  auto jobs = generate_trace(shapes(), o);
  ASSERT_EQ(jobs.size(), 20000u);
  EXPECT_EQ(jobs.front().id, "gen-000001");
  double span_s = static_cast<double>(jobs.back().submit_ms) / 1000;
  EXPECT_NEAR(20000 / span_s, 4, 0.15);  // mean rate
  // Exponential gaps: the share of gaps above the mean gap is e^-1.
  int above = 0;
  for (size_t i = 1; i < jobs.size(); ++i) {
    EXPECT_LE(jobs[i - 1].submit_ms, jobs[i].submit_ms);
    above += jobs[i].submit_ms - jobs[i - 1].submit_ms > 250 ? 1 : 0;
  }
  EXPECT_NEAR(above / 19999.0, std::exp(-1), 0.02);
}

TEST(TraceGenTest, ShapesComeFromTheSourceInProportion) {
  GenOptions o;
  o.jobs = 20000;
  o.tenants = 3;
  auto jobs = generate_trace(shapes(), o);
  std::map<int, int> by_gpus;
  std::map<std::string, int> by_tenant;
  for (const TraceJob& j : jobs) {
    by_gpus[j.gpus] += 1;
    by_tenant[j.tenant] += 1;
    if (j.gpus == 8) {
      EXPECT_EQ(j.gpu_model, "A100");
      EXPECT_EQ(j.replicas, 2);
      EXPECT_EQ(j.capacity_class, CapacityClass::kSpot);
    }
    if (j.gpus == 1) {
      EXPECT_EQ(j.gpu_milli, 250);
    }
  }
  EXPECT_EQ(by_gpus.size(), 3u);
  EXPECT_NEAR(by_gpus[8] / 20000.0, 0.5, 0.02);
  EXPECT_NEAR(by_gpus[1] / 20000.0, 0.25, 0.02);
  EXPECT_EQ(by_tenant.size(), 3u);
  for (const auto& [name, n] : by_tenant) {
    EXPECT_EQ(name.rfind("tenant-", 0), 0u);
    EXPECT_NEAR(n / 20000.0, 1 / 3.0, 0.02);
  }
  o.tenants = 0;  // keep the sampled job's tenant
  for (const TraceJob& j : generate_trace(shapes(), o))
    EXPECT_EQ(j.tenant, j.gpus == 0 ? "ops" : "default");
}

TEST(TraceGenTest, LogNormalDurationsWithTheGivenMedianAndSigma) {
  GenOptions o;
  o.jobs = 20000;
  o.duration_median_s = 300;
  o.duration_sigma = 1.2;
  auto jobs = generate_trace(shapes(), o);
  std::vector<double> logs;
  double sum = 0;
  for (const TraceJob& j : jobs) {
    EXPECT_GE(j.duration_ms, 1000);
    logs.push_back(std::log(static_cast<double>(j.duration_ms) / 1000));
    sum += logs.back();
  }
  double mean = sum / static_cast<double>(logs.size()), var = 0;
  for (double l : logs) var += (l - mean) * (l - mean);
  EXPECT_NEAR(std::exp(mean), 300, 15);
  EXPECT_NEAR(std::sqrt(var / static_cast<double>(logs.size())), 1.2, 0.03);
}

TEST(TraceGenTest, BadOptionsNameTheFlag) {
  GenOptions o;
  o.rate_per_s = 0;
  EXPECT_EQ(validate_gen_options(o).error().message,
            "--rate: 0 jobs/s must be above 0 and at most 1000000");
  o = {};
  o.jobs = 0;
  EXPECT_EQ(validate_gen_options(o).error().message, "--jobs: 0 must be 1..100000000");
  EXPECT_TRUE(validate_gen_options(GenOptions{}).ok());
}

}  // namespace
}  // namespace gpucloud::sim
