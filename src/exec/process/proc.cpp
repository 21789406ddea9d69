#include "exec/process/proc.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "exec/process/files.h"

namespace gpucloud::exec {

Result<ProcStat> read_proc_stat(int pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  auto text = read_file(path);
  if (!text.ok()) {
    if (text.error().code == ErrorCode::kNotFound)
      return not_found("no process " + std::to_string(pid));
    // ESRCH while reading means the process went away between open and read.
    return not_found("no process " + std::to_string(pid) + " (" + text.error().message + ")");
  }
  // The command name (field 2) is in parentheses and may itself contain spaces and ')'.
  size_t close = text->rfind(')');
  if (close == std::string::npos) return internal(path + ": unexpected format");
  std::istringstream in(text->substr(close + 1));
  ProcStat st;
  st.pid = pid;
  std::string field;
  std::vector<std::string> fields;  // fields[0] is field 3 (state)
  while (in >> field) fields.push_back(field);
  if (fields.size() < 22)
    return internal(path + ": only " + std::to_string(fields.size() + 2) + " fields");
  auto u64 = [&](int n) { return std::strtoull(fields[n - 3].c_str(), nullptr, 10); };
  auto i64 = [&](int n) { return std::strtoll(fields[n - 3].c_str(), nullptr, 10); };
  st.state = fields[0].empty() ? '?' : fields[0][0];
  st.ppid = static_cast<int>(i64(4));
  st.pgrp = static_cast<int>(i64(5));
  st.session = static_cast<int>(i64(6));
  st.utime = u64(14);
  st.stime = u64(15);
  st.cutime = u64(16);
  st.cstime = u64(17);
  st.start_ticks = u64(22);
  st.rss_pages = i64(24);
  return st;
}

std::vector<int> list_pids() {
  std::vector<int> pids;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return pids;
  while (struct dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && pid > 0) pids.push_back(static_cast<int>(pid));
  }
  ::closedir(dir);
  return pids;
}

GroupUsage process_group_usage(int pgid) {
  static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  static const long page_size = ::sysconf(_SC_PAGESIZE);
  GroupUsage usage;
  uint64_t ticks = 0;
  for (int pid : list_pids()) {
    auto st = read_proc_stat(pid);
    if (!st.ok() || st->pgrp != pgid) continue;
    ++usage.processes;
    usage.rss_bytes += st->rss_pages * page_size;
    ticks += st->utime + st->stime + st->cutime + st->cstime;
  }
  usage.cpu_seconds = static_cast<double>(ticks) / static_cast<double>(ticks_per_second);
  return usage;
}

int pidfd_open(int pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

}  // namespace gpucloud::exec
