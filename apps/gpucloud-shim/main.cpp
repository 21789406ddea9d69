// gpucloud-shim: the same shim as `gpucloud shim DIR`, as a small binary that starts several
// times faster (no database, TLS, YAML or logging libraries to load). The process executor
// uses it when it is installed next to gpucloud.
#include <cstdio>
#include <cstring>

#include "exec/executor.h"

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "shim") == 0) return gpucloud::exec::run_shim(argv[2]);
  std::fprintf(stderr, "usage: gpucloud-shim shim ATTEMPT_DIR (started by the gpucloud agent)\n");
  return 2;
}
