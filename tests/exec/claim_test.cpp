// The claim of an attempt directory: created once, by exactly one of the processes racing for
// it, and never replaced.
#include "exec/process/claim.h"

#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"

namespace gpucloud::exec::testing {
namespace {

Claim shim_claim(int pid, uint64_t ticks) {
  Claim c;
  c.shim_pid = pid;
  c.shim_start_ticks = ticks;
  return c;
}

TEST(ClaimTest, NobodyHasClaimedAFreshAttempt) {
  TempDir dir;
  auto claim = read_claim(dir.path());
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(claim.error().code, ErrorCode::kNotFound);
}

TEST(ClaimTest, TheFirstClaimWinsAndIsNeverReplaced) {
  TempDir dir;
  auto first = try_claim(dir.path(), shim_claim(1234, 99));
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(*first);
  Claim abandon;
  abandon.abandoned = true;
  auto second = try_claim(dir.path(), abandon);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_FALSE(*second);
  auto kept = read_claim(dir.path());
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(kept->abandoned);
  EXPECT_EQ(kept->shim_pid, 1234);
  EXPECT_EQ(kept->shim_start_ticks, 99u);
  // No temporary file is left behind, and the claim is closed to everyone else.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "claim");
  }
  EXPECT_EQ(entries, 1);
  auto perms = std::filesystem::status(dir.path() + "/claim").permissions();
  EXPECT_EQ(perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all),
            std::filesystem::perms::none);
}

TEST(ClaimTest, AnAbandonedClaimReadsBack) {
  TempDir dir;
  Claim abandon;
  abandon.abandoned = true;
  auto won = try_claim(dir.path(), abandon);
  ASSERT_TRUE(won.ok() && *won);
  auto claim = read_claim(dir.path());
  ASSERT_TRUE(claim.ok());
  EXPECT_TRUE(claim->abandoned);
}

TEST(ClaimTest, AMalformedClaimIsAnErrorNotAWin) {
  TempDir dir;
  std::ofstream(dir.path() + "/claim") << "shim twelve\n";
  auto claim = read_claim(dir.path());
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(claim.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(claim.error().message.find("shim twelve"), std::string::npos) << claim.error().message;
}

// Processes racing for one claim (a shim about to run the command, agents recovering the
// start): exactly one wins, and the claim names that one.
TEST(ClaimTest, ExactlyOneOfManyRacingProcessesWins) {
  for (int round = 0; round < 20; ++round) {
    TempDir dir;
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> racers;
    for (int i = 0; i < 8; ++i) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(go[1]);
        char c;
        (void)::read(go[0], &c, 1);  // all start together, when the pipe closes
        Claim mine;
        if (i % 2 == 0) {
          mine.abandoned = true;
        } else {
          mine = shim_claim(::getpid(), 7);
        }
        auto won = try_claim(dir.path(), mine);
        ::_exit(!won.ok() ? 2 : *won ? 0 : 1);
      }
      racers.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    int winners = 0;
    pid_t winner = 0;
    for (pid_t pid : racers) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFEXITED(status));
      ASSERT_NE(WEXITSTATUS(status), 2) << "a racer could not write its claim";
      if (WEXITSTATUS(status) == 0) {
        ++winners;
        winner = pid;
      }
    }
    ASSERT_EQ(winners, 1) << "round " << round;
    auto claim = read_claim(dir.path());
    ASSERT_TRUE(claim.ok());
    size_t index = std::find(racers.begin(), racers.end(), winner) - racers.begin();
    EXPECT_EQ(claim->abandoned, index % 2 == 0);
    if (!claim->abandoned) {
      EXPECT_EQ(claim->shim_pid, winner);
    }
  }
}

}  // namespace
}  // namespace gpucloud::exec::testing
