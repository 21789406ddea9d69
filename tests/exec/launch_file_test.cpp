// launch.json and exit.json round trips.
#include "exec/process/launch_file.h"

#include "test_support.h"

namespace gpucloud::exec::testing {
namespace {

TEST(LaunchFileTest, RoundTrips) {
  LaunchFile launch{
      "j.1.0", {"python", "train.py", "--lr", "0.1"}, {{"A", "1"}, {"B", "x y"}}, "/work",
      {0, 3},  "/sys/fs/cgroup/gpucloud/j.1.0"};
  auto parsed = launch_file_from_json(launch_file_to_json(launch));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->key, launch.key);
  EXPECT_EQ(parsed->argv, launch.argv);
  EXPECT_EQ(parsed->env, launch.env);
  EXPECT_EQ(parsed->workdir, launch.workdir);
  EXPECT_EQ(parsed->cpus, launch.cpus);
  EXPECT_EQ(parsed->cgroup, launch.cgroup);
}

TEST(LaunchFileTest, CarriesTheJobsUserAndReadsFilesWithoutOne) {
  LaunchFile launch{"j.1.0", {"true"}, {}, "/work", {}, "", 61000, 61001};
  auto parsed = launch_file_from_json(launch_file_to_json(launch));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->uid, 61000);
  EXPECT_EQ(parsed->gid, 61001);
  // A launch.json of an older agent has no user: the job runs as the shim's user.
  auto older = launch_file_from_json(R"({"argv": ["true"], "workdir": "/"})");
  ASSERT_TRUE(older.ok());
  EXPECT_EQ(older->uid, -1);
  EXPECT_EQ(older->gid, -1);
  EXPECT_FALSE(launch_file_from_json(R"({"argv": ["true"], "uid": 4294967296})").ok());
}

TEST(LaunchFileTest, RejectsMalformedFiles) {
  auto broken = launch_file_from_json("{\"argv\": ");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(broken.error().message.find("launch.json"), std::string::npos);
  auto wrong_type = launch_file_from_json("{\"argv\": \"ls -l\"}");
  ASSERT_FALSE(wrong_type.ok());
  auto empty = launch_file_from_json("{\"argv\": []}");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("argv is empty"), std::string::npos);
}

TEST(LaunchFileTest, ExitRecordRoundTrips) {
  ExitInfo info;
  info.exit_code = 137;
  info.signal = 9;
  info.message = "killed by SIGKILL";
  auto parsed = exit_record_from_json(exit_record_to_json(info, 1700000000000));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->exit_code, 137);
  EXPECT_EQ(parsed->signal, 9);
  EXPECT_FALSE(parsed->failed_to_start);
  EXPECT_EQ(parsed->message, "killed by SIGKILL");
  EXPECT_FALSE(exit_record_from_json("{}").ok());
}

TEST(LaunchFileTest, MissingFilesAreNotFound) {
  TempDir tmp;
  EXPECT_EQ(read_exit_record(tmp.path()).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(read_pid_file(tmp.path()).error().code, ErrorCode::kNotFound);
  std::ofstream(tmp.path() + "/pid") << "4242\n";
  EXPECT_EQ(read_pid_file(tmp.path()).value(), 4242);
}

}  // namespace
}  // namespace gpucloud::exec::testing
