// The node side of the interruption protocol: checkpoint directories and the interrupt file.
#include "agent/checkpoints.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace gpucloud::agent {
namespace {

namespace fs = std::filesystem;

class Checkpoints : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gpucloud-ckpt-" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(Checkpoints, ADirectoryPerJobKeptAcrossCallsClosedToOthers) {
  auto dir = ensure_checkpoint_dir(root_.string(), "job-1", -1, -1);
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  std::ofstream(*dir + "/weights.bin") << std::string(3000, 'w');
  auto again = ensure_checkpoint_dir(root_.string(), "job-1", -1, -1);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(fs::exists(*again + "/weights.bin")) << "kept for the next attempt";
  struct stat st {};
  ASSERT_EQ(::stat(dir->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(root_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0711u) << "others may pass through, not list the jobs";
}

TEST_F(Checkpoints, JobIdsThatAreNotAPlainNameAndLinksAreRefused) {
  for (const char* bad : {"", ".", "..", "a/b", "../etc"})
    EXPECT_FALSE(ensure_checkpoint_dir(root_.string(), bad, -1, -1).ok()) << bad;
  fs::create_directories(root_);
  fs::create_symlink("/etc", root_ / "job-2");
  EXPECT_FALSE(ensure_checkpoint_dir(root_.string(), "job-2", -1, -1).ok())
      << "a link planted where a job's directory goes is not followed";
}

TEST_F(Checkpoints, OnlyACommittedCheckpointCountsWithItsSize) {
  auto dir = ensure_checkpoint_dir(root_.string(), "job-3", -1, -1);
  ASSERT_TRUE(dir.ok());
  std::ofstream(*dir + "/state.json") << std::string(1000, 's');
  EXPECT_EQ(read_checkpoint(*dir).committed_at, 0) << "files without the marker are no checkpoint";
  fs::create_directories(*dir + "/shard");
  std::ofstream(*dir + "/shard/part0") << std::string(500, 'p');
  fs::create_symlink("/etc/passwd", *dir + "/outside");  // not followed, not counted
  std::ofstream(*dir + "/" + kCheckpointMarker) << "{}";
  CheckpointState s = read_checkpoint(*dir);
  EXPECT_GT(s.committed_at, 0);
  EXPECT_EQ(s.bytes, 1000 + 500 + 2);
  EXPECT_EQ(read_checkpoint(root_.string() + "/no-such-job").committed_at, 0);
}

TEST_F(Checkpoints, TheInterruptFileSaysCauseAndDeadlineToTheJobAlone) {
  fs::create_directories(root_);
  std::string path = (root_ / "interrupt.json").string();
  ASSERT_TRUE(write_interrupt_file(path, {"spot", 1'800'000'000'000, "node taken"}, -1).ok());
  auto j = nlohmann::json::parse(std::ifstream(path));
  EXPECT_EQ(j["cause"], "spot");
  EXPECT_EQ(j["deadline"], 1'800'000'000);
  EXPECT_EQ(j["message"], "node taken");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

}  // namespace
}  // namespace gpucloud::agent
