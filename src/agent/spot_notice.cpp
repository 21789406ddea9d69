#include "agent/spot_notice.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "model/json_fields.h"
#include "model/json_limits.h"

extern char** environ;

namespace gpucloud::agent {

using json = nlohmann::json;

namespace {

constexpr TimeMs kMaxEpochMs = 253'402'300'799'999;  // 9999-12-31T23:59:59.999Z

TimeMs monotonic_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A finite number field within [lo, hi], or an error naming it.
Result<double> number_field(const json& j, const char* field, double lo, double hi) {
  const json& v = j.at(field);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo ||
      v.get<double>() > hi)
    return invalid(fmt::format("spot notice: {} {} must be a number from {:.0f} to {:.0f}", field,
                               json_excerpt(v), lo, hi));
  return v.get<double>();
}

}  // namespace

Result<SpotNotice> parse_spot_notice_output(std::string_view output, TimeMs now) {
  if (output.size() > kMaxSpotNoticeOutput)
    return invalid(fmt::format("spot notice: {} bytes of output; at most {} are read",
                               output.size(), kMaxSpotNoticeOutput));
  auto parsed = parse_json_limited(output, "spot notice", {8, kMaxSpotNoticeOutput});
  if (!parsed) return parsed.error();
  const json& j = *parsed;
  if (!j.is_object())
    return invalid(
        "spot notice: expected a JSON object such as {\"in_seconds\": 120, \"reason\": \"...\"}");
  SpotNotice notice;
  if (j.contains("in_seconds")) {
    auto in = number_field(j, "in_seconds", 0, kMaxSpotNoticeAheadMs / 1000.0);
    if (!in) return in.error();
    notice.deadline_ms = now + std::llround(*in * 1000);
  } else if (j.contains("deadline_ms")) {
    auto at = number_field(j, "deadline_ms", 0, static_cast<double>(kMaxEpochMs));
    if (!at) return at.error();
    notice.deadline_ms = std::llround(*at);
  } else if (j.contains("deadline")) {
    auto at = number_field(j, "deadline", 0, kMaxEpochMs / 1000.0);
    if (!at) return at.error();
    notice.deadline_ms = std::llround(*at * 1000);
  } else {
    return invalid(
        "spot notice: the object has none of in_seconds, deadline (epoch seconds) or "
        "deadline_ms");
  }
  if (notice.deadline_ms > now + kMaxSpotNoticeAheadMs)
    return invalid(
        fmt::format("spot notice: the deadline is {} s ahead; a notice gives at most {} s",
                    (notice.deadline_ms - now) / 1000, kMaxSpotNoticeAheadMs / 1000));
  notice.deadline_ms = std::max(notice.deadline_ms, now);  // already passed: now
  if (j.contains("reason")) {
    if (!j["reason"].is_string() || j["reason"].get<std::string>().size() > 256)
      return invalid("spot notice: reason must be a string of at most 256 bytes");
    notice.reason = j["reason"].get<std::string>();
  }
  return notice;
}

Result<std::vector<std::string>> split_command_words(std::string_view line) {
  if (line.size() > 4096) return invalid("the command line is longer than 4096 bytes");
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word)), word.clear(), in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      size_t end = line.find('\'', i + 1);
      if (end == std::string_view::npos)
        return invalid(fmt::format("unterminated ' at byte {}", i));
      word.append(line.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() && (line[j + 1] == '"' || line[j + 1] == '\\'))
          ++j;
        word.push_back(line[j]);
      }
      if (j >= line.size()) return invalid(fmt::format("unterminated \" at byte {}", i));
      i = j;
    } else if (c == '\\' && i + 1 < line.size()) {
      word.push_back(line[++i]);
    } else {
      word.push_back(c);
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) return invalid("the command is empty");
  return words;
}

