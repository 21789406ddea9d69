#include "sim/arrivals.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpucloud::sim {
namespace {

std::vector<TracePod> pods_named(const std::vector<std::pair<std::string, int>>& milli) {
  std::vector<TracePod> pods;
  for (const auto& [name, m] : milli) {
    TracePod p;
    p.name = name;
    p.request = {1000, 0, m > 0 ? 1 : 0, m};
    pods.push_back(p);
  }
  return pods;
}

int64_t total_milli(const std::vector<TracePod>& pods, const std::vector<int>& order) {
  int64_t t = 0;
  for (int i : order) t += pods[i].request.total_gpu_milli();
  return t;
}

TEST(ArrivalsTest, ShuffleIsDeterministicPerSeedAndIgnoresFileOrder) {
  auto pods = pods_named({{"a", 1000}, {"b", 500}, {"c", 0}, {"d", 300}, {"e", 1000}, {"f", 10}});
  auto reversed = pods;
  std::reverse(reversed.begin(), reversed.end());
  auto names = [](const std::vector<TracePod>& p, const std::vector<int>& o) {
    std::vector<std::string> n;
    for (int i : o) n.push_back(p[i].name);
    return n;
  };
  auto a = arrival_sequence(pods, 42, 1.0, 1);
  EXPECT_EQ(names(pods, a), names(reversed, arrival_sequence(reversed, 42, 1.0, 1)));
  EXPECT_EQ(a, arrival_sequence(pods, 42, 1.0, 1));
  EXPECT_NE(a, arrival_sequence(pods, 43, 1.0, 1));
  ASSERT_EQ(a.size(), 6u);  // the pods alone pass 1.0 × 1 milli: nothing is appended
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3, 4, 5}));  // every original pod, once
}

TEST(ArrivalsTest, InflationStopsBeforePassingTheLimit) {
  auto pods = pods_named({{"a", 1000}, {"b", 500}, {"c", 0}, {"d", 300}});
  // 1800 milli of pods on a 4000 milli cluster, inflated to 1.3 × 4000 = 5200
  for (uint64_t seed = 1; seed < 50; ++seed) {
    auto order = arrival_sequence(pods, seed, 1.3, 4000);
    int64_t total = total_milli(pods, order);
    EXPECT_LE(total, 5200);
    EXPECT_GT(total, 5200 - 1000);  // it stopped at a draw that would have passed 5200
    ASSERT_GT(order.size(), 4u);
  }
  auto cpu_only = pods_named({{"a", 0}, {"b", 0}});
  EXPECT_EQ(arrival_sequence(cpu_only, 1, 1.3, 4000).size(), 2u);  // nothing to inflate
}

}  // namespace
}  // namespace gpucloud::sim
