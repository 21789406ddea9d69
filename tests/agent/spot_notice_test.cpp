// Spot notices as the agent reads them: a command's output, its limits, the command line's
// words, and the simulated Poisson notices.
#include "agent/spot_notice.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace gpucloud::agent {
namespace {

constexpr TimeMs kNow = 1'764'590'400'000;  // 2025-12-01T12:00:00Z

TEST(SpotNoticeOutput, ReadsInSecondsADeadlineOrDeadlineMsAndTheReason) {
  auto in = parse_spot_notice_output(R"({"in_seconds": 120, "reason": "rebalance"})", kNow);
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_EQ(in->deadline_ms, kNow + 120'000);
  EXPECT_EQ(in->reason, "rebalance");
  // What the documented jq wrapper makes of AWS's instance-action.
  auto at =
      parse_spot_notice_output(R"({"deadline": 1764590520, "reason": "AWS spot terminate"})", kNow);
  ASSERT_TRUE(at.ok()) << at.error().message;
  EXPECT_EQ(at->deadline_ms, kNow + 120'000);
  auto ms = parse_spot_notice_output(R"({"deadline_ms": 1764590405000, "extra": [1]})", kNow);
  ASSERT_TRUE(ms.ok()) << ms.error().message;
  EXPECT_EQ(ms->deadline_ms, kNow + 5'000);
  auto past = parse_spot_notice_output(R"({"deadline": 1000})", kNow);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(past->deadline_ms, kNow) << "a deadline that has passed is now";
}

TEST(SpotNoticeOutput, BadOutputIsAnErrorThatSaysWhatWasWrong) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c :
       {Case{"", "spot notice"}, Case{"not json", "spot notice"},
        Case{"[1,2]", "expected a JSON object"}, Case{"{}", "none of in_seconds, deadline"},
        Case{R"({"in_seconds": -1})", "in_seconds -1"},
        Case{R"({"in_seconds": "120"})", "in_seconds \"120\""},
        Case{R"({"in_seconds": 7200})", "in_seconds 7200"},
        Case{R"({"deadline": 1e400})", "out of range"},
        Case{R"({"deadline": 1764600000})", "a notice gives at most 3600 s"},
        Case{R"({"in_seconds": 1, "reason": 5})", "reason must be a string"},
        Case{R"([[[[[[[[[[[[1]]]]]]]]]]]])", "spot notice"}}) {
    auto r = parse_spot_notice_output(c.text, kNow);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos)
        << c.text << " -> " << r.error().message;
  }
  std::string huge = R"({"in_seconds": 1, "reason": ")" + std::string(70'000, 'x') + "\"}";
  EXPECT_FALSE(parse_spot_notice_output(huge, kNow).ok());
}

TEST(SplitCommandWords, SplitsLikeAShellWithoutRunningOne) {
  auto w = split_command_words(
      R"(  /usr/bin/notice --url 'http://169.254.169.254/a b' "x \"y\"" a\ b $HOME )");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(*w, (std::vector<std::string>{"/usr/bin/notice", "--url", "http://169.254.169.254/a b",
                                          "x \"y\"", "a b", "$HOME"}));
  EXPECT_FALSE(split_command_words("sh -c 'unterminated").ok());
  EXPECT_FALSE(split_command_words("say \"unterminated").ok());
  EXPECT_FALSE(split_command_words("   ").ok());
}

TEST(RunBounded, GivesTheExitCodeAndOutputAndStopsRunawayCommands) {
  auto ok = run_bounded({"sh", "-c", "printf %s \"$GPUCLOUD_NODE_NAME\""},
                        {{"GPUCLOUD_NODE_NAME", "n-7"}}, 5000, 1024);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->exit_code, 0);
  EXPECT_EQ(ok->out, "n-7");
  auto failed = run_bounded({"sh", "-c", "exit 3"}, {}, 5000, 1024);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->exit_code, 3);
  auto slow = run_bounded({"sh", "-c", "sleep 30"}, {}, 200, 1024);
  ASSERT_TRUE(slow.ok());
  EXPECT_TRUE(slow->timed_out);
  EXPECT_EQ(slow->exit_code, -1);
  auto chatty = run_bounded({"sh", "-c", "yes"}, {}, 5000, 1024);
  ASSERT_TRUE(chatty.ok());
  EXPECT_TRUE(chatty->output_too_long);
  EXPECT_LE(chatty->out.size(), 1024u);
  EXPECT_FALSE(run_bounded({"/no/such/command"}, {}, 1000, 1024).ok() &&
               run_bounded({"/no/such/command"}, {}, 1000, 1024)->exit_code == 0);
}

