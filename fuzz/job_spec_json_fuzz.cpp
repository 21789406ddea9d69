// POST /v1/jobs and `gpucloud submit job.json`: bounded JSON parsing, then the job spec reader.
// A spec that is accepted must survive job_spec_to_json -> job_spec_from_json unchanged.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz_check.h"
#include "model/job_spec.h"
#include "model/json_limits.h"

using namespace gpucloud;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = parse_json_limited(text, "request body");
  if (!doc) {
    fuzz::require_user_error(doc.error(), "parse_json_limited");
    return 0;
  }
  auto spec = job_spec_from_json(*doc);
  if (!spec) {
    fuzz::require_user_error(spec.error(), "job_spec_from_json");
    return 0;
  }
  nlohmann::json out = job_spec_to_json(*spec);
  auto again = job_spec_from_json(out);
  fuzz::require(again.ok(), "round trip refused", again.ok() ? "" : again.error().message);
  fuzz::require(job_spec_to_json(*again) == out, "round trip changed the spec", out.dump());
  return 0;
}
