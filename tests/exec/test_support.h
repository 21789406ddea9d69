// Helpers for the exec tests: temporary directories, waiting with a deadline, collecting exits.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exec/executor.h"
#include "exec/process/launch_file.h"

namespace gpucloud::exec::testing {

inline constexpr auto kDeadline = std::chrono::seconds(30);

/// A directory under `base` (default /tmp) removed with its content at the end of the test.
class TempDir {
 public:
  explicit TempDir(const std::string& base = "/tmp") {
    std::string tmpl = base + "/gpucloud-exec-test-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Polls `condition` every 10 ms until it holds or `timeout` passes.
inline bool wait_until(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = kDeadline) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

inline bool file_contains(const std::string& path, const std::string& text) {
  return slurp(path).find(text) != std::string::npos;
}

/// Records every exit the executor reports; the callback is safe from any thread.
class ExitCollector {
 public:
  std::function<void(const ExitInfo&)> callback() {
    return [this](const ExitInfo& info) {
      std::lock_guard lock(mu_);
      exits_.push_back(info);
      cv_.notify_all();
    };
  }

  /// Waits for the exit of `key`; nullopt after the deadline.
  std::optional<ExitInfo> wait_for(const std::string& key) {
    std::unique_lock lock(mu_);
    std::optional<ExitInfo> found;
    cv_.wait_for(lock, kDeadline, [&] {
      for (const auto& e : exits_) {
        if (e.key == key) found = e;
      }
      return found.has_value();
    });
    return found;
  }

  int count(const std::string& key) {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& e : exits_) n += e.key == key ? 1 : 0;
    return n;
  }

  std::vector<ExitInfo> all() {
    std::lock_guard lock(mu_);
    return exits_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ExitInfo> exits_;
};

/// Base fixture: a temporary directory, an exit collector and a process executor whose shim is
/// this test binary. Jobs still running at the end are killed; every key must have been
/// reported at most once.
class ExecutorTest : public ::testing::Test {
 protected:
  explicit ExecutorTest(const std::string& base = "/tmp") : tmp_(base) {}
  void SetUp() override { executor_ = make_executor(); }

  void TearDown() override {
    executor_.reset();
    for (const auto& ref : started_) {
      auto pid = read_pid_file(ref.attempt_dir);
      if (pid.ok() && !std::filesystem::exists(ref.attempt_dir + "/exit.json"))
        ::kill(-*pid, SIGKILL);
    }
    for (const auto& e : exits_.all()) EXPECT_EQ(exits_.count(e.key), 1) << "job " << e.key;
  }

  std::unique_ptr<Executor> make_executor(const std::string& cgroup_parent = "gpucloud") {
    ProcessExecutorConfig config;
    config.cgroup_parent = cgroup_parent;
    auto executor = create_process_executor(config);
    EXPECT_TRUE(executor.ok()) << (executor.ok() ? "" : executor.error().message);
    if (!executor.ok()) return nullptr;
    (*executor)->set_exit_callback(exits_.callback());
    return std::move(*executor);
  }

  LaunchSpec spec(const std::string& key, std::vector<std::string> argv) {
    LaunchSpec s;
    s.key = key;
    s.argv = std::move(argv);
    s.env = {{"PATH", "/usr/bin:/bin"}};
    s.workdir = tmp_.path();
    s.attempt_dir = tmp_.path() + "/attempts/" + key;
    return s;
  }

  ProcessRef start(const LaunchSpec& s, Executor* executor = nullptr) {
    auto ref = (executor ? executor : executor_.get())->start(s);
    EXPECT_TRUE(ref.ok()) << (ref.ok() ? "" : ref.error().message);
    if (!ref.ok()) return {};
    started_.push_back(*ref);
    return *ref;
  }

  /// Starts `s` and waits for its exit.
  ExitInfo run(const LaunchSpec& s) {
    start(s);
    auto info = exits_.wait_for(s.key);
    EXPECT_TRUE(info.has_value()) << "no exit reported for " << s.key;
    return info.value_or(ExitInfo{});
  }

  /// Waits until the shim has written the job's pid.
  int job_pid(const ProcessRef& ref) {
    int pid = 0;
    wait_until([&] {
      auto p = read_pid_file(ref.attempt_dir);
      pid = p.ok() ? *p : 0;
      return pid > 0;
    });
    return pid;
  }

  TempDir tmp_;
  ExitCollector exits_;
  std::vector<ProcessRef> started_;
  std::unique_ptr<Executor> executor_;
};

}  // namespace gpucloud::exec::testing