TEST(CommandSpotNotices, ExitZeroWithANoticeIsANoticeAnythingElseIsNone) {
  auto notice = command_spot_notices({"sh", "-c", "echo '{\"in_seconds\": 30}'"}, 1000, "n");
  auto got = notice->check(kNow);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->deadline_ms, kNow + 30'000);
  EXPECT_FALSE(got->reason.empty());
  EXPECT_FALSE(command_spot_notices({"sh", "-c", "echo '{\"in_seconds\": 30}'; exit 1"}, 1000, "n")
                   ->check(kNow)
                   .has_value());
  EXPECT_FALSE(
      command_spot_notices({"sh", "-c", "echo garbage"}, 1000, "n")->check(kNow).has_value());
  EXPECT_FALSE(command_spot_notices({"/no/such/command"}, 1000, "n")->check(kNow).has_value());
}

// The AWS wrapper of docs/interruptions.md, word for word, against a fake `curl` that answers as
// the instance metadata does: 404 (curl -f fails) until the notice, then the instance-action.
TEST(CommandSpotNotices, TheDocumentedAwsWrapperTurnsAnInstanceActionIntoANotice) {
  if (std::system("command -v jq >/dev/null 2>&1") != 0) GTEST_SKIP() << "jq is not installed";
  const std::string documented =
      R"(sh -c 'r=$(curl -sf http://169.254.169.254/latest/meta-data/spot/instance-action) && )"
      R"(printf %s "$r" | jq -ce "{deadline: (.time | fromdateiso8601), reason: (\"AWS spot \" + .action)}"')";
  auto argv = split_command_words(documented);
  ASSERT_TRUE(argv.ok()) << argv.error().message;
  ASSERT_EQ(argv->size(), 3u);

  std::string dir =
      std::filesystem::temp_directory_path() / ("spot-aws-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string answer = dir + "/instance-action";
  {
    std::ofstream curl(dir + "/curl");
    curl << "#!/bin/sh\n[ -f " << answer << " ] || exit 22\ncat " << answer << "\n";
  }
  ::chmod((dir + "/curl").c_str(), 0755);
  std::string path = dir + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
  std::vector<std::string> with_path = {"env", "PATH=" + path};
  with_path.insert(with_path.end(), argv->begin(), argv->end());
  auto source = command_spot_notices(with_path, 5000, "n");

  EXPECT_FALSE(source->check(kNow).has_value()) << "404: no notice";
  std::ofstream(answer) << R"({"action": "terminate", "time": "2025-12-01T12:02:00Z"})";
  auto notice = source->check(kNow);
  ASSERT_TRUE(notice.has_value());
  EXPECT_EQ(notice->deadline_ms, kNow + 120'000);
  EXPECT_EQ(notice->reason, "AWS spot terminate");
  std::filesystem::remove_all(dir);
}

TEST(SimulatedSpotNotices, ComeAtTheRateFromTheSeed) {
  // At 3600 per hour the mean gap is 1 s: within 10 minutes of simulated time some come, and
  // the same seed gives the same times.
  auto times = [](uint64_t seed) {
    auto s = simulated_spot_notices(3600, 10'000, seed);
    std::vector<TimeMs> at;
    for (TimeMs t = kNow; t < kNow + 600'000; t += 100)
      if (auto n = s->check(t)) {
        EXPECT_EQ(n->deadline_ms, t + 10'000);
        at.push_back(t);
      }
    return at;
  };
  auto a = times(7), b = times(7), c = times(8);
  EXPECT_GT(a.size(), 300u);
  EXPECT_LT(a.size(), 900u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_FALSE(simulated_spot_notices(0, 1000, 1)->check(kNow).has_value());
}

}  // namespace
}  // namespace gpucloud::agent
