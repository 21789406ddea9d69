// Container start latency (issue: containers): from the submit call to the job's first output,
// for the busybox test image through `gpucloud dev`, next to a process job and to podman's own
// `podman run` of the same image with the flags the agent uses, measured in the same run,
// interleaved. The job prints /proc/uptime (the host's boot clock, also inside a container),
// compared with CLOCK_BOOTTIME at the submit: 10 ms resolution.
// Usage: bench_container_start [--samples N] [--binary PATH]
// Makes the test image (localhost/gpucloud-test-busybox:2, docs/containers.md) when missing.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "dev_process.h"
#include "net/http_client.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kPodman = "/usr/bin/podman";
constexpr const char* kImage = "localhost/gpucloud-test-busybox:2";

double boot_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Runs argv, returns its exit code and stdout.
std::pair<int, std::string> run(const std::vector<std::string>& argv) {
  int out[2];
  if (::pipe(out) != 0) return {-1, ""};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  ::close(out[0]);
  int status = 0;
  if (rc != 0 || ::waitpid(pid, &status, 0) < 0) return {-1, text};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text};
}

bool ensure_image() {
  if (run({kPodman, "image", "exists", kImage}).first == 0) return true;
  char tmpl[] = "/tmp/gpucloud-image-XXXXXX";
  std::string dir = ::mkdtemp(tmpl), root = dir + "/root";
  fs::create_directories(root + "/bin");
  fs::create_directories(root + "/tmp");
  fs::copy_file("/bin/busybox", root + "/bin/busybox");
  for (const char* applet : {"sh", "ls", "cat", "echo", "sleep", "id", "env", "true"})
    fs::create_symlink("busybox", root + "/bin/" + applet);
  bool ok = run({"/usr/bin/tar", "-C", root, "-cf", dir + "/root.tar", "."}).first == 0 &&
            run({kPodman, "import", dir + "/root.tar", kImage}).first == 0;
  fs::remove_all(dir);
  return ok;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

using Api = gpucloud::bench::DevApi;

// Submit -> the uptime the job printed, in ms.
double job_latency(Api& api, const json& spec) {
  double t0 = boot_seconds();
  std::string id = api.call("POST", "/v1/jobs", spec.dump())["id"];
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::string state = api.call("GET", "/v1/jobs/" + id)["state"];
    if (state != "pending" && state != "running") break;
  }
  std::string out = api.raw("/v1/jobs/" + id + "/logs");
  if (out.empty()) return -1;
  return (std::stod(out) - t0) * 1000;
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 20;
  std::string binary = fs::path(argv[0]).parent_path().parent_path() / "gpucloud";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--samples")) samples = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--binary")) binary = argv[i + 1];
  }
  if (!ensure_image()) {
    std::cerr << "cannot make the test image " << kImage << " (needs podman and busybox-static)\n";
    return 1;
  }
  auto dev = gpucloud::bench::start_dev(binary);
  if (dev.pid < 0) return std::cerr << "cannot start " << binary << "\n", 1;
  Api api = Api::of(dev);
  while (api.call("GET", "/v1/nodes")["nodes"].empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  json container = {{"image", kImage}, {"command", {"cat", "/proc/uptime"}}, {"gpus", 1}};
  json process = {{"command", {"cat", "/proc/uptime"}}, {"gpus", 1}};
  // podman's own run, with the flags the agent passes that matter for its start.
  std::vector<std::string> podman = {kPodman,
                                     "run",
                                     "--rm",
                                     "--runtime",
                                     "runc",
                                     "--log-driver",
                                     "none",
                                     "--network",
                                     "host",
                                     "--ulimit",
                                     "nofile=1024:1024",
                                     "--ulimit",
                                     "nproc=1024:1024",
                                     "--user",
                                     "65534:65534",
                                     "--cap-drop",
                                     "all",
                                     "--security-opt",
                                     "no-new-privileges",
                                     kImage,
                                     "cat",
                                     "/proc/uptime"};
  std::vector<double> in_container, as_process, bare_podman;
  for (int i = 0; i < samples; ++i) {
    in_container.push_back(job_latency(api, container));
    as_process.push_back(job_latency(api, process));
    double t0 = boot_seconds();
    auto [code, out] = run(podman);
    if (code == 0 && !out.empty()) bare_podman.push_back((std::stod(out) - t0) * 1000);
  }
  kill(dev.pid, SIGTERM);
  waitpid(dev.pid, nullptr, 0);
  fs::remove_all(dev.dir);

  std::printf("submit -> first output, median of %d (10 ms resolution):\n", samples);
  std::printf("  container job (gpucloud dev):  %.0f ms\n", median(in_container));
  std::printf("  process job (gpucloud dev):    %.0f ms\n", median(as_process));
  std::printf("  podman run alone (baseline):   %.0f ms (%zu runs)\n", median(bare_podman),
              bare_podman.size());
  json out = {{"samples", samples},
              {"container_ms", median(in_container)},
              {"process_ms", median(as_process)},
              {"podman_run_ms", median(bare_podman)},
              {"container_over_podman", median(in_container) / std::max(1.0, median(bare_podman))}};
  std::cout << out.dump() << std::endl;
  return 0;
}
