// Interruptions (docs/interruptions.md): one protocol for every cause that stops a running
// attempt before it ends by itself. The server tells the agent the cause and the deadline; the
// agent writes them to the job's $GPUCLOUD_INTERRUPT file, sends SIGTERM, and SIGKILL at the
// deadline; the job's exit reports whether it committed a checkpoint in time.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/clock.h"
#include "common/result.h"

namespace gpucloud {

/// Causes, as written in the interrupt file and in attempt records.
namespace interrupt_cause {
inline constexpr const char* kPreemption = "preemption";  // a higher priority or quota reclaim
inline constexpr const char* kDrain = "drain";            // node drained or in maintenance
inline constexpr const char* kSpot = "spot";              // the provider takes the spot node
inline constexpr const char* kIdle = "idle";              // idle GPUs handed back
inline constexpr const char* kAgentShutdown = "agent-shutdown";  // the agent was stopped
inline constexpr const char* kMaxRuntime = "max-runtime";        // the attempt ran out of time
inline constexpr const char* kCancel = "cancel";                 // the user cancelled the job
inline constexpr const char* kFenced = "fenced";                 // the agent lost the server
inline constexpr const char* kBudget = "budget";  // the tenant's budget is spent (stop_running)
}  // namespace interrupt_cause

/// Why and until when a running replica is interrupted.
struct InterruptNotice {
  std::string cause;       // one of interrupt_cause
  TimeMs deadline_ms = 0;  // epoch ms: SIGKILL then
  std::string message;     // for people, e.g. "preempted for job 0193… (priority 1000)"
};

/// {"cause", "deadline" (epoch seconds), "deadline_ms", "message"}: the file's format too.
nlohmann::json interrupt_notice_to_json(const InterruptNotice& n);
/// Bounded: cause ≤ 32 characters, message ≤ 1,024, deadline within 0..year 9999.
Result<InterruptNotice> interrupt_notice_from_json(const nlohmann::json& j);

/// The checkpoint marker a job writes into $GPUCLOUD_CHECKPOINT_DIR once a checkpoint is
/// complete (its mtime is the commit time); `gpucloud checkpoint commit` writes it atomically.
inline constexpr const char* kCheckpointMarker = "COMMITTED";

}  // namespace gpucloud
