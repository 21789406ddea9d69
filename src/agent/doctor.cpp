#include "agent/doctor.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "agent/spot_notice.h"
#include "common/clock.h"
#include "exec/container/container_runtime.h"
#include "exec/container/podman_args.h"
#include "exec/process/bpf_devices.h"
#include "exec/process/cgroup.h"
#include "gpu/gpu_backend.h"

namespace gpucloud::agent {

namespace {

using nlohmann::json;

// NVIDIA's CUDA toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions": the
// oldest Linux x86_64 driver of each CUDA version's general release. Newest first.
struct CudaDriver {
  const char* cuda;
  const char* min_driver;
};
constexpr CudaDriver kCudaDrivers[] = {
    {"12.6", "560.28.03"}, {"12.5", "555.42.02"}, {"12.4", "550.54.14"}, {"12.3", "545.23.06"},
    {"12.2", "535.54.03"}, {"12.1", "530.30.02"}, {"12.0", "525.60.13"}, {"11.8", "520.61.05"},
    {"11.7", "515.43.04"}, {"11.6", "510.39.01"}, {"11.5", "495.29.05"}, {"11.4", "470.42.01"},
    {"11.3", "465.19.01"}, {"11.2", "460.27.03"}, {"11.1", "455.23.05"}, {"11.0", "450.36.06"},
};

DoctorCheck ok(std::string name, std::string why) {
  return {std::move(name), "ok", std::move(why), ""};
}
DoctorCheck warn(std::string name, std::string why, std::string fix) {
  return {std::move(name), "warn", std::move(why), std::move(fix)};
}
DoctorCheck fail(std::string name, std::string why, std::string fix) {
  return {std::move(name), "fail", std::move(why), std::move(fix)};
}

// "11.8.0" -> "11.8".
std::string major_minor(const std::string& version) {
  size_t first = version.find('.');
  if (first == std::string::npos) return version;
  size_t second = version.find('.', first + 1);
  return second == std::string::npos ? version : version.substr(0, second);
}

struct DriverFound {
  std::string version;  // "" without a driver
};

// XID errors, uncorrectable ECC errors, pages and rows waiting for a reboot or reset, failed
// row remapping and persistence mode, each GPU's worst first; one ok line when all is well.
void check_gpu_health(gpu::GpuBackend& b, std::vector<DoctorCheck>& out) {
  if (b.kind() == "simulated") return;
  size_t before = out.size();
  if (auto readings = b.telemetry(); readings) {
    for (const auto& t : *readings)
      if (t.xid_count > 0)
        out.push_back(warn("gpu health",
                           fmt::format("GPU {} reported {} XID error(s), the last XID {}", t.index,
                                       t.xid_count, t.last_xid),
                           "look the XID up in NVIDIA's XID catalogue; drain the node "
                           "(`gpucloud node drain`) if it repeats"));
  }
  auto health = b.health();
  if (!health) {
    out.push_back(warn("gpu health", "cannot read the GPUs' health: " + health.error().message,
                       "check `nvidia-smi -q`"));
    return;
  }
  int persistence_off = 0;
  for (const auto& h : *health) {
    if (h.ecc_uncorrected_volatile > 0)
      out.push_back(fail("gpu health",
                         fmt::format("GPU {} has {} uncorrectable ECC error(s) since the driver "
                                     "loaded: its memory cannot be trusted",
                                     h.index, h.ecc_uncorrected_volatile),
                         fmt::format("drain the node, then reset the GPU (nvidia-smi -r -i {}) or "
                                     "reboot; replace it if the errors return",
                                     h.index)));
    if (h.remapped_rows_failure == 1)
      out.push_back(fail("gpu health", fmt::format("GPU {} failed to remap a memory row", h.index),
                         "the GPU needs service: drain the node and have it replaced"));
    if (h.remapped_rows_pending == 1)
      out.push_back(
          warn("gpu health", fmt::format("GPU {} has memory rows waiting to be remapped", h.index),
               fmt::format("reset the GPU (nvidia-smi -r -i {}) when it is idle", h.index)));
    if (h.retired_pages_pending == 1)
      out.push_back(warn("gpu health",
                         fmt::format("GPU {} has memory pages waiting to be retired", h.index),
                         "reboot the node when it is idle (`gpucloud node drain` first)"));
    persistence_off += h.persistence_mode == 0 ? 1 : 0;
  }
  if (persistence_off > 0)
    out.push_back(warn("gpu health",
                       fmt::format("persistence mode is off on {} GPU(s): the driver is set up "
                                   "again for every job, which slows each start",
                                   persistence_off),
                       "run nvidia-persistenced (or nvidia-smi -pm 1)"));
  if (out.size() == before)
    out.push_back(
        ok("gpu health", fmt::format("{} GPU(s): no XID, uncorrectable ECC, page retirement or row "
                                     "remapping problem reported",
                                     health->size())));
}

DriverFound check_gpus(const DoctorOptions& o, std::vector<DoctorCheck>& out) {
  std::unique_ptr<gpu::GpuBackend> loaded;
  if (!o.backend) {
    gpu::GpuBackendConfig config;
    config.kind = "nvml";
    config.nvml_library = o.nvml_library;
    auto backend = gpu::create_gpu_backend(config);
    if (!backend) {
      out.push_back(warn("gpu driver",
                         "NVML cannot be loaded (" + backend.error().message +
                             "): this node can offer simulated GPUs only",
                         "install the NVIDIA driver (" + o.min_driver + " or newer) and reboot"));
      return {};
    }
    loaded = std::move(*backend);
  }
  gpu::GpuBackend& b = o.backend ? *o.backend : *loaded;
  std::string driver = b.driver_version();
  if (b.kind() == "simulated")
    out.push_back(ok("gpu driver", "simulated GPUs: no driver is needed"));
  else if (driver.empty())
    out.push_back(fail("gpu driver", "NVML loaded but reports no driver version",
                       "check `nvidia-smi`; reinstall the NVIDIA driver"));
  else if (compare_versions(driver, o.min_driver) < 0)
    out.push_back(fail("gpu driver",
                       fmt::format("driver {} is older than {}", driver, o.min_driver),
                       "upgrade the NVIDIA driver to " + o.min_driver + " or newer"));
  else
    out.push_back(ok("gpu driver", fmt::format("driver {}, CUDA up to {}", driver,
                                               b.cuda_version().empty() ? "?" : b.cuda_version())));
  auto gpus = b.discover();
  if (!gpus || gpus->empty()) {
    out.push_back(fail("gpus", gpus ? "NVML sees no GPU" : gpus.error().message,
                       "check `nvidia-smi`; the GPUs may be held in reset or unbound"));
    return {driver};
  }
  std::map<std::string, int> models;
  std::set<int> numa;
  int nvlinks = 0, mig = 0;
  for (const auto& g : *gpus) {
    ++models[g.model];
    numa.insert(g.numa_node);
    nvlinks += static_cast<int>(g.nvlink_peers.size());
    mig += static_cast<int>(g.mig.size());
  }
  std::string what;
  for (const auto& [model, n] : models)
    what += fmt::format("{}{}x{}", what.empty() ? "" : ", ", n, model);
  out.push_back(
      ok("gpus", fmt::format("{}; {} NUMA node(s); {} NVLink peer links{}", what, numa.size(),
                             nvlinks / 2, mig ? fmt::format("; {} MIG device(s)", mig) : "")));
  check_gpu_health(b, out);
  return {driver};
}

void check_cgroups(std::vector<DoctorCheck>& out) {
  auto memory = exec::find_memory_cgroup_root();
  auto devices = exec::find_devices_cgroup_root();
  if (!memory) {
    out.push_back(warn("cgroups", "no memory controller is mounted: memory limits are not enforced",
                       "boot with cgroups enabled (systemd does by default)"));
    return;
  }
  bool v2 = memory->version == exec::CgroupVersion::kV2;
  if (v2 && !devices && exec::gpu_device_programs_allowed())
    out.push_back(ok("cgroups", "cgroup v2 at " + memory->path +
                                    ": memory limits, and BPF device programs confine process "
                                    "jobs to their GPUs' device nodes"));
  else if (v2 && !devices)
    out.push_back(warn("cgroups",
                       "cgroup v2 at " + memory->path +
                           ": memory limits are enforced, but this process may not load BPF "
                           "device programs, so process jobs' GPU device nodes are not confined",
                       "run the agent as root on a kernel with CONFIG_CGROUP_BPF, or run GPU "
                       "jobs as containers (`image:`)"));
  else
    out.push_back(ok("cgroups", fmt::format("{} memory controller at {}; devices controller {}",
                                            v2 ? "v2" : "v1", memory->path,
                                            devices ? "at " + *devices : "absent")));
}

void check_containers(std::vector<DoctorCheck>& out) {
  auto runtime = exec::detect_container_runtime();
  if (!runtime.usable())
    out.push_back(warn("containers", "container jobs cannot run here: " + runtime.reason,
                       "apt-get install podman runc"));
  else
    out.push_back(
        ok("containers", runtime.podman + " with " + runtime.runtime + " (" + runtime.reason +
                             "); init: " + (runtime.init.empty() ? "none" : runtime.init)));
}

void check_cdi(const DoctorOptions& o, std::vector<DoctorCheck>& out) {
  if (o.data_dir.empty()) return;
  std::string path = o.data_dir + "/cdi/gpucloud-nvidia.json";
  std::ifstream in(path);
  if (!in) {
    out.push_back(ok("cdi spec", path + " is not there yet (the agent writes it at start)"));
    return;
  }
  json spec = json::parse(in, nullptr, false);
  std::vector<std::string> missing;
  bool shaped = spec.is_object() && spec.value("kind", "") == "nvidia.com/gpu" &&
                spec.contains("cdiVersion") && spec.contains("devices") &&
                spec["devices"].is_array();
  if (shaped)
    for (const auto& d : spec["devices"])
      for (const auto& n :
           d.value("containerEdits", json::object()).value("deviceNodes", json::array()))
        if (n.is_object() && !std::filesystem::exists(n.value("hostPath", n.value("path", ""))))
          missing.push_back(n.value("hostPath", n.value("path", "")));
  if (!shaped)
    out.push_back(fail("cdi spec", path + " is not a CDI spec of kind nvidia.com/gpu",
                       "remove it; the agent writes it again at its next start"));
  else if (!missing.empty())
    // The driver makes its device nodes on first use (nvidia-modprobe): not a failure yet.
    out.push_back(warn("cdi spec", path + " names device nodes that do not exist: " + missing[0],
                       "run nvidia-smi once (or nvidia-ctk system create-device-nodes) so the "
                       "driver makes them, then restart the agent"));
  else
    out.push_back(ok("cdi spec", fmt::format("{}: {} device(s)", path, spec["devices"].size())));
}

void check_limits(std::vector<DoctorCheck>& out) {
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 4096)
    out.push_back(warn("open files",
                       fmt::format("the open-file limit is {}: a server holds one per connection "
                                   "and an agent a few per job",
                                   files.rlim_cur),
                       "raise it (LimitNOFILE=65536 in the service, or ulimit -n)"));
  else
    out.push_back(ok("open files", fmt::format("limit {} (hard {})", files.rlim_cur,
                                               files.rlim_max == RLIM_INFINITY
                                                   ? std::string("unlimited")
                                                   : std::to_string(files.rlim_max))));
}

void check_disk(const DoctorOptions& o, std::vector<DoctorCheck>& out) {
  if (o.data_dir.empty()) return;
  // The data dir may not exist yet: its nearest existing ancestor holds it then.
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(o.data_dir, ec);
  while (!ec && path.has_relative_path() && !std::filesystem::exists(path))
    path = path.parent_path();
  std::string dir = ec ? "" : path.string();
  struct statvfs fs {};
  if (dir.empty() || ::statvfs(dir.c_str(), &fs) != 0) {
    out.push_back(fail("disk", "cannot read the file system of " + o.data_dir,
                       "create the data dir's parent, or pass another --data-dir"));
    return;
  }
  int64_t free_mib = static_cast<int64_t>(fs.f_bavail) * fs.f_frsize / (1024 * 1024);
  std::string why = fmt::format("{} MiB free where {} lives", free_mib, o.data_dir);
  if (free_mib < o.min_free_disk_mib / 10)
    out.push_back(fail("disk", why, "free space: job logs, checkpoints and state live there"));
  else if (free_mib < o.min_free_disk_mib)
    out.push_back(warn("disk", why, "free space: job logs, checkpoints and state live there"));
  else
    out.push_back(ok("disk", why));
}

// Whether the image is on the node.
bool check_image(const DoctorOptions& o, const DriverFound& driver, std::vector<DoctorCheck>& out) {
  if (o.image.empty()) return false;
  auto runtime = exec::detect_container_runtime();
  if (runtime.podman.empty()) {
    out.push_back(fail("image", "podman is not installed: cannot read " + o.image,
                       "apt-get install podman runc"));
    return false;
  }
  auto inspected = run_bounded({runtime.podman, "image", "inspect", o.image}, {}, 30'000, 4 << 20);
  json info =
      inspected && inspected->exit_code == 0 ? json::parse(inspected->out, nullptr, false) : json();
  if (!info.is_array() || info.empty()) {
    out.push_back(fail("image", o.image + " is not on this node",
                       "pull it first (podman pull " + o.image + ") or check its name"));
    return false;
  }
  // nvidia/cuda images set CUDA_VERSION in their environment and a com.nvidia.cuda.version label.
  std::string cuda;
  json config = info[0].value("Config", json::object());
  for (const auto& e : config.value("Env", json::array()))
    if (e.is_string() && e.get<std::string>().rfind("CUDA_VERSION=", 0) == 0)
      cuda = e.get<std::string>().substr(13);
  json labels = config.value("Labels", json::object());
  if (cuda.empty() && labels.is_object() && labels.contains("com.nvidia.cuda.version") &&
      labels["com.nvidia.cuda.version"].is_string())
    cuda = labels["com.nvidia.cuda.version"];
  if (cuda.empty()) {
    out.push_back(ok("image", o.image + " declares no CUDA version (CUDA_VERSION or the label "
                                        "com.nvidia.cuda.version): nothing to check"));
    return true;
  }
  auto needed = min_driver_for_cuda(major_minor(cuda));
  if (!needed) {
    out.push_back(warn(
        "image", fmt::format("{} is built for CUDA {}, which is not in the table", o.image, cuda),
        "check NVIDIA's CUDA/driver table for the driver it needs"));
  } else if (driver.version.empty()) {
    out.push_back(warn("image",
                       fmt::format("{} needs CUDA {} (driver {}+); this node has no driver",
                                   o.image, cuda, *needed),
                       "run it on a node with the NVIDIA driver " + *needed + " or newer"));
  } else if (compare_versions(driver.version, *needed) < 0) {
    out.push_back(fail("image",
                       fmt::format("{} needs CUDA {}, which needs driver {}+; this node has {}",
                                   o.image, cuda, *needed, driver.version),
                       "upgrade the driver, or use an image built for an older CUDA"));
  } else {
    out.push_back(ok("image", fmt::format("{} needs CUDA {} (driver {}+): driver {} runs it",
                                          o.image, cuda, *needed, driver.version)));
  }
  return true;
}

// Starts a throw-away container of the image (`true` as its entrypoint, no network) with the
// runtime the agent would use: podman, the runtime and the image work together on this node.
void check_container_start(const DoctorOptions& o, std::vector<DoctorCheck>& out) {
  auto runtime = exec::detect_container_runtime();
  if (!runtime.usable()) return;  // the containers check says why
  int64_t started = monotonic_ms();
  std::vector<std::string> argv = {runtime.podman, "run",  "--rm",   "--runtime", runtime.runtime,
                                   "--network",    "none", "--pull", "never"};
  for (auto& arg : exec::podman_ulimit_args()) argv.push_back(std::move(arg));
  argv.insert(argv.end(), {"--entrypoint", "true", o.image});
  auto run = run_bounded(argv, {}, 60'000, 64 * 1024);
  int64_t took = monotonic_ms() - started;
  if (run && run->exit_code == 0)
    out.push_back(ok("container start",
                     fmt::format("started and ended a container of {} in {} ms", o.image, took)));
  else if (run && run->exit_code == 127)
    out.push_back(warn("container start",
                       o.image + " has no `true` program, so the doctor could not start it",
                       "check with an image that has one"));
  else
    out.push_back(
        fail("container start",
             fmt::format("podman run of {} with {} {}", o.image, runtime.runtime,
                         !run             ? "could not be started: " + run.error().message
                         : run->timed_out ? std::string("did not end within 60 s")
                                          : fmt::format("exited with code {}", run->exit_code)),
             "run the same podman command by hand to see its error"));
}

}  // namespace

std::optional<std::string> min_driver_for_cuda(const std::string& cuda_version) {
  for (const auto& row : kCudaDrivers)
    if (cuda_version == row.cuda) return std::string(row.min_driver);
  return std::nullopt;
}

int compare_versions(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string p, q;
  for (;;) {
    bool more_a = static_cast<bool>(std::getline(x, p, '.'));
    bool more_b = static_cast<bool>(std::getline(y, q, '.'));
    if (!more_a && !more_b) return 0;
    long long u = more_a ? std::atoll(p.c_str()) : 0, v = more_b ? std::atoll(q.c_str()) : 0;
    if (u != v) return u < v ? -1 : 1;
  }
}

std::vector<DoctorCheck> run_doctor(const DoctorOptions& options) {
  std::vector<DoctorCheck> out;
  DriverFound driver = check_gpus(options, out);
  check_cgroups(out);
  check_containers(out);
  check_cdi(options, out);
  check_limits(out);
  check_disk(options, out);
  if (check_image(options, driver, out)) check_container_start(options, out);
  return out;
}

}  // namespace gpucloud::agent
