// The spot and price flags shared by `gpucloud agent` and `gpucloud dev`
// (docs/interruptions.md, "Spot notices"; docs/jobspec.md, "max_price"):
// --spot-notice-command, --spot-notice-interval, --sim-spot-interrupt-rate, --sim-spot-notice,
// --sim-seed and --price-per-hour.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "common/result.h"

namespace gpucloud::cli {

/// The flags as given.
struct SpotFlags {
  std::string spot_notice_command;  // split into argv like a shell would, never run by one
  std::string spot_notice_interval = "5s";
  std::string sim_spot_interrupt_rate = "0";  // per hour
  std::string sim_spot_notice = "120s";
  uint64_t sim_seed = 0;       // 0: from the node's name
  std::string price_per_hour;  // USD for the whole node; "" = unknown. dev: one per node, a,b,..
};

/// Adds the flags to a command; `dev` describes --price-per-hour as a per-node list.
void add_spot_flags(CLI::App* command, SpotFlags& flags, bool dev);

/// Validates the flags and sets them in an agent's config (node `index` of `nodes` for a dev
/// cluster's price list). The error starts with the flag it is about.
Status apply_spot_flags(const SpotFlags& flags, int index, int nodes, agent::AgentConfig& config);

}  // namespace gpucloud::cli
