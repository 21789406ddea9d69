#include "agent/checkpoints.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "exec/process/files.h"

namespace gpucloud::agent {

namespace {

bool plain_name(const std::string& s) {
  return !s.empty() && s.size() <= 128 && s != "." && s != ".." &&
         s.find('/') == std::string::npos && s.find('\0') == std::string::npos;
}

// nftw has no user pointer: the walk's totals live here (the agent reads one dir at a time
// under its lock; see read_checkpoint).
thread_local int64_t walk_bytes = 0;
thread_local int64_t walk_entries = 0;

int add_entry(const char*, const struct stat* st, int type, struct FTW*) {
  if (++walk_entries > 100'000) return 1;  // stop: enough to say it is large
  if (type == FTW_F && S_ISREG(st->st_mode)) walk_bytes += st->st_size;
  return 0;
}

}  // namespace

Result<std::string> ensure_checkpoint_dir(const std::string& root, const std::string& job_id,
                                          int64_t uid, int64_t gid) {
  if (!plain_name(job_id))
    return invalid("job id '" + job_id + "' cannot name a checkpoint directory");
  GPUCLOUD_TRY(exec::make_dirs(root, 0711));
  int root_fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return internal(exec::errno_message("cannot open " + root));
  if (::mkdirat(root_fd, job_id.c_str(), 0700) != 0 && errno != EEXIST) {
    ::close(root_fd);
    return internal(exec::errno_message("cannot create " + root + "/" + job_id));
  }
  int fd = ::openat(root_fd, job_id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ::close(root_fd);
  std::string dir = root + "/" + job_id;
  if (fd < 0) return internal(exec::errno_message("cannot open " + dir + " as a directory"));
  Status st;
  if (uid >= 0 && ::fchown(fd, static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0)
    st = internal(exec::errno_message("cannot give " + dir + " to uid " + std::to_string(uid)));
  else if (::fchmod(fd, 0700) != 0)
    st = internal(exec::errno_message("cannot set the mode of " + dir));
  ::close(fd);
  if (!st.ok()) return st.error();
  return dir;
}

CheckpointState read_checkpoint(const std::string& dir) {
  CheckpointState out;
  struct stat marker {};
  std::string path = dir + "/" + kCheckpointMarker;
  if (::lstat(path.c_str(), &marker) != 0 || !S_ISREG(marker.st_mode)) return out;
  out.committed_at = int64_t{marker.st_mtim.tv_sec} * 1000 + marker.st_mtim.tv_nsec / 1'000'000;
  walk_bytes = 0;
  walk_entries = 0;
  ::nftw(dir.c_str(), add_entry, 16, FTW_PHYS);
  out.bytes = walk_bytes;
  return out;
}

std::optional<std::string> checkpoint_space_problem(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0 || fs.f_blocks == 0) return std::nullopt;
  auto bytes = [&](uint64_t blocks) { return static_cast<double>(blocks) * fs.f_frsize; };
  double free = bytes(fs.f_bavail), size = bytes(fs.f_blocks);
  if (free >= 64 * 1024 && free >= size / 1000) return std::nullopt;
  auto human = [](double b) {
    return b < 1024 * 1024 ? fmt::format("{:.0f} KiB", b / 1024)
                           : fmt::format("{:.1f} MiB", b / (1024 * 1024));
  };
  return fmt::format(
      "its checkpoint directory's file system is full ({} free of {}): the last committed "
      "checkpoint is kept; free space there, or write smaller checkpoints and remove old ones",
      human(free), human(size));
}

Status write_interrupt_file(const std::string& path, const InterruptNotice& notice, int64_t gid) {
  GPUCLOUD_TRY(
      exec::write_file_atomic(path, interrupt_notice_to_json(notice).dump() + "\n", 0640, false));
  if (gid >= 0 && ::chown(path.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(gid)) != 0)
    return internal(exec::errno_message("cannot give " + path + " to gid " + std::to_string(gid)));
  return {};
}

}  // namespace gpucloud::agent
