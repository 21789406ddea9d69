// /proc helpers.
#include "exec/process/proc.h"

#include <sys/wait.h>

#include "test_support.h"

namespace gpucloud::exec::testing {
namespace {

TEST(ProcTest, ReadsOwnStat) {
  auto st = read_proc_stat(::getpid());
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->pid, ::getpid());
  EXPECT_EQ(st->ppid, ::getppid());
  EXPECT_EQ(st->pgrp, ::getpgrp());
  EXPECT_EQ(st->session, ::getsid(0));
  EXPECT_GT(st->start_ticks, 0u);
  EXPECT_GT(st->rss_pages, 0);
}

TEST(ProcTest, MissingProcessIsNotFound) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  auto st = read_proc_stat(child);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kNotFound);
}

TEST(ProcTest, SumsTheProcessGroup) {
  GroupUsage usage = process_group_usage(::getpgrp());
  EXPECT_GE(usage.processes, 1);
  EXPECT_GT(usage.rss_bytes, 0);
  EXPECT_EQ(process_group_usage(999999999).processes, 0);
}

}  // namespace
}  // namespace gpucloud::exec::testing
