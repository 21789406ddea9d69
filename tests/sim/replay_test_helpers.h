// Helpers of the replay tests: a trace from CSV rows, and one job's outcome by id.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sim/csv_table.h"
#include "sim/replay.h"
#include "sim/trace.h"

namespace gpucloud::sim::test_helpers {

/// A trace of the rows given, under the canonical header (id, tenant, submit_s, duration_s,
/// max_runtime_s, gpus, gpu_milli, gpu_model, priority, capacity_class).
inline Trace trace(const std::string& rows) {
  auto t = CsvTable::parse(
      "id,tenant,submit_s,duration_s,max_runtime_s,gpus,gpu_milli,gpu_model,priority,"
      "capacity_class\n" +
          rows,
      "t.csv");
  EXPECT_TRUE(t.ok());
  auto tr = load_canonical_trace(*t);
  EXPECT_TRUE(tr.ok()) << tr.error().message;
  return *tr;
}

/// The outcome of job `id` (a test failure, and an empty outcome, when there is none).
inline const JobOutcome& job(const ReplayResult& r, const std::string& id) {
  for (const JobOutcome& j : r.jobs)
    if (j.id == id) return j;
  static JobOutcome none;
  ADD_FAILURE() << "no job " << id;
  return none;
}

}  // namespace gpucloud::sim::test_helpers
