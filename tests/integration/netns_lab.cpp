#include "netns_lab.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <regex>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace gpucloud::testing {

namespace {

const char* kIp = "/usr/sbin/ip";

// Runs `ip ARGS...`; throws with its stderr when it fails and must_work.
CommandResult run_ip(const std::vector<std::string>& args, bool must_work = true) {
  std::vector<std::string> argv{kIp};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_command(argv, {}, "", 20);
  if (must_work && r.exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw std::runtime_error(cmd + "failed: " + r.err);
  }
  return r;
}

void kill_all_in(const std::string& ns) {
  for (int round = 0; round < 3; ++round) {
    auto r = run_ip({"netns", "pids", ns}, false);
    std::istringstream in(r.out);
    int pid = 0;
    bool any = false;
    while (in >> pid)
      if (pid > 1 && pid != ::getpid()) {
        ::kill(pid, SIGKILL);
        any = true;
      }
    if (!any) return;
    ::usleep(50'000);
  }
}

void delete_ns(const std::string& ns) {
  kill_all_in(ns);
  run_ip({"netns", "del", ns}, false);
}

// Namespaces left by test processes that no longer exist (killed before their destructors).
void remove_leftovers() {
  auto r = run_ip({"netns", "list"}, false);
  std::regex name(R"(^(gct(\d+)-\d+-\w+))");
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, name)) continue;
    int pid = std::stoi(m[2]);
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) delete_ns(m[1]);
  }
}

}  // namespace

std::string NetnsLab::unavailable_reason() {
  if (::geteuid() != 0) return "network namespace tests need root (ip netns add); run as root";
  if (::access(kIp, X_OK) != 0)
    return "network namespace tests need /usr/sbin/ip (apt-get install iproute2)";
  std::string probe = "gct" + std::to_string(::getpid()) + "-probe-p";
  auto r = run_ip({"netns", "add", probe}, false);
  if (r.exit_code != 0) return "cannot create a network namespace here: " + r.err;
  auto v = run_ip({"-n", probe, "link", "add", "a0", "type", "veth", "peer", "name", "b0"}, false);
  run_ip({"netns", "del", probe}, false);
  if (v.exit_code != 0) return "cannot create veth pairs here: " + v.err;
  return "";
}

std::string NetnsLab::ip(int host) {
  return host == 0 ? "10.77.0.1" : "10.77.0." + std::to_string(10 + host);
}

NetnsLab::NetnsLab(int agent_hosts) {
  static std::atomic<int> counter{0};
  remove_leftovers();
  std::string prefix = "gct" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-";
  switch_ns_ = prefix + "sw";
  try {
    run_ip({"netns", "add", switch_ns_});
    run_ip({"-n", switch_ns_, "link", "add", "br0", "type", "bridge"});
    run_ip({"-n", switch_ns_, "link", "set", "br0", "up"});
    for (int h = 0; h <= agent_hosts; ++h) {
      std::string ns = prefix + (h == 0 ? std::string("server") : "agent" + std::to_string(h));
      run_ip({"netns", "add", ns});
      hosts_.push_back(ns);
      std::string port = "p" + std::to_string(h);
      run_ip({"-n", switch_ns_, "link", "add", port, "type", "veth", "peer", "name", "eth0",
              "netns", ns});
      run_ip({"-n", switch_ns_, "link", "set", port, "master", "br0"});
      run_ip({"-n", switch_ns_, "link", "set", port, "up"});
      run_ip({"-n", ns, "addr", "add", ip(h) + "/24", "dev", "eth0"});
      run_ip({"-n", ns, "link", "set", "eth0", "up"});
      run_ip({"-n", ns, "link", "set", "lo", "up"});
    }
  } catch (...) {
    for (const auto& ns : hosts_) delete_ns(ns);
    delete_ns(switch_ns_);
    throw;
  }
}

NetnsLab::~NetnsLab() {
  for (pid_t pid : children_) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  for (const auto& ns : hosts_) delete_ns(ns);  // also the jobs the agents started
  delete_ns(switch_ns_);
}

void NetnsLab::set_link(int host, bool up) {
  run_ip({"-n", ns(host), "link", "set", "eth0", up ? "up" : "down"});
}

pid_t NetnsLab::spawn(int host, const std::vector<std::string>& argv_in,
                      const std::string& log_path,
                      const std::map<std::string, std::string>& env_in) {
  std::string ns_path = "/run/netns/" + ns(host);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);
    int fd = ::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) _exit(126);
    int out = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    for (const auto& [k, v] : env_in) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : argv_in) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  children_.push_back(pid);
  return pid;
}

CommandResult NetnsLab::run(int host, const std::vector<std::string>& argv,
                            const std::map<std::string, std::string>& env, int timeout_s) {
  std::vector<std::string> full{kIp, "netns", "exec", ns(host)};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_command(full, env, "", timeout_s);
}

void NetnsLab::kill9(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  std::erase(children_, pid);
}

}  // namespace gpucloud::testing
