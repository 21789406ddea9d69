// The arrival sequence of the FGD experiment (shared/fgd-experiment.md, "The arrival sequence").
#pragma once

#include <cstdint>
#include <vector>

#include "sim/alibaba_trace.h"

namespace gpucloud::sim {

/// The pods in arrival order, as indices into `pods`: all pods sorted by name and shuffled with
/// the seed, then copies drawn uniformly with replacement from the sorted pods appended until
/// the total requested GPU milli would pass inflation × capacity_milli (that draw is discarded;
/// a CPU-only draw never stops the loop). No inflation if no pod asks for a GPU.
std::vector<int> arrival_sequence(const std::vector<TracePod>& pods, uint64_t seed,
                                  double inflation, int64_t capacity_milli);

}  // namespace gpucloud::sim
