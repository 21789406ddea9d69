// gpucloud: control plane, node agent and command-line client in one binary.
#include <cstring>

#include "cli/cli.h"
#include "exec/executor.h"

int main(int argc, char** argv) {
  // The shim runs before anything else starts (no threads, no logger): it becomes the job's parent.
  if (argc == 3 && std::strcmp(argv[1], "shim") == 0) return gpucloud::exec::run_shim(argv[2]);
  return gpucloud::cli::run_cli(argc, argv);
}
