// The progress line of `gpucloud sim replay` on stderr: the replay calls back after every
// event; this printer reads the steady clock and prints about once a second of wall time.
#pragma once

#include <functional>

#include "sim/replay.h"

namespace gpucloud::cli {

/// A progress callback for sim::ReplayOptions::progress that writes to stderr at most once a
/// second, and a last line when the replay ends if it printed any before or `always_last`. On a
/// terminal the line is rewritten in place; otherwise each report is its own line.
std::function<void(const sim::ReplayProgress&)> make_replay_progress_printer(bool terminal,
                                                                             bool always_last);

}  // namespace gpucloud::cli
