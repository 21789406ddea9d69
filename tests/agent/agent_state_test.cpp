// The agent's state file: what a restarted agent reads back, also after a torn save.
#include "agent/agent_state.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gpucloud::agent {
namespace {

class AgentStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpucloud-agent-state-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/agent-state.json";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static AgentState sample(const std::string& node_id) {
    AgentState s;
    s.node_id = node_id;
    s.credential = "secret";
    s.next_seq = 42;
    LocalReplica r;
    r.allocation.key = "abcd.1.0";
    r.allocation.job_id = "abcd";
    r.allocation.command = {"sleep", "1"};
    r.process = {"abcd.1.0", 1234, 99, "/tmp/x", ""};
    r.log_shipped = 17;
    s.replicas[r.allocation.key] = r;
    return s;
  }

  std::string dir_, path_;
};

TEST_F(AgentStateTest, NoFileGivesAnEmptyState) {
  auto s = AgentState::load(path_);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->node_id.empty());
  EXPECT_TRUE(s->replicas.empty());
}

TEST_F(AgentStateTest, TheLatestSaveIsReadBack) {
  AgentState s = sample("node-a");
  ASSERT_TRUE(s.save(path_).ok());
  s.node_id = "node-b";
  s.replicas["abcd.1.0"].log_shipped = 99;
  ASSERT_TRUE(s.save(path_).ok());
  auto back = AgentState::load(path_);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->node_id, "node-b");
  EXPECT_EQ(back->next_seq, 42);
  ASSERT_EQ(back->replicas.size(), 1u);
  EXPECT_EQ(back->replicas["abcd.1.0"].process.shim_pid, 1234);
  EXPECT_EQ(back->replicas["abcd.1.0"].log_shipped, 99);
  // A further save after the load goes on from the loaded generation.
  back->node_id = "node-c";
  ASSERT_TRUE(back->save(path_).ok());
  EXPECT_EQ(AgentState::load(path_)->node_id, "node-c");
}

TEST_F(AgentStateTest, TenantUidsAndJobUsersSurviveARestart) {
  AgentState s = sample("node-a");
  s.tenant_uids = {{"vision", 200000}, {"nlp", 200001}};
  s.replicas["abcd.1.0"].allocation.tenant = "vision";
  s.replicas["abcd.1.0"].allocation.uid = 5000;
  s.replicas["abcd.1.0"].allocation.gid = 5001;
  ASSERT_TRUE(s.save(path_).ok());
  auto back = AgentState::load(path_);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->tenant_uids, s.tenant_uids);
  const Allocation& a = back->replicas["abcd.1.0"].allocation;
  EXPECT_EQ(a.tenant, "vision");
  EXPECT_EQ(a.uid, 5000);
  EXPECT_EQ(a.gid, 5001);
  EXPECT_FALSE(a.allow_root);
  // The state holds the node's credential: only the agent's user may read it.
  for (const char* slot : {".0", ".1"}) {
    if (!std::filesystem::exists(path_ + slot)) continue;
    EXPECT_EQ(std::filesystem::status(path_ + slot).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
}

TEST_F(AgentStateTest, ASaveTornByACrashLeavesThePreviousState) {
  AgentState s = sample("before");
  ASSERT_TRUE(s.save(path_).ok());  // generation 1 -> slot .1
  s.node_id = "after";
  ASSERT_TRUE(s.save(path_).ok());  // generation 2 -> slot .0
  // Tear the newest slot as a crash in the middle of its write would.
  std::string newest = path_ + ".0";
  std::string text;
  {
    std::ifstream in(newest);
    std::getline(in, text);
  }
  std::ofstream(newest, std::ios::trunc) << text.substr(0, text.size() / 2);
  auto back = AgentState::load(path_);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->node_id, "before");
}

TEST_F(AgentStateTest, AFileFromBeforeSlotsIsReadAndMovedIntoASlot) {
  std::ofstream(path_)
      << R"({"node_id":"old-node","credential":"c","next_seq":7,"unacked":[],"replicas":[]})";
  auto back = AgentState::load(path_);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->node_id, "old-node");
  ASSERT_TRUE(back->save(path_).ok());
  EXPECT_EQ(AgentState::load(path_)->node_id, "old-node");
}

TEST_F(AgentStateTest, ANewestSlotWithBadFieldsFallsBackToTheOther) {
  AgentState s = sample("good");
  ASSERT_TRUE(s.save(path_).ok());  // generation 1 -> slot .1
  std::ofstream(path_ + ".0") << R"({"generation": 9, "replicas": [{"allocation": 5}]})";
  auto back = AgentState::load(path_);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->node_id, "good");
}

TEST_F(AgentStateTest, BothSlotsUnreadableIsAClearError) {
  std::ofstream(path_ + ".0") << "{not json";
  std::ofstream(path_ + ".1") << "";
  auto back = AgentState::load(path_);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("unreadable"), std::string::npos) << back.error().message;
}

// A replica recorded before its start (no shim pid yet) reads back as such from a durable
// save, and durable and ordinary saves share one sequence of slots.
TEST_F(AgentStateTest, ADurableSaveOfAReplicaAboutToStartIsReadBack) {
  AgentState s = sample("node-a");
  s.boot_id = "6b1a3c0e-boot";
  s.replicas["abcd.1.0"].process = {};
  ASSERT_TRUE(s.save(path_, /*durable=*/true).ok());
  auto back = AgentState::load(path_);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->boot_id, "6b1a3c0e-boot") << "what tells a restarted machine from a restart";
  ASSERT_EQ(back->replicas.count("abcd.1.0"), 1u);
  EXPECT_EQ(back->replicas["abcd.1.0"].process.shim_pid, 0);
  EXPECT_FALSE(back->replicas["abcd.1.0"].exited);
  back->replicas["abcd.1.0"].process = {"abcd.1.0", 77, 5, "/tmp/x", ""};
  ASSERT_TRUE(back->save(path_).ok());
  auto again = AgentState::load(path_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->replicas["abcd.1.0"].process.shim_pid, 77);
  auto perms = std::filesystem::status(path_ + ".1").permissions();
  EXPECT_EQ(perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all),
            std::filesystem::perms::none);
}

}  // namespace
}  // namespace gpucloud::agent
