// `gpucloud checkpoint commit`: run inside a job once its checkpoint files are complete; marks
// them as the checkpoint to resume from (docs/interruptions.md, "Checkpoints").
#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/clock.h"
#include "exec/process/files.h"
#include "model/interruption.h"

namespace gpucloud::cli {

int cmd_checkpoint_commit(const std::string& dir_flag) {
  std::string dir = dir_flag;
  if (dir.empty()) {
    const char* env = std::getenv("GPUCLOUD_CHECKPOINT_DIR");
    if (env == nullptr || *env == '\0') {
      std::fprintf(stderr,
                   "error: GPUCLOUD_CHECKPOINT_DIR is not set: run this inside a gpucloud job, "
                   "or give --dir\n");
      return kExitUsage;
    }
    dir = env;
  }
  const char* attempt = std::getenv("GPUCLOUD_ATTEMPT");
  nlohmann::json marker = {{"at", format_time_iso(SystemClock().now_ms())},
                           {"attempt", attempt ? std::atoi(attempt) : 0}};
  // Atomic and durable: the files written before are complete on disk when the marker is.
  if (Status st =
          exec::write_file_atomic(dir + "/" + kCheckpointMarker, marker.dump() + "\n", 0600, true);
      !st.ok()) {
    std::fprintf(stderr, "error: cannot commit the checkpoint in %s: %s\n", dir.c_str(),
                 st.error().message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace gpucloud::cli
