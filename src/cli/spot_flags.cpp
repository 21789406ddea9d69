#include "cli/spot_flags.h"

#include <fmt/format.h>

#include <cmath>

#include "common/units.h"
#include "model/spot_price.h"

namespace gpucloud::cli {

namespace {

// A whole decimal number, or nullopt-like failure (std::stod accepts "nan", "inf", "1x").
bool parse_number(const std::string& text, double& out) {
  size_t used = 0;
  try {
    out = std::stod(text, &used);
  } catch (...) {
    return false;
  }
  return used == text.size() && std::isfinite(out);
}

// The dev list "a,b,c": one per node; a single value applies to every node.
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

void add_spot_flags(CLI::App* command, SpotFlags& flags, bool dev) {
  command->add_option("--spot-notice-command", flags.spot_notice_command,
                      "a command (split into words, no shell) run every --spot-notice-interval; "
                      "exit 0 with a JSON notice such as {\"in_seconds\": 120} means the provider "
                      "takes the node (docs/interruptions.md)");
  command
      ->add_option("--spot-notice-interval", flags.spot_notice_interval,
                   "how often --spot-notice-command runs")
      ->capture_default_str();
  command
      ->add_option("--sim-spot-interrupt-rate", flags.sim_spot_interrupt_rate,
                   "simulated spot notices per hour on nodes labelled capacity-class=spot "
                   "(Poisson; 0: none)")
      ->capture_default_str();
  command
      ->add_option("--sim-spot-notice", flags.sim_spot_notice,
                   "warning a simulated spot notice gives")
      ->capture_default_str();
  command->add_option("--sim-seed", flags.sim_seed,
                      "seed of the simulated spot notices (default: from the node's name)");
  command->add_option("--price-per-hour", flags.price_per_hour,
                      dev ? "USD per hour of each node, e.g. 24.48 or 24.48,8 (dev-0, dev-1, ...; "
                            "the last applies to the rest); shown in gpucloud nodes and compared "
                            "with jobs' max_price per GPU"
                          : "USD per hour of the whole node; shown in gpucloud nodes and compared, "
                            "per GPU, with jobs' max_price");
}

Status apply_spot_flags(const SpotFlags& flags, int index, int nodes, agent::AgentConfig& config) {
  if (!flags.spot_notice_command.empty()) {
    auto argv = agent::split_command_words(flags.spot_notice_command);
    if (!argv) return invalid("--spot-notice-command: " + argv.error().message);
    config.spot_notice_command = *argv;
  }
  auto interval = parse_duration_ms(flags.spot_notice_interval);
  if (!interval || *interval < 100 || *interval > 3'600'000)
    return invalid(fmt::format("--spot-notice-interval '{}' must be a duration from 100ms to 1h",
                               flags.spot_notice_interval.substr(0, 64)));
  config.spot_notice_interval_ms = *interval;
  double rate = 0;
  if (!parse_number(flags.sim_spot_interrupt_rate, rate) || rate < 0 ||
      rate > agent::kMaxSimSpotRatePerHour)
    return invalid(fmt::format(
        "--sim-spot-interrupt-rate '{}' must be a number of notices per hour from 0 to {:g}",
        flags.sim_spot_interrupt_rate.substr(0, 64), agent::kMaxSimSpotRatePerHour));
  config.sim_spot_interrupt_rate = rate;
  auto notice = parse_duration_ms(flags.sim_spot_notice);
  if (!notice || *notice > agent::kMaxSpotNoticeAheadMs)
    return invalid(fmt::format("--sim-spot-notice '{}' must be a duration from 0s to 1h",
                               flags.sim_spot_notice.substr(0, 64)));
  config.sim_spot_notice_ms = *notice;
  if (rate > 0 && !config.spot_notice_command.empty())
    return invalid(
        "--sim-spot-interrupt-rate: give it or --spot-notice-command, not both (a node has one "
        "source of spot notices)");
  config.sim_seed = flags.sim_seed;
  if (!flags.price_per_hour.empty()) {
    auto prices = split_commas(flags.price_per_hour);
    if (prices.size() > static_cast<size_t>(std::max(nodes, 1)))
      return invalid(
          fmt::format("--price-per-hour: {} prices for {} node(s)", prices.size(), nodes));
    const std::string& text = prices[std::min<size_t>(index, prices.size() - 1)];
    double price = 0;
    if (!parse_number(text, price) || !valid_node_price_per_hour(price))
      return invalid(fmt::format(
          "--price-per-hour '{}' must be USD per hour of the whole node, from 0 to {:g}",
          text.substr(0, 64), kMaxNodePricePerHour));
    config.price_per_hour = price;
  }
  return {};
}

}  // namespace gpucloud::cli
