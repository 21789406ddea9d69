#include "netns_cluster.h"

#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace gpucloud::testing {

namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

NetnsCluster::NetnsCluster(NetnsLab& lab, int agents, ClusterTimeouts timeouts,
                           std::vector<std::string> server_args)
    : lab_(lab), timeouts_(std::move(timeouts)), server_args_(std::move(server_args)) {
  fs::create_directories(shared_dir());
  // Jobs run as their tenant's user and write their markers here.
  fs::permissions(shared_dir(), fs::perms::all | fs::perms::sticky_bit);
  start_server();
  auto token = cli({"token", "create", "--role", "agent", "--ttl", "1h"});
  if (token.exit_code != 0) throw std::runtime_error("token create failed: " + token.err);
  join_token_ = trim(token.out);
  agent_pids_.assign(agents, -1);
  for (int i = 1; i <= agents; ++i) start_agent(i);
  bool ready = wait_until([&] {
    for (int i = 1; i <= agents; ++i)
      if (node_state(agent_name(i)) != "ready") return false;
    return true;
  });
  if (!ready) throw std::runtime_error("agents did not all become ready; see " + work_dir());
}

NetnsCluster::~NetnsCluster() = default;  // the lab kills every process of its namespaces

void NetnsCluster::start_server() {
  std::string data = server_dir();
  std::string log = server_log();
  std::string before = read_file(log);
  std::vector<std::string> argv{GPUCLOUD_BINARY,
                                "server",
                                "--data-dir",
                                data,
                                "--listen",
                                NetnsLab::ip(0) + ":8443",
                                "--poll-hold",
                                timeouts_.poll_hold,
                                "--unreachable-after",
                                timeouts_.unreachable_after,
                                "--down-after",
                                timeouts_.down_after};
  argv.insert(argv.end(), server_args_.begin(), server_args_.end());
  server_pid_ = lab_.spawn(0, argv, log, {{"GPUCLOUD_LOG", "info"}});
  std::smatch m;
  std::regex fp(R"(fingerprint:\s+SHA256 ([0-9A-F:]+))");
  bool up = wait_until([&] {
    std::string out = read_file(log).substr(before.size());
    return std::regex_search(out, m, fp);
  });
  if (!up) throw std::runtime_error("server did not start: " + read_file(log));
  fingerprint_ = m[1];
  url_ = "https://" + NetnsLab::ip(0) + ":8443";
  admin_token_ = trim(read_file(data + "/admin.token"));
  bool serving = wait_until([&] { return cli({"nodes", "--json"}, 10).exit_code == 0; });
  if (!serving) throw std::runtime_error("server does not answer: " + read_file(log));
}

void NetnsCluster::kill_server() {
  lab_.kill9(server_pid_);
  server_pid_ = -1;
}

void NetnsCluster::start_agent(int i) {
  std::string name = agent_name(i);
  agent_pids_.at(i - 1) =
      lab_.spawn(i,
                 {GPUCLOUD_BINARY, "agent", "--server", url_, "--fingerprint", fingerprint_,
                  "--join-token", join_token_, "--data-dir", agent_dir(i), "--name", name,
                  "--sim-gpus", "2xA100-80GB", "--poll-hold", timeouts_.poll_hold, "--fence-after",
                  timeouts_.fence_after, "--labels", "host=" + name,
                  // Shared by every node: a job resumes anywhere.
                  "--checkpoint-root", work_dir() + "/checkpoints"},
                 work_dir() + "/" + name + ".log", {{"GPUCLOUD_LOG", "info"}});
}

bool NetnsCluster::stop_agent(int i, std::chrono::milliseconds timeout) {
  pid_t pid = agent_pids_.at(i - 1);
  ::kill(pid, SIGTERM);
  bool exited = wait_until([&] { return ::waitpid(pid, nullptr, WNOHANG) == pid; }, timeout);
  if (!exited) lab_.kill9(pid);
  lab_.forget(pid);
  agent_pids_.at(i - 1) = -1;
  return exited;
}

void NetnsCluster::kill_agent(int i) {
  lab_.kill9(agent_pids_.at(i - 1));
  agent_pids_.at(i - 1) = -1;
}

CommandResult NetnsCluster::cli(const std::vector<std::string>& args, int timeout_s) const {
  return cli_as(admin_token_, args, timeout_s);
}

CommandResult NetnsCluster::cli_as(const std::string& token, const std::vector<std::string>& args,
                                   int timeout_s) const {
  std::vector<std::string> argv{GPUCLOUD_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return lab_.run(
      0, argv,
      {{"GPUCLOUD_ADDR", url_}, {"GPUCLOUD_TOKEN", token}, {"GPUCLOUD_FINGERPRINT", fingerprint_}},
      timeout_s);
}

std::string NetnsCluster::submit(const std::vector<std::string>& run_args) const {
  std::vector<std::string> args{"run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  auto r = cli(args);
  if (r.exit_code != 0) throw std::runtime_error("run failed: " + r.err);
  return trim(r.out);
}

nlohmann::json NetnsCluster::job(const std::string& id) const {
  auto r = cli({"show", id, "--json"});
  if (r.exit_code != 0) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(r.out);
  } catch (...) {
    return nlohmann::json::object();
  }
}

std::string NetnsCluster::node_state(const std::string& name) const {
  auto r = cli({"nodes", "--json"}, 10);
  if (r.exit_code != 0) return "";
  try {
    for (const auto& n : nlohmann::json::parse(r.out))
      if (n.value("name", "") == name) return n.value("state", "");
  } catch (...) {
  }
  return "";
}

bool NetnsCluster::wait_job(const std::string& id,
                            const std::function<bool(const nlohmann::json&)>& pred,
                            std::chrono::milliseconds timeout) const {
  return wait_until([&] { return pred(job(id)); }, timeout);
}

}  // namespace gpucloud::testing
