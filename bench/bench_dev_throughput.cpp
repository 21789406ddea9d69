// Benchmark of `gpucloud dev` on one simulated 8xA100-80GB node:
//  (1) start latency: from the submit call to the moment the job's process runs (it prints the
//      time), 20 one-GPU jobs one after another, median;
//  (2) throughput: 500 trivial one-GPU jobs submitted as fast as one API client can, wall time
//      until all have finished.
// Prints a human summary, then JSON on its last line.
// Usage: bench_dev_throughput [--jobs N] [--samples N] [--binary PATH]
// BENCH_KEEP=1 keeps the data dir and log; GPUCLOUD_LOG=debug makes the log detailed.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dev_process.h"
#include "net/http_client.h"

extern char** environ;

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

double rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      in >> kib;
      return kib / 1024.0;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

// CPU seconds of a process itself and of its reaped children (the shims and the jobs).
std::pair<double, double> cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::vector<std::string> f;
  for (std::string s; fields >> s;) f.push_back(s);
  double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  // After ")": state is field 3, utime 14, stime 15, cutime 16, cstime 17 (1-based, man 5 proc).
  return {(std::stod(f[11]) + std::stod(f[12])) / tick,
          (std::stod(f[13]) + std::stod(f[14])) / tick};
}

using Api = gpucloud::bench::DevApi;

}  // namespace

int main(int argc, char** argv) {
  int jobs = 500, samples = 20;
  std::string binary = fs::path(argv[0]).parent_path().parent_path() / "gpucloud";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--jobs")) jobs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--samples")) samples = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--binary")) binary = argv[i + 1];
  }
  auto dev_process = gpucloud::bench::start_dev(binary);
  if (dev_process.pid < 0) {
    std::cerr << "cannot start " << binary << "\n";
    return 1;
  }
  pid_t dev = dev_process.pid;
  std::string dir = dev_process.dir, data = dev_process.data;
  Api api = Api::of(dev_process);
  while (api.call("GET", "/v1/nodes")["nodes"].empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double rss_idle = rss_mib(dev);

  // (1) start latency
  std::vector<double> latencies;
  for (int i = 0; i < samples; ++i) {
    json spec = {{"command", {"date", "+%s%N"}}, {"gpus", 1}};  // workdir: the job's own dir
    int64_t t0 = realtime_ns();
    std::string id = api.call("POST", "/v1/jobs", spec.dump())["id"];
    json job;
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      job = api.call("GET", "/v1/jobs/" + id);
    } while (job["state"] == "pending" || job["state"] == "running");
    std::string out = api.raw("/v1/jobs/" + id + "/logs");
    latencies.push_back((std::stoll(out) - t0) / 1e6);
  }
  std::sort(latencies.begin(), latencies.end());
  double median = latencies[latencies.size() / 2];
  if (latencies.size() % 2 == 0) median = (latencies[latencies.size() / 2 - 1] + median) / 2;

  // (2) throughput
  json spec = {{"command", {"sh", "-c", "echo $CUDA_VISIBLE_DEVICES"}},
               {"gpus", 1}};  // workdir: the job's own dir
  std::string body = spec.dump();
  auto start = std::chrono::steady_clock::now();
  auto [self_before, children_before] = cpu_seconds(dev);
  std::vector<std::string> ids;
  for (int i = 0; i < jobs; ++i) ids.push_back(api.call("POST", "/v1/jobs", body)["id"]);
  double submit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Jobs start in submission order: wait for each in turn (cheap requests, so the client does
  // not load the server it measures).
  for (const auto& id : ids) {
    for (;;) {
      std::string state = api.call("GET", "/v1/jobs/" + id)["state"];
      if (state != "pending" && state != "running") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  double all_done = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  json finished = json::array();
  for (std::string cursor;;) {  // pages of 1,000, newest first
    json page = api.call("GET", "/v1/jobs?all=1&limit=1000" +
                                    (cursor.empty() ? std::string() : "&cursor=" + cursor));
    for (auto& j : page["jobs"]) finished.push_back(std::move(j));
    if (!page.contains("next_cursor")) break;
    cursor = page["next_cursor"];
  }
  std::set<std::string> wanted(ids.begin(), ids.end());
  int succeeded = 0;
  for (const auto& j : finished)
    succeeded += wanted.count(j["id"]) && j["state"] == "succeeded" ? 1 : 0;
  double rss_after = rss_mib(dev);
  auto [self_after, children_after] = cpu_seconds(dev);
  double server_cpu_ms = (self_after - self_before) * 1000 / jobs;
  double jobs_cpu_ms = (children_after - children_before) * 1000 / jobs;

  kill(dev, SIGTERM);
  waitpid(dev, nullptr, 0);
  if (std::getenv("BENCH_KEEP"))
    std::fprintf(stderr, "kept %s (dev.log has the server's log)\n", dir.c_str());
  else
    fs::remove_all(dir);

  std::printf(
      "start latency (submit -> process runs), %d samples: median %.2f ms, min %.2f, max %.2f\n",
      samples, median, latencies.front(), latencies.back());
  std::printf("%d jobs: submitted in %.2f s, all done in %.2f s (%.1f jobs/s), %d succeeded\n",
              jobs, submit_s, all_done, jobs / all_done, succeeded);
  std::printf("server RSS: idle %.1f MiB, after %.1f MiB\n", rss_idle, rss_after);
  std::printf(
      "CPU per job: gpucloud dev (server + agent) %.2f ms, shims and job processes %.2f ms\n",
      server_cpu_ms, jobs_cpu_ms);
  json result = {{"start_latency_median_ms", median},
                 {"jobs", jobs},
                 {"succeeded", succeeded},
                 {"all_done_s", all_done},
                 {"jobs_per_s", jobs / all_done},
                 {"rss_idle_mib", rss_idle},
                 {"rss_after_mib", rss_after},
                 {"dev_cpu_ms_per_job", server_cpu_ms},
                 {"child_cpu_ms_per_job", jobs_cpu_ms}};
  std::printf("%s\n", result.dump().c_str());
  return succeeded == jobs ? 0 : 1;
}
