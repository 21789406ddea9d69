// `gpucloud doctor`: checks that a machine can run gpucloud's jobs, each with a verdict (ok,
// warn, fail), one line of why and the fix (docs/doctor.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpucloud::gpu {
class GpuBackend;
}

namespace gpucloud::agent {

/// One check's verdict.
struct DoctorCheck {
  std::string name;    // e.g. "gpu driver", "cgroups"
  std::string status;  // "ok", "warn" or "fail"
  std::string why;     // one line: what was found
  std::string fix;     // what to do ("" when ok)
};

/// What to check.
struct DoctorOptions {
  std::string data_dir;                            // the agent's data dir ("" = skip disk, CDI)
  std::string nvml_library = "libnvidia-ml.so.1";  // tests point this at a fake
  std::string min_driver = "470.57.02";            // the oldest driver accepted
  std::string image;                               // also check this image's CUDA version
  int64_t min_free_disk_mib = 1024;                // warn below, fail below a tenth of it
  // The agent's own GPU backend (the doctor it runs at start); null: load NVML from
  // nvml_library. A simulated backend passes the GPU checks with what it simulates.
  gpu::GpuBackend* backend = nullptr;
};

/// The oldest Linux driver that runs a CUDA version ("12.2" -> "535.54.03"), from NVIDIA's
/// CUDA toolkit/driver compatibility table (held as data); nullopt for a version not in it.
std::optional<std::string> min_driver_for_cuda(const std::string& cuda_version);

/// Compares dotted version numbers ("535.54.03" < "550.54.14"): <0, 0 or >0.
int compare_versions(const std::string& a, const std::string& b);

/// Runs every check, in order: GPU driver and GPUs, cgroups, container runtime, CDI spec,
/// open-file and process limits, disk space of the data dir, and the image when given.
/// Never throws; a check that cannot look says so in its verdict.
std::vector<DoctorCheck> run_doctor(const DoctorOptions& options);

}  // namespace gpucloud::agent
