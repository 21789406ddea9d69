#include "sim/trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <optional>
#include <ostream>
#include <unordered_map>

#include "sim/trace_cells.h"

namespace gpucloud::sim {

const std::vector<std::string>& canonical_trace_columns() {
  static const std::vector<std::string> kColumns{
      "id",         "tenant",   "submit_s",       "duration_s",        "max_runtime_s",
      "replicas",   "gpus",     "gpu_milli",      "gpu_model",         "cpu_milli",
      "memory_mib", "priority", "capacity_class", "expected_runtime_s"};
  return kColumns;
}

namespace {

std::optional<int> optional_column(const CsvTable& t, std::string_view name) {
  auto c = t.column(name);
  if (!c.ok()) return std::nullopt;
  return *c;
}

/// Reads one record into a job; `cols` maps canonical column index to table column or -1.
Result<TraceJob> read_job(const CsvTable& t, size_t r, const std::vector<int>& cols) {
  JobSpec defaults;
  TraceJob job;
  job.tenant = defaults.tenant;
  job.replicas = defaults.replicas;
  job.gpus = defaults.gpus;
  job.gpu_milli = defaults.gpu_milli;
  job.cpu_milli = defaults.cpu_milli;
  job.memory_mib = defaults.memory_mib;
  job.max_runtime_ms = defaults.max_runtime_ms;
  job.capacity_class = defaults.capacity_class;
  auto cell = [&](int i) -> std::optional<int> {
    int c = cols[static_cast<size_t>(i)];
    if (c < 0 || t.text(r, c).empty()) return std::nullopt;
    return c;
  };
  enum {
    kId,
    kTenant,
    kSubmit,
    kDuration,
    kMaxRuntime,
    kReplicas,
    kGpus,
    kMilli,
    kModel,
    kCpu,
    kMemory,
    kPriority,
    kClass,
    kExpectedRuntime
  };
  job.id = cell(kId) ? std::string(t.text(r, *cell(kId))) : fmt::format("job-{}", t.line(r));
  if (auto c = cell(kTenant)) job.tenant = std::string(t.text(r, *c));
  for (int i : {kSubmit, kDuration}) {
    auto c = cell(i);
    int col = cols[static_cast<size_t>(i)];
    if (!c)
      return invalid(fmt::format("{}column '{}': empty; every job needs it", t.where(r, col),
                                 canonical_trace_columns()[static_cast<size_t>(i)]));
    auto ms = seconds_cell_ms(t, r, *c);
    if (!ms.ok()) return ms.error();
    (i == kSubmit ? job.submit_ms : job.duration_ms) = *ms;
  }
  if (auto c = cell(kMaxRuntime)) {
    auto ms = seconds_cell_ms(t, r, *c);
    if (!ms.ok()) return ms.error();
    job.max_runtime_ms = *ms;
  }
  if (auto c = cell(kExpectedRuntime)) {
    auto ms = seconds_cell_ms(t, r, *c);
    if (!ms.ok()) return ms.error();
    job.expected_runtime_ms = *ms;
  }
  struct IntCell {
    int index;
    int64_t max;
    int64_t* out64;
    int* out;
  };
  for (IntCell f : {IntCell{kReplicas, JobSpecLimits::kMaxReplicas, nullptr, &job.replicas},
                    IntCell{kGpus, JobSpecLimits::kMaxGpusPerReplica, nullptr, &job.gpus},
                    IntCell{kMilli, 1000, nullptr, &job.gpu_milli},
                    IntCell{kCpu, JobSpecLimits::kMaxCpuMilli, &job.cpu_milli, nullptr},
                    IntCell{kMemory, int64_t{1} << 40, &job.memory_mib, nullptr}}) {
    auto c = cell(f.index);
    if (!c) continue;
    auto v = t.non_negative(r, *c);
    if (!v.ok()) return v.error();
    if (*v > f.max)
      return invalid(fmt::format("{}column '{}': {} is above the limit of {}", t.where(r, *c),
                                 canonical_trace_columns()[static_cast<size_t>(f.index)], *v,
                                 f.max));
    if (f.out64 != nullptr) *f.out64 = *v;
    if (f.out != nullptr) *f.out = static_cast<int>(*v);
  }
  if (job.replicas < 1)
    return invalid(fmt::format("{}column 'replicas': 0; a job has at least 1 replica",
                               t.where(r, *cell(kReplicas))));
  if (job.gpu_milli == 1000) job.gpu_milli = 0;  // a whole GPU, written as 1000 milli
  if (job.gpu_milli > 0) {
    if (job.gpus > 1)
      return invalid(fmt::format(
          "{}column 'gpu_milli': {} with gpus {}; a share is of one GPU (set gpus to 1, or "
          "gpu_milli to 1000 for whole GPUs)",
          t.where(r, *cell(kMilli)), job.gpu_milli, job.gpus));
    job.gpus = 1;
  }
  if (auto c = cell(kModel)) job.gpu_model = std::string(t.text(r, *c));
  if (auto c = cell(kPriority)) {
    auto p = priority_cell(t, r, *c);
    if (!p.ok()) return p.error();
    job.priority = *p;
  }
  if (auto c = cell(kClass)) {
    auto k = capacity_class_cell(t, r, *c);
    if (!k.ok()) return k.error();
    job.capacity_class = *k;
  }
  job.line = t.line(r);
  for (auto [cell, col] : {std::pair{TraceJob::kGpusCell, kGpus},
                           {TraceJob::kModelCell, kModel},
                           {TraceJob::kCpuCell, kCpu},
                           {TraceJob::kMemoryCell, kMemory},
                           {TraceJob::kClassCell, kClass}})
    if (int c = cols[static_cast<size_t>(col)]; c >= 0) job.cell_column[cell] = t.position(r, c);
  return job;
}

}  // namespace

Result<Trace> load_canonical_trace(const CsvTable& t) {
  std::vector<int> cols;
  for (const std::string& name : canonical_trace_columns()) {
    auto c = optional_column(t, name);
    cols.push_back(c ? *c : -1);
  }
  for (const char* required : {"submit_s", "duration_s"}) {
    auto c = t.column(required);
    if (!c.ok()) return c.error();
  }
  Trace trace{t.file(), {}};
  trace.jobs.reserve(t.size());
  std::unordered_map<std::string, int> lines;  // id -> line
  for (size_t r = 0; r < t.size(); ++r) {
    auto job = read_job(t, r, cols);
    if (!job.ok()) return job.error();
    auto [it, fresh] = lines.emplace(job->id, t.line(r));
    if (!fresh)
      return invalid(
          fmt::format("{}column 'id': '{}' is also the id of line {}; ids must be unique",
                      t.where(r, cols[0]), job->id, it->second));
    trace.jobs.push_back(std::move(*job));
  }
  return trace;
}

Result<Trace> load_trace(const std::string& path) {
  auto table = CsvTable::read_file(path);
  if (!table.ok()) return table.error();
  if (table->column("submit_s").ok()) return load_canonical_trace(*table);
  if (table->column("num_gpu").ok() && table->column("gpu_milli").ok())
    return load_alibaba_pod_trace(*table);
  return invalid(fmt::format(
      "{}:1:1: not a trace: a canonical trace has the columns {} (submit_s and duration_s "
      "required); an Alibaba pod list has name,cpu_milli,memory_mib,num_gpu,gpu_milli (required) "
      "and gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time",
      path, fmt::join(canonical_trace_columns(), ",")));
}

std::string job_where(const std::string& file, const TraceJob& job, TraceJob::Cell cell) {
  if (job.line == 0) return fmt::format("{}: ", file);
  int column = job.cell_column[cell];
  if (column == 0) column = job.cell_column[TraceJob::kGpusCell];
  return fmt::format("{}:{}:{}: ", file, job.line, column == 0 ? 1 : column);
}

std::string priority_text(int priority) {
  if (priority == kPriorityLow) return "low";
  if (priority == kPriorityNormal) return "normal";
  if (priority == kPriorityHigh) return "high";
  return std::to_string(priority);
}

void write_canonical_trace(std::ostream& out, const std::vector<TraceJob>& jobs) {
  write_canonical_header(out);
  for (const TraceJob& j : jobs) write_canonical_row(out, j);
}

void write_canonical_header(std::ostream& out) {
  out << fmt::format("{}\n", fmt::join(canonical_trace_columns(), ","));
}

void write_canonical_row(std::ostream& out, const TraceJob& j) {
  auto secs = [](int64_t ms) {
    return ms % 1000 == 0 ? std::to_string(ms / 1000) : fmt::format("{:.3f}", ms / 1000.0);
  };
  out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", j.id, j.tenant,
                     secs(j.submit_ms), secs(j.duration_ms),
                     j.max_runtime_ms > 0 ? secs(j.max_runtime_ms) : "", j.replicas, j.gpus,
                     j.gpu_milli > 0 ? std::to_string(j.gpu_milli) : "", j.gpu_model, j.cpu_milli,
                     j.memory_mib, priority_text(j.priority),
                     j.capacity_class == CapacityClass::kAny ? "" : to_string(j.capacity_class),
                     j.expected_runtime_ms > 0 ? secs(j.expected_runtime_ms) : "");
}

}  // namespace gpucloud::sim