Result<BoundedRun> run_bounded(const std::vector<std::string>& argv,
                               const std::vector<std::pair<std::string, std::string>>& env,
                               int64_t timeout_ms, size_t max_output) {
  if (argv.empty()) return invalid("run_bounded: no command");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return internal(fmt::format("cannot make a pipe: {}", std::strerror(errno)));
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const auto& [k, v] : env) replaced |= entry.rfind(k + "=", 0) == 0;
    if (!replaced) env_strings.emplace_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills what it started too
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return invalid(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  }
  BoundedRun run;
  TimeMs until = monotonic_ms() + timeout_ms;
  char buf[4096];
  bool open = true;
  while (open) {
    int64_t left = until - monotonic_ms();
    if (left <= 0) {
      run.timed_out = true;
      break;
    }
    struct pollfd p {
      fds[0], POLLIN, 0
    };
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      open = false;
      break;
    }
    if (run.out.size() + static_cast<size_t>(got) > max_output) {
      run.output_too_long = true;
      break;
    }
    run.out.append(buf, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  if (run.timed_out || run.output_too_long) ::kill(-pid, SIGKILL);
  // Its stdout is closed: it has ended or is about to. Wait for it within the time left.
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return run;
    if (monotonic_ms() >= until && !run.timed_out) {
      run.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!run.timed_out && !run.output_too_long && WIFEXITED(status))
    run.exit_code = WEXITSTATUS(status);
  return run;
}

namespace {

class CommandSpotNotices : public SpotNoticeSource {
 public:
  CommandSpotNotices(std::vector<std::string> argv, int64_t interval_ms, std::string node_name)
      : argv_(std::move(argv)), interval_ms_(interval_ms), node_name_(std::move(node_name)) {}

  std::optional<SpotNotice> check(TimeMs now) override {
    int64_t timeout = std::clamp<int64_t>(interval_ms_, 1000, 30'000);
    auto run =
        run_bounded(argv_, {{"GPUCLOUD_NODE_NAME", node_name_}}, timeout, kMaxSpotNoticeOutput);
    if (!run) {
      spdlog::warn("agent {}: --spot-notice-command: {}", node_name_, run.error().message);
      return std::nullopt;
    }
    if (run->timed_out) {
      spdlog::warn("agent {}: --spot-notice-command {} did not end within {} ms; killed",
                   node_name_, argv_[0], timeout);
      return std::nullopt;
    }
    if (run->output_too_long) {
      spdlog::warn("agent {}: --spot-notice-command {} wrote more than {} bytes; ignored",
                   node_name_, argv_[0], kMaxSpotNoticeOutput);
      return std::nullopt;
    }
    if (run->exit_code != 0) return std::nullopt;  // no notice
    auto notice = parse_spot_notice_output(run->out, now);
    if (!notice) {
      spdlog::warn(
          "agent {}: --spot-notice-command {} exited 0 with output that is not a notice "
          "({}); taken as no notice",
          node_name_, argv_[0], notice.error().message);
      return std::nullopt;
    }
    if (notice->reason.empty()) notice->reason = "the provider reclaims this spot node";
    return *notice;
  }

  int64_t interval_ms() const override { return interval_ms_; }

 private:
  std::vector<std::string> argv_;
  int64_t interval_ms_;
  std::string node_name_;
};

class SimulatedSpotNotices : public SpotNoticeSource {
 public:
  SimulatedSpotNotices(double rate_per_hour, int64_t notice_ms, uint64_t seed)
      : rate_per_hour_(rate_per_hour), notice_ms_(notice_ms), rng_(seed) {}

  std::optional<SpotNotice> check(TimeMs now) override {
    if (rate_per_hour_ <= 0) return std::nullopt;
    if (next_at_ == 0) next_at_ = now + gap_ms();
    if (now < next_at_) return std::nullopt;
    next_at_ = now + gap_ms();
    return SpotNotice{now + notice_ms_,
                      fmt::format("simulated spot interruption (rate {:g}/hour)", rate_per_hour_)};
  }

  int64_t interval_ms() const override { return 1000; }

 private:
  int64_t gap_ms() {
    std::exponential_distribution<double> gap(rate_per_hour_ / 3'600'000.0);
    return std::max<int64_t>(1, std::llround(gap(rng_)));
  }

  double rate_per_hour_;
  int64_t notice_ms_;
  std::mt19937_64 rng_;
  TimeMs next_at_ = 0;
};

}  // namespace

std::unique_ptr<SpotNoticeSource> command_spot_notices(std::vector<std::string> argv,
                                                       int64_t interval_ms, std::string node_name) {
  return std::make_unique<CommandSpotNotices>(std::move(argv), interval_ms, std::move(node_name));
}

std::unique_ptr<SpotNoticeSource> simulated_spot_notices(double rate_per_hour, int64_t notice_ms,
                                                         uint64_t seed) {
  return std::make_unique<SimulatedSpotNotices>(rate_per_hour, notice_ms, seed);
}

uint64_t seed_from_name(std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace gpucloud::agent
