// `gpucloud sim replay --trace`: the CSV table within limits, then the canonical trace or the
// Alibaba pod list. An accepted canonical trace must read back with the same jobs once written.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_check.h"
#include "sim/trace.h"

using namespace gpucloud;
using namespace gpucloud::sim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto table = CsvTable::parse(std::string(reinterpret_cast<const char*>(data), size), "t.csv");
  if (!table) {
    fuzz::require_user_error(table.error(), "CsvTable::parse");
    return 0;
  }
  bool canonical = table->column("submit_s").ok();
  if (!canonical && !table->column("creation_time").ok()) return 0;
  auto trace = canonical ? load_canonical_trace(*table) : load_alibaba_pod_trace(*table);
  if (!trace) {
    fuzz::require_user_error(trace.error(), "load trace");
    return 0;
  }
  std::ostringstream out;
  write_canonical_trace(out, trace->jobs);
  auto again_table = CsvTable::parse(out.str(), "again.csv");
  fuzz::require(again_table.ok(), "rewritten trace",
                again_table.ok() ? "" : again_table.error().message);
  auto again = load_canonical_trace(*again_table);
  fuzz::require(again.ok(), "rewritten trace", again.ok() ? "" : again.error().message);
  fuzz::require(again->jobs.size() == trace->jobs.size(), "rewritten trace lost jobs");
  return 0;
}
