// The Alibaba v2023 pod list read as a job trace (declared in sim/trace.h).
#include <fmt/format.h>

#include <unordered_map>

#include "sim/trace.h"

namespace gpucloud::sim {

Result<Trace> load_alibaba_pod_trace(const CsvTable& t) {
  std::vector<int> cols;
  for (const char* name : {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
                           "qos", "creation_time", "deletion_time", "scheduled_time"}) {
    auto c = t.column(name);
    if (!c.ok()) return c.error();
    cols.push_back(*c);
  }
  enum { kName, kCpu, kMemory, kNum, kMilli, kSpec, kQos, kCreation, kDeletion, kScheduled };
  Trace trace{t.file(), {}};
  trace.jobs.reserve(t.size());
  std::unordered_map<std::string, int> lines;  // name -> line: names are the jobs' ids
  for (size_t r = 0; r < t.size(); ++r) {
    int64_t v[10] = {};
    for (int i : {kCpu, kMemory, kNum, kMilli, kCreation, kDeletion, kScheduled}) {
      if (i == kScheduled && t.text(r, cols[kScheduled]).empty()) {
        v[i] = -1;  // never scheduled
        continue;
      }
      // The limits of a canonical trace, so that the trace `sim gen` writes from this one reads
      // back: cpu_milli as a job spec's, times (seconds) as seconds_cell_ms's.
      int64_t max = i == kCpu ? JobSpecLimits::kMaxCpuMilli
                    : i == kCreation || i == kDeletion || i == kScheduled ? kMaxTraceSeconds
                                                                          : kMaxCsvNumber;
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
    int64_t start = v[kScheduled] >= 0 ? v[kScheduled] : v[kCreation];
    int start_col = v[kScheduled] >= 0 ? cols[kScheduled] : cols[kCreation];
    if (v[kDeletion] < start)
      return invalid(fmt::format(
          "{}column 'deletion_time': {} is before {} {}; the duration would be negative",
          t.where(r, cols[kDeletion]), v[kDeletion], t.header(start_col), start));
    TraceJob job;
    job.id = std::string(t.text(r, cols[kName]));
    if (auto [it, fresh] = lines.emplace(job.id, t.line(r)); !fresh)
      return invalid(
          fmt::format("{}column 'name': '{}' is also the name of line {}; names must be unique",
                      t.where(r, cols[kName]), job.id, it->second));
    job.submit_ms = v[kCreation] * 1000;
    job.duration_ms = (v[kDeletion] - start) * 1000;
    job.gpus = static_cast<int>(v[kNum]);
    job.gpu_milli = v[kNum] == 1 && v[kMilli] < 1000 ? static_cast<int>(v[kMilli]) : 0;
    job.gpu_model = std::string(t.text(r, cols[kSpec]));
    job.cpu_milli = v[kCpu];
    job.memory_mib = v[kMemory];
    job.capacity_class = t.text(r, cols[kQos]) == "BE" ? CapacityClass::kSpot : CapacityClass::kAny;
    job.line = t.line(r);
    job.cell_column = {t.position(r, cols[kNum]), t.position(r, cols[kSpec]),
                       t.position(r, cols[kCpu]), t.position(r, cols[kMemory]),
                       t.position(r, cols[kQos])};
    trace.jobs.push_back(std::move(job));
  }
  return trace;
}

}  // namespace gpucloud::sim
