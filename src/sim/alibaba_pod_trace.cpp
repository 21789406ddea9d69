// The Alibaba v2023 pod list read as a job trace (declared in sim/trace.h).
#include <fmt/format.h>

#include <optional>
#include <unordered_map>

#include "sim/trace.h"

namespace gpucloud::sim {

namespace {

/// The index of a column the file may lack, or nothing.
std::optional<int> optional_column(const CsvTable& t, std::string_view name) {
  auto c = t.column(name);
  return c.ok() ? std::optional<int>(*c) : std::nullopt;
}

}  // namespace

Result<Trace> load_alibaba_pod_trace(const CsvTable& t) {
  std::vector<int> cols;
  for (const char* name : {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}) {
    auto c = t.column(name);
    if (!c.ok()) return c.error();
    cols.push_back(*c);
  }
  enum { kName, kCpu, kMemory, kNum, kMilli };
  // Columns that some files of the release lack (openb_pod_list_multigpu*.csv has only the five
  // above); docs/sim.md lists what each defaults to.
  std::optional<int> spec = optional_column(t, "gpu_spec"), qos = optional_column(t, "qos"),
                     creation = optional_column(t, "creation_time"),
                     deletion = optional_column(t, "deletion_time"),
                     scheduled = optional_column(t, "scheduled_time");
  Trace trace{t.file(), {}};
  trace.durations_known = deletion.has_value();
  trace.jobs.reserve(t.size());
  std::unordered_map<std::string, int> lines;  // name -> line: names are the jobs' ids
  // A time cell: seconds, or `fallback` when the file has no such column.
  auto seconds = [&](size_t r, std::optional<int> c, int64_t fallback) -> Result<int64_t> {
    if (!c) return fallback;
    return t.non_negative(r, *c, kMaxTraceSeconds);
  };
  for (size_t r = 0; r < t.size(); ++r) {
    int64_t v[5] = {};
    for (int i : {kCpu, kMemory, kNum, kMilli}) {
      // cpu_milli within a job spec's limit, so that the trace `sim gen` writes from this one
      // reads back.
      int64_t max = i == kCpu ? JobSpecLimits::kMaxCpuMilli : kMaxCsvNumber;
      auto n = t.non_negative(r, cols[static_cast<size_t>(i)], max);
      if (!n.ok()) return n.error();
      v[i] = *n;
    }
    if (v[kNum] > JobSpecLimits::kMaxGpusPerReplica)
      return invalid(fmt::format("{}column 'num_gpu': {} is above the limit of {}",
                                 t.where(r, cols[kNum]), v[kNum],
                                 JobSpecLimits::kMaxGpusPerReplica));
    if (v[kNum] > 0 && (v[kMilli] < 1 || v[kMilli] > 1000))
      return invalid(fmt::format("{}column 'gpu_milli': {} for a GPU pod; it must be 1..1000",
                                 t.where(r, cols[kMilli]), v[kMilli]));
    if (v[kNum] > 1 && v[kMilli] != 1000)
      return invalid(fmt::format(
          "{}column 'gpu_milli': {} with num_gpu {}; only single-GPU pods may share a GPU",
          t.where(r, cols[kMilli]), v[kMilli], v[kNum]));
    auto created = seconds(r, creation, 0);
    if (!created.ok()) return created.error();
    bool was_scheduled = scheduled && !t.text(r, *scheduled).empty();
    auto start = was_scheduled ? seconds(r, scheduled, 0) : created;
    if (!start.ok()) return start.error();
    auto deleted = seconds(r, deletion, *start);  // no deletion_time: durations unknown (0)
    if (!deleted.ok()) return deleted.error();
    if (*deleted < *start)
      return invalid(fmt::format(
          "{}column 'deletion_time': {} is before {} {}; the duration would be negative",
          t.where(r, *deletion), *deleted, was_scheduled ? "scheduled_time" : "creation_time",
          *start));
    TraceJob job;
    job.id = std::string(t.text(r, cols[kName]));
    if (auto [it, fresh] = lines.emplace(job.id, t.line(r)); !fresh)
      return invalid(
          fmt::format("{}column 'name': '{}' is also the name of line {}; names must be unique",
                      t.where(r, cols[kName]), job.id, it->second));
    job.submit_ms = *created * 1000;
    job.duration_ms = (*deleted - *start) * 1000;
    job.gpus = static_cast<int>(v[kNum]);
    job.gpu_milli = v[kNum] == 1 && v[kMilli] < 1000 ? static_cast<int>(v[kMilli]) : 0;
    job.gpu_model = spec ? std::string(t.text(r, *spec)) : std::string();
    job.cpu_milli = v[kCpu];
    job.memory_mib = v[kMemory];
    job.capacity_class =
        qos && t.text(r, *qos) == "BE" ? CapacityClass::kSpot : CapacityClass::kAny;
    job.line = t.line(r);
    auto position = [&](std::optional<int> c) { return c ? t.position(r, *c) : 0; };
    job.cell_column = {t.position(r, cols[kNum]), position(spec), t.position(r, cols[kCpu]),
                       t.position(r, cols[kMemory]), position(qos)};
    trace.jobs.push_back(std::move(job));
  }
  return trace;
}

}  // namespace gpucloud::sim
