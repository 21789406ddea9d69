// Cell readers shared by the trace and cluster loaders: each error names file:line:column, the
// column and the bad value.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "model/job_spec.h"
#include "sim/csv_table.h"

namespace gpucloud::sim {

/// A time in seconds ("12", "0.5"), 0 or more, as milliseconds (rounded).
Result<int64_t> seconds_cell_ms(const CsvTable& t, size_t r, int c);

/// A priority: low, normal, high (trace.h's values) or a whole number.
Result<int> priority_cell(const CsvTable& t, size_t r, int c);

/// A capacity class: on-demand, spot or any.
Result<CapacityClass> capacity_class_cell(const CsvTable& t, size_t r, int c);

}  // namespace gpucloud::sim
