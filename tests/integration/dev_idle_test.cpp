// Idle reclaim in a dev cluster (docs/interruptions.md, "Idle GPUs handed back"): simulated
// GPUs read as busy as the CPU time of the processes bound to them, so a `sleep` job holds idle
// GPUs and a busy loop holds busy ones. With a test-sized idle window of 10 s the sleeping job
// is warned through $GPUCLOUD_INTERRUPT, stopped and ended idle-reclaimed (not re-queued, even
// with restart policy always); the busy job is never touched.
#include <gtest/gtest.h>

#include <fstream>

#include "dev_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

// Prints the interrupt file the first time it appears, and it again on SIGTERM.
constexpr const char* kSleeper =
    "trap 'echo TERM; cat \"$GPUCLOUD_INTERRUPT\"; exit 0' TERM\n"
    "while :; do\n"
    "  if [ -z \"$seen\" ] && [ -f \"$GPUCLOUD_INTERRUPT\" ]; then\n"
    "    echo WARNED; cat \"$GPUCLOUD_INTERRUPT\"; echo; seen=1\n"
    "  fi\n"
    "  sleep 0.5\n"
    "done\n";

// Busy for 30 s, then done; says so if it ever sees an interrupt file.
constexpr const char* kBusy =
    "import os, time\n"
    "end = time.time() + 30\n"
    "while time.time() < end:\n"
    "    pass\n"
    "print('warned' if os.path.exists(os.environ['GPUCLOUD_INTERRUPT']) else 'never warned')\n";

TEST(DevIdle, ASleepingJobIsWarnedThenReclaimedWhileABusyOneIsNeverTouched) {
  DevCluster cluster({"--sim-gpus", "2xA100-80GB"});
  std::string sleeper = cluster.submit(
      {"--gpus", "1", "--idle-timeout", "10s", "--restart", "always", "--", "sh", "-c", kSleeper});
  std::string busy =
      cluster.submit({"--gpus", "1", "--idle-timeout", "10s", "--", "python3", "-c", kBusy});

  // While it runs, the platform shows how long its GPUs have been idle.
  ASSERT_TRUE(wait_until(
      [&] {
        json j = cluster.job(sleeper);
        return j["state"] == "running" && j.value("idle_since_ms", 0) > 0;
      },
      std::chrono::seconds(30)))
      << cluster.job(sleeper).dump();
  auto ps = cluster.cli({"ps"});
  EXPECT_NE(ps.out.find("IDLE"), std::string::npos) << ps.out;

  json done = cluster.wait_done(sleeper, std::chrono::seconds(60));
  EXPECT_EQ(done["state"], "idle-reclaimed") << done.dump(2);
  EXPECT_EQ(done["attempt"], 1) << "an idle-reclaimed job is not re-queued";
  EXPECT_NE(done["message"].get<std::string>().find("idle"), std::string::npos) << done.dump();
  ASSERT_EQ(done["attempts"].size(), 1u) << done.dump(2);
  EXPECT_EQ(done["attempts"][0]["cause"], "idle");
  std::string log = cluster.cli({"logs", sleeper}).out;
  size_t warned = log.find("WARNED");
  size_t term = log.find("TERM");
  ASSERT_NE(warned, std::string::npos) << log;
  ASSERT_NE(term, std::string::npos) << log;
  EXPECT_LT(warned, term) << "the warning comes before the stop:\n" << log;
  EXPECT_NE(log.find("\"cause\":\"idle\""), std::string::npos) << log;
  EXPECT_NE(log.find("warning:"), std::string::npos) << log;
  // Each step, with its time: `gpucloud events` and the job's `events`.
  std::vector<std::string> types;
  for (const auto& e : done["events"]) types.push_back(e["type"]);
  std::vector<std::string> want = {"submitted", "placed", "running", "idle-warning",
                                   "interrupt", "exited", "ended"};
  EXPECT_EQ(types, want) << done["events"].dump(2);
  auto events = cluster.cli({"events", sleeper});
  EXPECT_EQ(events.exit_code, 0) << events.err;
  EXPECT_NE(events.out.find("idle-warning"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("idle: stopping"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("idle-reclaimed"), std::string::npos) << events.out;
  // `run --wait` style exit: a reclaimed job is not a success.
  EXPECT_EQ(cluster.cli({"show", sleeper}).out.find("state:         succeeded"), std::string::npos);

  json busy_done = cluster.wait_done(busy, std::chrono::seconds(60));
  EXPECT_EQ(busy_done["state"], "succeeded") << busy_done.dump(2);
  EXPECT_EQ(busy_done["attempt"], 1);
  EXPECT_NE(cluster.cli({"logs", busy}).out.find("never warned"), std::string::npos);
}

TEST(DevIdle, AnAdministratorsMaximumIdleWindowCannotBeExceededAndBadWindowsAreRefused) {
  TempDir dir;
  std::string config = dir.path() + "/gpucloud.yaml";
  std::ofstream(config) << "idle: {timeout: 1h, threshold: 10, max_timeout: 2h}\n"
                           "tenants:\n"
                           "  - {name: research, idle: {max_timeout: 8h}}\n";
  DevCluster cluster({"--sim-gpus", "1xA100-80GB", "--config", config});
  auto too_long = cluster.cli({"run", "--gpus", "1", "--idle-timeout", "3h", "--", "true"});
  EXPECT_EQ(too_long.exit_code, 1);
  EXPECT_NE(too_long.err.find("above the maximum idle window of 2h"), std::string::npos)
      << too_long.err;
  auto off = cluster.cli({"run", "--gpus", "1", "--idle-timeout", "off", "--", "true"});
  EXPECT_EQ(off.exit_code, 1);
  EXPECT_NE(off.err.find("off is not allowed here"), std::string::npos) << off.err;
  // A tenant with its own maximum may ask for more.
  auto research = cluster.cli(
      {"run", "--tenant", "research", "--gpus", "1", "--idle-timeout", "3h", "--", "true"});
  EXPECT_EQ(research.exit_code, 0) << research.err;

  for (const char* bad : {"-5s", "90d", "soon", "0.1s"}) {
    auto r = cluster.cli({"run", "--gpus", "1", "--idle-timeout", bad, "--", "true"});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("idle_timeout"), std::string::npos) << bad << ": " << r.err;
  }
}

TEST(DevIdle, ABadIdlePolicyInTheConfigFileIsRefusedWithItsPlace) {
  TempDir dir;
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"idle: {timeout: -1h}\n", "idle.timeout"},
           {"idle: {threshold: 150}\n", "idle.threshold"},
           {"idle: {window: 2h}\n", "idle.window: unknown field"},
           {"tenants:\n  - {name: a, idle: {max_timeout: off}}\n",
            "tenants[0].idle.max_timeout"}}) {
    std::string config = dir.path() + "/bad.yaml";
    std::ofstream(config) << text;
    auto r = run_command({GPUCLOUD_BINARY, "server", "--config", config, "--data-dir",
                          dir.path() + "/d", "--listen", "127.0.0.1:0"},
                         {}, "", 10);
    EXPECT_NE(r.exit_code, 0) << text;
    EXPECT_NE((r.out + r.err).find(expected), std::string::npos) << text << "\n" << r.err;
  }
}

}  // namespace
}  // namespace gpucloud::testing
