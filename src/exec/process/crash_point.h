// Fault injection for crash tests of the start path: the agent and the shim call crash_point()
// at named points, and the process kills itself with SIGKILL at the point named in the
// environment variable GPUCLOUD_CRASH_AT (a comma-separated list of names). With
// GPUCLOUD_CRASH_ONCE=<file> as well, only the first process to reach a named point dies: it
// creates <file> (with O_EXCL) just before, which also tells a test that the crash happened.
// Unset, a crash point costs one branch (the environment is read once per process).
//
// The points, in the order a start passes them:
//   agent.before_start     the replica is in the agent's state file; nothing is spawned
//   exec.before_shim       launch.json is written; the shim is not spawned yet
//   exec.shim_spawned      the shim is spawned; its pid is not saved anywhere yet
//   shim.before_claim      in the shim, before it claims the attempt
//   shim.claimed           in the shim, after the claim, before the command is started
//   agent.started          the command runs; the agent has not saved the shim's pid
//   agent.start_saved      the shim's pid is saved; the `started` event is not sent yet
#pragma once

namespace gpucloud::exec {

/// Kills this process with SIGKILL when `name` is one of the points in GPUCLOUD_CRASH_AT.
void crash_point(const char* name);

}  // namespace gpucloud::exec
