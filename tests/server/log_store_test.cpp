// LogStore: chunks from agents land once each, in order, whatever an agent sends again.
#include "server/log_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace gpucloud::server {
namespace {

class LogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpucloud-log-store-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string log(LogStore& store) { return *store.read("j.1.0", 0, 1 << 20); }
  std::filesystem::path dir_;
};

// An agent whose poll was cut short after the server stored its chunk sends that chunk again
// with the output that came since (the job's last lines, with its end): the log holds every
// line once when the end is recorded.
TEST_F(LogStoreTest, AChunkSentAgainWithMoreAppendsOnlyWhatIsNew) {
  LogStore store(dir_.string());
  ASSERT_EQ(*store.append("j.1.0", 0, "gpu-0,gpu-1\n"), 12);
  EXPECT_EQ(*store.append("j.1.0", 0, "gpu-0,gpu-1\nto-stderr\n"), 22);
  EXPECT_EQ(log(store), "gpu-0,gpu-1\nto-stderr\n");
  // The same again, or a part of what is stored: nothing new.
  EXPECT_EQ(*store.append("j.1.0", 0, "gpu-0,gpu-1\nto-stderr\n"), 22);
  EXPECT_EQ(*store.append("j.1.0", 12, "to-stderr\n"), 22);
  EXPECT_EQ(*store.append("j.1.0", 12, "to-"), 22);
  EXPECT_EQ(log(store), "gpu-0,gpu-1\nto-stderr\n");
}

TEST_F(LogStoreTest, AChunkPastTheEndIsIgnoredAndTheAgentToldWhereToContinue) {
  LogStore store(dir_.string());
  ASSERT_EQ(*store.append("j.1.0", 0, "abc"), 3);
  EXPECT_EQ(*store.append("j.1.0", 5, "xyz"), 3) << "a gap would corrupt the log";
  EXPECT_EQ(*store.append("j.1.0", -1, "zabc"), 3);
  EXPECT_EQ(*store.append("j.1.0", 3, ""), 3);
  EXPECT_EQ(log(store), "abc");
  EXPECT_EQ(*store.append("j.1.0", 3, "def"), 6);
  EXPECT_EQ(log(store), "abcdef");
}

}  // namespace
}  // namespace gpucloud::server
