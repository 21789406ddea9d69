#include "dev_cluster.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "net/http_client.h"

extern char** environ;

namespace gpucloud::testing {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv_in,
                          const std::map<std::string, std::string>& env_in, const std::string& cwd,
                          int timeout_s) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<std::string> argv = argv_in;
    std::vector<std::string> env = merged_environment(env_in);
    auto a = c_strings(argv);
    auto e = c_strings(env);
    execve(a[0], a.data(), e.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int open_fds = 2;
  while (open_fds > 0 && std::chrono::steady_clock::now() < deadline) {
    if (poll(fds, 2, 200) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  if (open_fds > 0) kill(pid, SIGKILL);
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::map<std::string, std::string> fake_wall_clock_env(const std::string& start) {
  std::string library;
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"}) {
    std::string path = std::string(dir) + "/faketime/libfaketime.so.1";
    if (::access(path.c_str(), R_OK) == 0) library = path;
  }
  EXPECT_FALSE(library.empty()) << "libfaketime is missing: run scripts/install-deps.sh";
  return {{"LD_PRELOAD", library},
          {"FAKETIME", "@" + start},
          {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
          {"TZ", "UTC"}};
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return pred();
}

TempDir::TempDir(const std::string& base) {
  std::string tmpl = base + "/gpucloud-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
  path_ = tmpl;
  // Jobs run as their tenant's user: they must pass through here to their attempt dirs.
  ::chmod(path_.c_str(), 0711);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

DevCluster::DevCluster(std::vector<std::string> extra_args, std::map<std::string, std::string> env,
                       const std::string& base_dir)
    : dir_(base_dir),
      data_dir_(dir_.path() + "/.gpucloud"),
      extra_args_(std::move(extra_args)),
      env_(std::move(env)) {
  start();
}

DevCluster::~DevCluster() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  // Jobs outlive the dev process by design; the test ends them so nothing is left behind.
  for (const auto& dir : {data_dir_, nodes_dir()}) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->path().filename() == "pid") {
        pid_t job = std::atoi(read_file(it->path()).c_str());
        if (job > 1) kill(-job, SIGKILL);
      }
    }
  }
  run_command({"/usr/bin/pkill", "-9", "-f", dir_.path()});
}

void DevCluster::start() {
  fs::remove(data_dir_ + "/address");
  std::vector<std::string> argv = {GPUCLOUD_BINARY, "dev",        "--listen",
                                   "127.0.0.1:0",   "--data-dir", data_dir_};
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  std::vector<std::string> env = merged_environment(env_);
  auto a = c_strings(argv);
  auto e = c_strings(env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  std::string log = dir_.path() + "/dev.log";
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  int rc = posix_spawn(&pid_, a[0], &actions, nullptr, a.data(), e.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start gpucloud dev");
  bool up = wait_until([&] { return fs::exists(data_dir_ + "/address"); });
  if (!up) throw std::runtime_error("gpucloud dev did not start; see " + log);
  address_ = read_file(data_dir_ + "/address");
  bool ready = wait_until([&] {
    auto r = cli({"nodes", "--json"});
    if (r.exit_code != 0) return false;
    auto nodes = nlohmann::json::parse(r.out);
    if (nodes.empty()) return false;
    for (const auto& n : nodes)
      if (n["state"] != "ready") return false;
    return true;
  });
  if (!ready) throw std::runtime_error("no ready node; see " + log);
}

void DevCluster::kill9() {
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string DevCluster::token() const {
  return read_file(data_dir_ + "/admin.token");
}

CommandResult DevCluster::cli(const std::vector<std::string>& args, int timeout_s) const {
  std::vector<std::string> argv = {GPUCLOUD_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, {{"GPUCLOUD_ADDR", address_}, {"GPUCLOUD_TOKEN", token()}}, dir_.path(),
                     timeout_s);
}

nlohmann::json DevCluster::job(const std::string& id) const {
  auto r = cli({"show", id, "--json"});
  if (r.exit_code != 0) throw std::runtime_error("show " + id + " failed: " + r.err);
  return nlohmann::json::parse(r.out);
}

nlohmann::json DevCluster::wait_done(const std::string& id,
                                     std::chrono::milliseconds timeout) const {
  nlohmann::json j;
  wait_until(
      [&] {
        j = job(id);
        return j["state"] != "pending" && j["state"] != "running";
      },
      timeout);
  return j;
}

std::string DevCluster::submit(const std::vector<std::string>& run_args) const {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  auto r = cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(id.size(), 32u) << r.out << r.err;
  return id;
}

std::string ApiAnswer::error() const {
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return "";
  return body["error"].value("code", "") + ": " + body["error"].value("message", "");
}

std::string ApiAnswer::message() const {
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return "";
  return body["error"].value("message", "");
}

ApiAnswer api_call(const std::string& base_url, const std::string& method, const std::string& path,
                   const std::string& body, const std::string& token) {
  auto client = net::HttpClient::create(base_url);
  EXPECT_TRUE(client.ok());
  if (!client.ok()) return {};
  std::map<std::string, std::string> headers;
  if (!token.empty()) headers["Authorization"] = "Bearer " + token;
  auto r = (*client)->request(method, path, body, headers, 10'000);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  ApiAnswer a{r->status, nullptr};
  try {
    a.body = nlohmann::json::parse(r->body);
  } catch (const nlohmann::json::exception&) {
  }
  return a;
}

}  // namespace gpucloud::testing
