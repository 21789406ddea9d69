// What a user feels while the API is under attack: `gpucloud dev` holding 1,000 jobs, then
//  (1) quiet: /healthz probes, each on a new connection (as a load balancer or a monitor
//      probes), and authenticated submits;
//  (2) attack: 20,000 idle TCP connections from 200 loopback source addresses (reopened as the
//      server closes them), plus 4 clients fetching `GET /v1/jobs?all=1&limit=1000` (about
//      1 MB each) back to back; the same probes and submits meanwhile.
// Prints p50/p99 of the probes in both phases, the ratio, the submits' outcome, the flood's
// rate, then JSON on its last line.
// Usage: bench_hostile [--idle N] [--jobs N] [--flooders N] [--probes N] [--binary PATH]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "dev_process.h"
#include "net/http_client.h"

extern char** environ;

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A blocking connect from a loopback source address, giving up after a second.
int connect_from(const std::string& source, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval timeout{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

volatile sig_atomic_t g_stop = 0;

// The body of an attacking process: keeps `count` idle connections open from sources
// 127.1.<first_source/100>.<...>, reopening each one the server closes; writes how many are
// open to report_fd once a second until SIGTERM.
struct Report {
  int process = 0;
  int open = 0;
};

[[noreturn]] void hold_idle_connections(int process, int port, int count, int first_source,
                                        int report_fd) {
  ::signal(SIGTERM, [](int) { g_stop = 1; });
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  auto source = [&](int i) {
    int s = first_source + i / 100;
    return "127.1." + std::to_string(s / 250) + "." + std::to_string(1 + s % 250);
  };
  std::vector<pollfd> fds(static_cast<size_t>(count));
  for (int i = 0; i < count && !g_stop; ++i) fds[i] = {connect_from(source(i), port), POLLIN, 0};
  auto last_report = Clock::now();
  while (!g_stop) {
    ::poll(fds.data(), fds.size(), 100);
    int open = 0;
    for (int i = 0; i < count && !g_stop; ++i) {
      auto& p = fds[i];
      if (p.fd >= 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[512];
        if (::read(p.fd, buf, sizeof buf) <= 0) {
          ::close(p.fd);
          p.fd = -1;
        }
      }
      if (p.fd < 0) p.fd = connect_from(source(i), port);
      p.revents = 0;
      open += p.fd >= 0 ? 1 : 0;
    }
    if (ms_since(last_report) > 1000) {
      Report report{process, open};
      (void)!::write(report_fd, &report, sizeof report);
      last_report = Clock::now();
    }
  }
  ::_exit(0);
}

struct Api {
  std::string address, token;
  // A call on a new connection; returns the status (0 when it failed) and the latency.
  std::pair<int, double> once(const std::string& method, const std::string& target,
                              const std::string& body = "", bool auth = true) const {
    auto start = Clock::now();
    auto client = gpucloud::net::HttpClient::create(address);
    if (!client) return {0, ms_since(start)};
    std::map<std::string, std::string> headers;
    if (auth) headers["Authorization"] = "Bearer " + token;
    auto r = (*client)->request(method, target, body, headers, 30'000);
    return {r ? r->status : 0, ms_since(start)};
  }
};

struct PhaseFigures {
  std::vector<double> probe_ms;
  int probe_failures = 0;
  std::vector<double> submit_ms;
  int submit_failures = 0;
};

PhaseFigures probe(const Api& api, int probes) {
  PhaseFigures f;
  const std::string spec = R"({"command":["true"],"gpus":0,"name":"probe"})";
  for (int i = 0; i < probes; ++i) {
    auto [status, ms] = api.once("GET", "/healthz", "", false);
    if (status == 200)
      f.probe_ms.push_back(ms);
    else
      ++f.probe_failures;
    if (i % (probes / 10 + 1) == 0) {
      auto [s, sms] = api.once("POST", "/v1/jobs", spec);
      if (s == 201)
        f.submit_ms.push_back(sms);
      else
        ++f.submit_failures;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return f;
}

json figures_json(const PhaseFigures& f) {
  return {{"healthz_p50_ms", percentile(f.probe_ms, 0.5)},
          {"healthz_p99_ms", percentile(f.probe_ms, 0.99)},
          {"healthz_failed", f.probe_failures},
          {"submit_p50_ms", percentile(f.submit_ms, 0.5)},
          {"submit_max_ms", percentile(f.submit_ms, 1.0)},
          {"submits_ok", f.submit_ms.size()},
          {"submits_failed", f.submit_failures}};
}

}  // namespace

int main(int argc, char** argv) {
  int idle = 20'000, jobs = 1000, flooders = 4, probes = 1000;
  std::string binary = fs::path(argv[0]).parent_path().parent_path() / "gpucloud";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--idle")) idle = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--jobs")) jobs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--flooders")) flooders = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--probes")) probes = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--binary")) binary = argv[i + 1];
  }
  auto dev_process = gpucloud::bench::start_dev(binary);
  if (dev_process.pid < 0) {
    std::cerr << "cannot start " << binary << "\n";
    return 1;
  }
  pid_t dev = dev_process.pid;
  std::string dir = dev_process.dir, log = dev_process.log;
  Api api{dev_process.address(), dev_process.admin_token()};
  int port = std::stoi(api.address.substr(api.address.rfind(':') + 1));

  // 1,000 jobs with some env each: a page of them is about 1 MB.
  auto client = gpucloud::net::HttpClient::create(api.address).value();
  std::map<std::string, std::string> auth = {{"Authorization", "Bearer " + api.token}};
  json spec = {{"command", {"true"}}, {"gpus", 0}, {"env", json::object()}};
  for (int e = 0; e < 8; ++e) spec["env"]["SETTING_" + std::to_string(e)] = std::string(80, 'v');
  for (int i = 0; i < jobs; ++i) {
    spec["name"] = "filler-" + std::to_string(i);
    auto r = client->request("POST", "/v1/jobs", spec.dump(), auth, 30'000);
    if (!r || r->status != 201) {
      std::cerr << "submit failed: " << (r ? r->body : r.error().message) << "\n";
      return 1;
    }
  }
  for (;;) {  // until none is pending or running
    auto r = client->request("GET", "/v1/jobs?limit=1", "", auth, 30'000);
    if (r && r->status == 200 && json::parse(r->body)["jobs"].empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  auto page = client->request("GET", "/v1/jobs?all=1&limit=1000", "", auth, 30'000);
  size_t page_bytes = page ? page->body.size() : 0;

  std::printf("quiet: %d /healthz probes on new connections, %d submits\n", probes,
              probes / (probes / 10 + 1) + 1);
  PhaseFigures quiet = probe(api, probes);

  // The attack.
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return 1;
  std::vector<pid_t> attackers;
  int per_process = 10'000;
  for (int first = 0; first < idle; first += per_process) {
    int count = std::min(per_process, idle - first);
    pid_t pid = ::fork();
    if (pid == 0)
      hold_idle_connections(static_cast<int>(attackers.size()), port, count, first / 100,
                            pipe_fds[1]);
    attackers.push_back(pid);
  }
  std::vector<int> reported(attackers.size(), 0);
  auto read_reports = [&] {
    pollfd p{pipe_fds[0], POLLIN, 0};
    while (::poll(&p, 1, 0) > 0) {
      Report report;
      if (::read(pipe_fds[0], &report, sizeof report) != sizeof report) break;
      if (report.process >= 0 && report.process < static_cast<int>(reported.size()))
        reported[report.process] = report.open;
    }
    int sum = 0;
    for (int n : reported) sum += n;
    return sum;
  };
  auto attack_start = Clock::now();
  int held = 0;
  while (ms_since(attack_start) < 30'000 && (held = read_reports()) < idle * 9 / 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::printf("attack: %d idle connections held after %.1f s\n", held,
              ms_since(attack_start) / 1000);

  std::atomic<bool> flooding{true};
  std::atomic<int64_t> flood_requests{0}, flood_bytes{0}, flood_errors{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < flooders; ++i)
    flood.emplace_back([&] {
      auto c = gpucloud::net::HttpClient::create(api.address).value();
      while (flooding) {
        auto r = c->request("GET", "/v1/jobs?all=1&limit=1000", "", auth, 60'000);
        if (r && r->status == 200) {
          ++flood_requests;
          flood_bytes += static_cast<int64_t>(r->body.size());
        } else {
          ++flood_errors;
        }
      }
    });
  auto flood_start = Clock::now();
  std::printf("attack: %d /healthz probes and submits while %d clients fetch %zu-byte pages\n",
              probes, flooders, page_bytes);
  PhaseFigures attacked = probe(api, probes);
  double flood_seconds = ms_since(flood_start) / 1000;
  held = read_reports();
  flooding = false;
  for (auto& t : flood) t.join();
  for (pid_t pid : attackers) ::kill(pid, SIGTERM);
  for (pid_t pid : attackers) ::waitpid(pid, nullptr, 0);
  ::kill(dev, SIGTERM);
  ::waitpid(dev, nullptr, 0);
  std::string server_limits;
  {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);)
      if (line.find("open file limit") != std::string::npos) server_limits = line;
  }
  if (std::getenv("BENCH_KEEP"))
    std::fprintf(stderr, "kept %s (dev.log has the server's log)\n", dir.c_str());
  else
    fs::remove_all(dir);

  json q = figures_json(quiet), a = figures_json(attacked);
  std::printf("server: %s\n", server_limits.c_str());
  std::printf("%-8s %12s %12s %10s %12s %10s\n", "phase", "healthz p50", "healthz p99", "failed",
              "submit p50", "submits ok");
  for (auto [name, f] : {std::pair{"quiet", &q}, std::pair{"attack", &a}})
    std::printf("%-8s %10.2fms %10.2fms %10d %10.2fms %7d/%d\n", name,
                (*f)["healthz_p50_ms"].get<double>(), (*f)["healthz_p99_ms"].get<double>(),
                (*f)["healthz_failed"].get<int>(), (*f)["submit_p50_ms"].get<double>(),
                (*f)["submits_ok"].get<int>(),
                (*f)["submits_ok"].get<int>() + (*f)["submits_failed"].get<int>());
  double ratio = q["healthz_p99_ms"].get<double>() > 0
                     ? a["healthz_p99_ms"].get<double>() / q["healthz_p99_ms"].get<double>()
                     : 0;
  std::printf(
      "healthz p99 attack/quiet: %.2f; flood: %.1f pages/s (%.1f MB/s), %lld errors; "
      "idle connections held at the end: %d\n",
      ratio, static_cast<double>(flood_requests) / flood_seconds,
      static_cast<double>(flood_bytes) / flood_seconds / 1e6, static_cast<long long>(flood_errors),
      held);
  json out = {{"idle_connections", idle},
              {"idle_held_at_end", held},
              {"flooders", flooders},
              {"page_bytes", page_bytes},
              {"flood_pages_per_s", static_cast<double>(flood_requests) / flood_seconds},
              {"flood_errors", static_cast<int64_t>(flood_errors)},
              {"quiet", q},
              {"attack", a},
              {"healthz_p99_ratio", ratio}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
