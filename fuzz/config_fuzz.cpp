// The server's config file (tenants, tokens, priority classes), read from a file as the server
// does: YAML within limits, then the config reader.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz_check.h"
#include "server/config.h"

using namespace gpucloud;

namespace {

/// One private temporary file per process, rewritten for each input.
const std::string& config_path() {
  static const std::string path = [] {
    char name[] = "/tmp/gpucloud-fuzz-config-XXXXXX";
    int fd = mkstemp(name);
    fuzz::require(fd >= 0, "mkstemp");
    close(fd);
    return std::string(name);
  }();
  return path;
}

struct RemoveAtExit {
  ~RemoveAtExit() { std::remove(config_path().c_str()); }
} remove_at_exit;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = config_path();
  FILE* f = std::fopen(path.c_str(), "wb");
  fuzz::require(f != nullptr, "open the temporary config file");
  if (size > 0) fuzz::require(std::fwrite(data, 1, size, f) == size, "write the config file");
  std::fclose(f);
  auto config = server::load_server_config(path);
  if (!config) fuzz::require_user_error(config.error(), "load_server_config");
  return 0;
}
