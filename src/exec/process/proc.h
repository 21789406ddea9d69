// Helpers over /proc and the pidfd system calls.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"

namespace gpucloud::exec {

/// The fields of /proc/<pid>/stat the executor uses (proc(5) numbering in comments).
struct ProcStat {
  int pid = 0;
  char state = '?';          // 3
  int ppid = 0;              // 4
  int pgrp = 0;              // 5
  int session = 0;           // 6
  uint64_t utime = 0;        // 14, clock ticks
  uint64_t stime = 0;        // 15
  uint64_t cutime = 0;       // 16, reaped children
  uint64_t cstime = 0;       // 17
  uint64_t start_ticks = 0;  // 22, clock ticks after boot; with pid, names one process
  int64_t rss_pages = 0;     // 24
};

/// Reads /proc/<pid>/stat. kNotFound when there is no such process.
Result<ProcStat> read_proc_stat(int pid);

/// The pids currently listed in /proc.
std::vector<int> list_pids();

/// Resource use summed over the live members of one process group.
struct GroupUsage {
  int processes = 0;
  int64_t rss_bytes = 0;
  double cpu_seconds = 0;  // user+system of members and of their reaped children
};

/// Sums resource use over all processes whose process group is `pgid`.
GroupUsage process_group_usage(int pgid);

/// pidfd_open(2): a descriptor (close-on-exec) that becomes readable when `pid` exits.
/// Works for processes that are not our children. Returns -1 with errno set on failure.
int pidfd_open(int pid);

}  // namespace gpucloud::exec
