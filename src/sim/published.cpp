#include "sim/published.h"

namespace gpucloud::sim {

std::optional<std::map<int, double>> published_unallocated(sched::Policy policy) {
  using sched::Policy;
  switch (policy) {
    case Policy::kRandom:
      return std::map<int, double>{{95, 14.32}, {100, 13.75}, {130, 12.62}};
    case Policy::kDotProduct:
      return std::map<int, double>{{95, 9.48}, {100, 9.45}, {130, 9.20}};
    case Policy::kClustering:
      return std::map<int, double>{{95, 8.47}, {100, 8.42}, {130, 8.21}};
    case Policy::kPacking:
      return std::map<int, double>{{95, 8.23}, {100, 8.20}, {130, 7.94}};
    case Policy::kBestFit:
      return std::map<int, double>{{95, 7.14}, {100, 7.09}, {130, 6.89}};
    case Policy::kFgd:
      return std::map<int, double>{{95, 5.09}, {100, 4.77}, {130, 4.60}};
    case Policy::kDefault:  // ours: nothing published
      return std::nullopt;
  }
  return std::nullopt;
}

double reproduction_tolerance(sched::Policy policy) {
  using sched::Policy;
  switch (policy) {
    case Policy::kRandom:
      return 1.5;
    case Policy::kBestFit:
    case Policy::kFgd:
      return 0.3;
    default:
      return 0.6;
  }
}

}  // namespace gpucloud::sim
