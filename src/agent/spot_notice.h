// Spot notices seen by the agent (docs/interruptions.md, "Spot notices"): a provider's warning
// that it takes the node. Two sources: an operator's --spot-notice-command (a cloud's metadata
// endpoint behind a small script) and, on simulated nodes labelled capacity-class=spot,
// Poisson-drawn notices (--sim-spot-interrupt-rate). The agent sends what either sees to the
// server in its poll, which acts on it as on `gpucloud node interrupt`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpucloud::agent {

/// The largest output of a spot-notice command that is read; more is a bad answer.
inline constexpr size_t kMaxSpotNoticeOutput = 64 * 1024;
/// The longest notice accepted: a deadline further ahead is refused as a bad answer.
inline constexpr int64_t kMaxSpotNoticeAheadMs = 3'600'000;

/// Reads a spot-notice command's stdout: one JSON object with `in_seconds` (0..3600, a
/// number), `deadline` (epoch seconds) or `deadline_ms` (epoch ms), and an optional `reason`
/// (a string, at most 256 bytes). Other fields are ignored. A deadline in the past means now.
/// Errors say what was wrong with the text, never throw.
Result<SpotNotice> parse_spot_notice_output(std::string_view output, TimeMs now);

/// Splits a command line into words as a shell would, without running one: blanks separate
/// words, 'single quotes' keep everything, "double quotes" keep everything but \" and \\, a
/// backslash outside quotes keeps the next character. No variables, globs or operators: to use
/// them, write `sh -c '...'`. Fails on an unterminated quote, an empty line, or more than 4 KiB.
Result<std::vector<std::string>> split_command_words(std::string_view line);

/// What a bounded run of a command gave.
struct BoundedRun {
  int exit_code = -1;  // -1 when it was killed (timeout, too much output) or did not start
  std::string out;     // stdout, at most the cap
  bool timed_out = false;
  bool output_too_long = false;
};

/// Runs argv (execvp, no shell) with extra environment variables, stdin /dev/null, stderr
/// inherited, in its own process group; kills the group after timeout_ms or once stdout passes
/// max_output bytes. Fails only when the command cannot be started.
Result<BoundedRun> run_bounded(const std::vector<std::string>& argv,
                               const std::vector<std::pair<std::string, std::string>>& env,
                               int64_t timeout_ms, size_t max_output);

/// Where an agent's spot notices come from.
class SpotNoticeSource {
 public:
  virtual ~SpotNoticeSource() = default;
  /// Looks once: the notice, or nullopt when there is none. Problems (a command that cannot
  /// start, bad output) are logged as warnings and count as no notice.
  virtual std::optional<SpotNotice> check(TimeMs now) = 0;
  /// How long to wait between looks.
  virtual int64_t interval_ms() const = 0;
};

/// Runs `argv` every interval_ms (with a timeout of the interval, at least 1 s, at most 30 s):
/// exit 0 with a notice on stdout is a notice; another exit status is none. The command sees
/// GPUCLOUD_NODE_NAME=node_name.
std::unique_ptr<SpotNoticeSource> command_spot_notices(std::vector<std::string> argv,
                                                       int64_t interval_ms, std::string node_name);

/// Notices drawn as a Poisson process of rate_per_hour (exponential gaps from a generator
/// seeded with `seed`), each giving notice_ms of warning; looked at every second.
std::unique_ptr<SpotNoticeSource> simulated_spot_notices(double rate_per_hour, int64_t notice_ms,
                                                         uint64_t seed);

/// The largest simulated rate accepted (per hour): one notice a second on average.
inline constexpr double kMaxSimSpotRatePerHour = 3600;

/// A seed from a node's name (FNV-1a), for --sim-spot-interrupt-rate without --sim-seed.
uint64_t seed_from_name(std::string_view name);

}  // namespace gpucloud::agent
