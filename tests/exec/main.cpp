// exec_tests doubles as the shim (`exec_tests shim DIR`) and as a memory hog job
// (`exec_tests hog MIB [hold]`); anything else runs the tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "exec/executor.h"

namespace {

// Allocates and touches `mib` MiB; with "hold", prints "ready" and waits to be killed.
int hog(int mib, bool hold) {
  std::vector<char*> blocks;
  for (int i = 0; i < mib; ++i) {
    char* block = static_cast<char*>(std::malloc(1 << 20));
    if (block == nullptr) return 2;
    std::memset(block, 1, 1 << 20);
    blocks.push_back(block);
  }
  if (!hold) return 0;
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "shim") return gpucloud::exec::run_shim(argv[2]);
  if (argc >= 3 && std::string(argv[1]) == "hog") {
    return hog(std::atoi(argv[2]), argc >= 4 && std::string(argv[3]) == "hold");
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
