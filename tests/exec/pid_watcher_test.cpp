// The monitor thread: pidfds and timers.
#include "exec/process/pid_watcher.h"

#include <sys/wait.h>

#include <atomic>

#include "exec/process/proc.h"
#include "test_support.h"

namespace gpucloud::exec::testing {
namespace {

TEST(PidWatcherTest, RunsTheCallbackWhenTheProcessExits) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = ::fork();
  if (child == 0) {
    char c;
    ::close(pipe_fds[1]);
    (void)::read(pipe_fds[0], &c, 1);  // exits when the test closes the pipe
    ::_exit(0);
  }
  ::close(pipe_fds[0]);
  auto watcher = PidWatcher::create();
  ASSERT_TRUE(watcher.ok());
  std::atomic<int> calls{0};
  int fd = pidfd_open(child);
  ASSERT_GE(fd, 0);
  (*watcher)->watch(fd, [&] { ++calls; });
  EXPECT_EQ(calls.load(), 0);
  ::close(pipe_fds[1]);
  EXPECT_TRUE(wait_until([&] { return calls.load() == 1; }));
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(calls.load(), 1);
}

TEST(PidWatcherTest, RunsTimersInDeadlineOrder) {
  auto watcher = PidWatcher::create();
  ASSERT_TRUE(watcher.ok());
  std::mutex mu;
  std::vector<int> order;
  auto record = [&](int n) {
    return [&, n] {
      std::lock_guard lock(mu);
      order.push_back(n);
    };
  };
  (*watcher)->post_after(std::chrono::milliseconds(200), record(3));
  (*watcher)->post_after(std::chrono::milliseconds(50), record(2));
  (*watcher)->post(record(1));
  EXPECT_TRUE(wait_until([&] {
    std::lock_guard lock(mu);
    return order.size() == 3;
  }));
  std::lock_guard lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(PidWatcherTest, DestroyingDropsPendingWork) {
  std::atomic<int> calls{0};
  {
    auto watcher = PidWatcher::create();
    ASSERT_TRUE(watcher.ok());
    (*watcher)->post_after(std::chrono::hours(1), [&] { ++calls; });
  }
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace gpucloud::exec::testing
