#include "agent/driver_files.h"

#include <sys/stat.h>

#include <filesystem>

namespace gpucloud::agent {
namespace {

// The compute and utility libraries of NVIDIA's container toolkit (its "compute" and "utility"
// capabilities), which CUDA images expect the runtime to provide.
const char* const kLibraries[] = {"libcuda",
                                  "libcudadebugger",
                                  "libnvidia-ml",
                                  "libnvidia-ptxjitcompiler",
                                  "libnvidia-nvvm",
                                  "libnvidia-opencl",
                                  "libnvidia-cfg",
                                  "libnvidia-allocator",
                                  "libnvidia-gpucomp",
                                  "libnvidia-pkcs11",
                                  "libnvidia-pkcs11-openssl3"};
const char* const kTools[] = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                              "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

std::vector<std::string> find_driver_files(const std::string& driver_version,
                                           const DriverSearch& search) {
  std::vector<std::string> out;
  if (driver_version.empty()) return out;
  for (const char* name : kLibraries) {
    for (const auto& dir : search.lib_dirs) {
      std::string file = dir + "/" + name + ".so." + driver_version;
      if (!exists(file)) continue;
      out.push_back(file);
      // The soname link, when it leads to this version (not to a stale driver's).
      std::string soname = dir + "/" + name + ".so.1";
      std::error_code a, b;
      if (exists(soname) &&
          std::filesystem::canonical(soname, a) == std::filesystem::canonical(file, b) && !a && !b)
        out.push_back(soname);
      break;
    }
  }
  for (const char* name : kTools)
    for (const auto& dir : search.bin_dirs)
      if (exists(dir + "/" + name)) {
        out.push_back(dir + "/" + name);
        break;
      }
  return out;
}

}  // namespace gpucloud::agent
