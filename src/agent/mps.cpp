#include "agent/mps.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "agent/spot_notice.h"

namespace gpucloud::agent {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kStartTimeoutMs = 30'000;

// Creates dir (and its parents) with this mode: job users must reach the pipes of the daemon.
Status make_dir(const std::string& dir, mode_t mode) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return internal(fmt::format("cannot create {}: {}", dir, ec.message()));
  if (::chmod(dir.c_str(), mode) != 0)
    return internal(fmt::format("cannot set the mode of {}", dir));
  return {};
}

}  // namespace

Result<std::map<int, MpsGpu>> start_mps_daemons(const std::string& control, const std::string& root,
                                                const std::vector<Gpu>& gpus) {
  std::map<int, MpsGpu> out;
  if (Status st = make_dir(root, 0755); !st.ok()) return st.error();
  for (const auto& g : gpus) {
    if (g.mig_parent >= 0) continue;
    MpsGpu mps{fmt::format("{}/{}/pipe", root, g.index), fmt::format("{}/{}/log", root, g.index)};
    if (Status st = make_dir(mps.pipe_dir, 0755); !st.ok()) return st.error();
    if (Status st = make_dir(mps.log_dir, 0755); !st.ok()) return st.error();
    // The daemon it forks must not hold our output pipe open: its output goes to /dev/null.
    auto run = run_bounded({"/bin/sh", "-c", "exec \"$0\" -d >/dev/null 2>&1", control},
                           {{"CUDA_VISIBLE_DEVICES", g.uuid},
                            {"CUDA_MPS_PIPE_DIRECTORY", mps.pipe_dir},
                            {"CUDA_MPS_LOG_DIRECTORY", mps.log_dir}},
                           kStartTimeoutMs, 64 * 1024);
    if (!run)
      return Error{run.error().code, fmt::format("MPS on GPU {}: cannot run {}: {}", g.index,
                                                 control, run.error().message)};
    // A daemon of an earlier agent still serves the pipe: `-d` refuses to start a second one.
    std::error_code ec;
    bool running = fs::exists(mps.pipe_dir + "/control", ec);
    if (run->exit_code != 0 && !running)
      return internal(fmt::format("MPS on GPU {}: `{} -d` {} (its log is in {})", g.index, control,
                                  run->timed_out ? "did not return within 30 s"
                                  : run->exit_code == 127
                                      ? "failed: the program was not found"
                                      : fmt::format("exited with code {}", run->exit_code),
                                  mps.log_dir));
    out[g.index] = std::move(mps);
  }
  return out;
}

std::map<std::string, std::string> mps_client_env(const MpsGpu& gpu, int milli,
                                                  int64_t gpu_memory_mib) {
  std::map<std::string, std::string> env;
  env["CUDA_MPS_PIPE_DIRECTORY"] = gpu.pipe_dir;
  env["CUDA_MPS_LOG_DIRECTORY"] = gpu.log_dir;
  int percent = std::clamp((std::clamp(milli, 1, 1000) + 9) / 10, 1, 100);
  env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(percent);
  if (gpu_memory_mib > 0)
    env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = fmt::format("0={}M", gpu_memory_mib);
  return env;
}

}  // namespace gpucloud::agent
