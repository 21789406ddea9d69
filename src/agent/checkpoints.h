// The files of the interruption protocol on a node (docs/interruptions.md): each job's
// persistent checkpoint directory, which outlives its attempts, and the interrupt file the
// agent writes before it sends SIGTERM.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "model/interruption.h"

namespace gpucloud::agent {

/// The interrupt file's name in the attempt dir ($GPUCLOUD_INTERRUPT points at it).
inline constexpr const char* kInterruptFile = "interrupt.json";

/// `<root>/<job_id>`, made when missing: root 0711 (owned by the agent), the job's directory
/// 0700 owned by uid:gid (the agent's user when uid < 0). Refuses job ids that are not a plain
/// file name. Nothing is followed: an existing entry that is not a directory is an error.
Result<std::string> ensure_checkpoint_dir(const std::string& root, const std::string& job_id,
                                          int64_t uid, int64_t gid);

/// What a job's checkpoint directory holds.
struct CheckpointState {
  TimeMs committed_at = 0;  // the marker's mtime (epoch ms); 0: no checkpoint committed
  int64_t bytes = 0;        // regular files in it, all levels (links are not followed)
};

/// Reads the directory (missing: nothing committed). Walks at most 100,000 entries.
CheckpointState read_checkpoint(const std::string& dir);

/// When the file system holding `dir` is full (less than 64 KiB or 0.1 % of it free to
/// unprivileged users), a sentence saying so for a job's end message, e.g. "its checkpoint
/// directory's file system is full (12 KiB free of 1 MiB)..."; nullopt otherwise or when it
/// cannot be read.
std::optional<std::string> checkpoint_space_problem(const std::string& dir);

/// Writes the notice as JSON to `path` atomically: owner the agent's user, group gid (the
/// agent's group when gid < 0), mode 0640, so the job may read it and no other job can.
Status write_interrupt_file(const std::string& path, const InterruptNotice& notice, int64_t gid);

}  // namespace gpucloud::agent
