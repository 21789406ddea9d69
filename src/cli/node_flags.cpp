#include "cli/node_flags.h"

#include <fmt/format.h>

#include "common/units.h"

namespace gpucloud::cli {

void add_node_flags(CLI::App* command, NodeFlags& flags) {
  command->add_flag("--mps", flags.mps,
                    "run a CUDA MPS control daemon per GPU so GPU shares get their gpu_milli and "
                    "gpu_memory enforced (docs/containers.md, \"Fractional GPUs\")");
  command
      ->add_option("--mps-control", flags.mps_control,
                   "the MPS control program (--mps); a name is looked up in PATH")
      ->capture_default_str();
  command
      ->add_option("--min-driver", flags.min_driver,
                   "the oldest NVIDIA driver the node's doctor accepts; older fails it and the "
                   "node gets no jobs (docs/doctor.md)")
      ->capture_default_str();
  command
      ->add_option("--min-free-disk", flags.min_free_disk,
                   "free space of the data dir below which the doctor warns; below a tenth of it "
                   "the doctor fails and the node gets no jobs")
      ->capture_default_str();
  command
      ->add_option("--device-isolation", flags.device_isolation,
                   "how process jobs are confined to their GPU device nodes: auto (the cgroup v1 "
                   "devices controller, else a BPF program on cgroup v2), cgroup-v1 or bpf")
      ->capture_default_str();
}

Status apply_node_flags(const NodeFlags& flags, agent::AgentConfig& config) {
  if (flags.mps_control.empty() || flags.mps_control.size() > 4096)
    return invalid("--mps-control must name a program (1..4096 characters)");
  const std::string& v = flags.min_driver;
  bool dotted = !v.empty() && v.size() <= 32 && v.front() != '.' && v.back() != '.' &&
                v.find_first_not_of("0123456789.") == std::string::npos &&
                v.find("..") == std::string::npos;
  if (!dotted)
    return invalid(fmt::format("--min-driver '{}' must be a driver version such as 470.57.02",
                               v.substr(0, 64)));
  auto disk = parse_size_mib(flags.min_free_disk);
  if (!disk || *disk < 0 || *disk > (int64_t{1} << 40))
    return invalid(fmt::format("--min-free-disk '{}' must be a size such as 1GiB or 500MiB",
                               flags.min_free_disk.substr(0, 64)));
  if (flags.device_isolation != "auto" && flags.device_isolation != "cgroup-v1" &&
      flags.device_isolation != "bpf")
    return invalid(fmt::format("--device-isolation '{}' must be auto, cgroup-v1 or bpf",
                               flags.device_isolation.substr(0, 64)));
  config.executor.device_isolation = flags.device_isolation;
  config.mps = flags.mps;
  config.mps_control = flags.mps_control;
  config.doctor_min_driver = flags.min_driver;
  config.doctor_min_free_disk_mib = *disk;
  return {};
}

}  // namespace gpucloud::cli
