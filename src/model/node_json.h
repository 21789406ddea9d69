// JSON mapping of GPUs and nodes (agent registration, /v1/nodes, the store).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "model/gpu.h"

namespace gpucloud {

nlohmann::json gpu_to_json(const Gpu& gpu);
nlohmann::json node_info_to_json(const NodeInfo& node);
/// The doctor's verdicts as [{"check", "status", "why", "fix"}, ...] (docs/doctor.md).
nlohmann::json node_checks_to_json(const std::vector<NodeCheck>& checks);

/// The most doctor verdicts a node description may carry (the agent sends one fewer: the server
/// adds its clock check), and the longest name and why/fix text of one.
inline constexpr size_t kMaxNodeChecks = 64;
inline constexpr size_t kMaxCheckName = 64;
inline constexpr size_t kMaxCheckText = 1024;

/// Fits verdicts within those limits: failures, then warnings, then the rest are kept (each in
/// its order) up to max_checks; longer texts are cut.
void clip_node_checks(std::vector<NodeCheck>& checks, size_t max_checks);
/// Reads and validates a node description sent by an agent (bounded sizes, unique GPU indices).
Result<NodeInfo> node_info_from_json(const nlohmann::json& j);
/// Checks an agent's metrics address: "HOST:PORT" or ":PORT", port 1..65535, a host without
/// spaces, quotes, slashes or braces (it is a Prometheus target).
Status check_metrics_address(const std::string& address);

}  // namespace gpucloud
