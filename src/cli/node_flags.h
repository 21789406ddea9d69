// The node health and GPU sharing flags shared by `gpucloud agent` and `gpucloud dev`
// (docs/doctor.md, docs/containers.md "Fractional GPUs", docs/security.md "GPU devices"): --mps,
// --mps-control, --min-driver, --min-free-disk and --device-isolation.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "agent/agent.h"
#include "common/result.h"

namespace gpucloud::cli {

/// The flags as given.
struct NodeFlags {
  bool mps = false;
  std::string mps_control = "nvidia-cuda-mps-control";
  std::string min_driver = "470.57.02";
  std::string min_free_disk = "1GiB";
  std::string device_isolation = "auto";  // auto | cgroup-v1 | bpf
};

/// Adds the flags to a command.
void add_node_flags(CLI::App* command, NodeFlags& flags);

/// Validates the flags and sets them in an agent's config. The error starts with the flag it
/// is about.
Status apply_node_flags(const NodeFlags& flags, agent::AgentConfig& config);

}  // namespace gpucloud::cli
