// `gpucloud submit job.yaml`: YAML within limits (size, nesting, alias expansion), converted to
// JSON, then the job spec reader.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_check.h"
#include "model/job_spec.h"
#include "model/yaml_json.h"

using namespace gpucloud;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto doc = yaml_to_json(text, "job.yaml");
  if (!doc) {
    fuzz::require_user_error(doc.error(), "yaml_to_json");
    return 0;
  }
  if (!doc->is_object()) return 0;
  auto spec = job_spec_from_json(*doc);
  if (!spec) fuzz::require_user_error(spec.error(), "job_spec_from_json");
  return 0;
}
