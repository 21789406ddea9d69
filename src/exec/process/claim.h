// The claim of an attempt directory, DIR/claim: who may run the attempt's command. It is
// created at most once, atomically (link(2) of a complete file, which fails when the name
// exists), so of the shim about to run the command and an agent recovering an unfinished start
// exactly one wins:
//   "shim <pid> <start ticks>"  the shim claimed it and runs the command (at most once)
//   "abandoned"                 an agent claimed it first: the command never ran and never will
// Not fsync'ed: the claim must outlive the processes racing for it, not the machine. After a
// machine crash a missing claim proves nothing (the caller knows when the machine restarted),
// and nothing of the attempt runs any more anyway.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace gpucloud::exec {

inline constexpr const char* kClaimFile = "claim";

/// The content of DIR/claim.
struct Claim {
  bool abandoned = false;         // true: claimed by an agent, the command was never run
  int shim_pid = 0;               // else: the shim that runs the command...
  uint64_t shim_start_ticks = 0;  // ...named by pid and start time, as ProcessRef does
};

/// Creates DIR/claim holding `claim` unless a claim exists. Returns true when this call
/// created it, false when one existed already (read it with read_claim).
Result<bool> try_claim(const std::string& attempt_dir, const Claim& claim);

/// Reads DIR/claim: kNotFound when nobody has claimed the attempt yet, kInvalidArgument when
/// the file holds something else.
Result<Claim> read_claim(const std::string& attempt_dir);

/// Serialises a claim as its one line of text; claim_from_text parses it.
std::string claim_to_text(const Claim& claim);
Result<Claim> claim_from_text(const std::string& text);

}  // namespace gpucloud::exec
