// `gpucloud server --catalog x.csv`: the instance price catalog within its limits; an accepted
// catalog finds each of its offers again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cost/instance_catalog.h"
#include "fuzz_check.h"

using namespace gpucloud;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto catalog = cost::InstanceCatalog::parse(
      std::string(reinterpret_cast<const char*>(data), size), "prices.csv");
  if (!catalog) {
    fuzz::require_user_error(catalog.error(), "InstanceCatalog::parse");
    return 0;
  }
  fuzz::require(catalog->find("", "", "") == nullptr, "no offer has an empty key");
  return 0;
}
