// Job traces for `gpucloud sim replay` and `sim gen`: the canonical trace CSV (docs/sim.md) and
// the Alibaba v2023 pod list read as a trace. Every error names file, line and column.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/job_spec.h"
#include "sim/csv_table.h"

namespace gpucloud::sim {

/// Priority values of the named priorities in a trace (a trace may also give a number).
constexpr int kPriorityLow = 50;
constexpr int kPriorityNormal = 100;
constexpr int kPriorityHigh = 200;

/// The largest time or duration a trace may give, in seconds (about 31,700 years).
constexpr int64_t kMaxTraceSeconds = 1'000'000'000'000;

/// One job of a trace. Resource fields are per replica, as in a job spec.
struct TraceJob {
  std::string id;
  std::string tenant = "default";
  int64_t submit_ms = 0;
  int64_t duration_ms = 0;          // how long it runs once started
  int64_t max_runtime_ms = 0;       // 0: unlimited; a longer duration is stopped here
  int64_t expected_runtime_ms = 0;  // the user's estimate, for queue policy sjf; 0: none
  int replicas = 1;
  int gpus = 0;           // whole GPUs per replica (1 for a share)
  int gpu_milli = 0;      // 1..999: a share of one GPU; 0: whole GPUs
  std::string gpu_model;  // "" any; "A|B" either
  int64_t cpu_milli = 1000;
  int64_t memory_mib = 0;
  int priority = kPriorityNormal;
  CapacityClass capacity_class = CapacityClass::kAny;
  // Where the job was read, for messages (line 0: generated, not read).
  enum Cell { kGpusCell, kModelCell, kCpuCell, kMemoryCell, kClassCell, kCellCount };
  int line = 0;
  std::array<int, kCellCount> cell_column{};  // 1-based position of each cell; 0: no such column

  /// GPU milli per replica (a share counts its milli).
  int64_t gpu_milli_per_replica() const { return gpu_milli > 0 ? gpu_milli : int64_t{gpus} * 1000; }
};

/// A trace: jobs in file order.
struct Trace {
  std::string file;
  std::vector<TraceJob> jobs;
  // False for an Alibaba pod list without `deletion_time`: every duration_ms is then 0 and
  // means "unknown" (sim replay refuses such a trace; sim gen and sim fgd need no durations).
  bool durations_known = true;
};

/// "file:line:column: " of a job's cell, for messages (the gpus cell, or column 1, when the
/// trace has no such column; "file: " for a generated job).
std::string job_where(const std::string& file, const TraceJob& job, TraceJob::Cell cell);

/// The canonical header, in the order `sim gen` writes it.
const std::vector<std::string>& canonical_trace_columns();

/// Reads a canonical trace (header: canonical_trace_columns(); only `submit_s` and
/// `duration_s` are required, other missing or empty cells take the job spec's defaults,
/// unknown columns are ignored). Ids default to job-<line>.
Result<Trace> load_canonical_trace(const CsvTable& table);

/// Reads the Alibaba v2023 pod list as a trace: submit = creation_time, duration =
/// deletion_time − scheduled_time (creation_time when never scheduled), tenant `default`,
/// qos BE → capacity class spot, gpu_spec → gpu_model. Only name, cpu_milli, memory_mib,
/// num_gpu and gpu_milli are required; without gpu_spec pods take any model, without qos class
/// `any`, without creation_time they arrive at 0, without scheduled_time they start when
/// created, and without deletion_time the durations are unknown (Trace::durations_known).
Result<Trace> load_alibaba_pod_trace(const CsvTable& table);

/// Reads a trace file: a header with `submit_s` is canonical, one with `num_gpu` and
/// `gpu_milli` an Alibaba pod list; anything else is an error that says which headers are
/// understood.
Result<Trace> load_trace(const std::string& path);

/// Writes jobs as a canonical trace CSV (times in seconds with millisecond precision).
void write_canonical_trace(std::ostream& out, const std::vector<TraceJob>& jobs);

/// The header line of a canonical trace CSV, then rows one at a time (for streamed traces).
void write_canonical_header(std::ostream& out);
void write_canonical_row(std::ostream& out, const TraceJob& j);

/// A priority as written in a trace: low, normal, high or a whole number.
std::string priority_text(int priority);

}  // namespace gpucloud::sim
