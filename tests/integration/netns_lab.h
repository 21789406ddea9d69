// NetnsLab: a private network of network namespaces for cluster tests. One "switch" namespace
// holds a bridge; the server host and each agent host are namespaces joined to it by a veth
// pair, with addresses 10.77.0.1 (server) and 10.77.0.11, .12, ... (agents). Nothing is added
// to the machine's own namespace. Names are unique per test process; the destructor kills
// every process in the namespaces and deletes them, and a new lab first removes the leftovers
// of test processes that died.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "dev_cluster.h"

namespace gpucloud::testing {

class NetnsLab {
 public:
  /// "" when this machine can create namespaces, else why not (for GTEST_SKIP).
  static std::string unavailable_reason();

  /// Creates the switch, the server host and agent_hosts agent hosts. Throws on failure.
  explicit NetnsLab(int agent_hosts);
  ~NetnsLab();
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  /// Host namespaces: host 0 is the server, 1..N the agents.
  const std::string& ns(int host) const { return hosts_.at(host); }
  /// A host's address.
  static std::string ip(int host);
  /// Brings a host's only link (to the switch) down or up.
  void set_link(int host, bool up);

  /// Starts argv in a host's namespace with output to log_path; returns its pid.
  pid_t spawn(int host, const std::vector<std::string>& argv, const std::string& log_path,
              const std::map<std::string, std::string>& env = {});
  /// Runs argv to completion in a host's namespace.
  CommandResult run(int host, const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env = {}, int timeout_s = 30);
  /// kill -9 and reap a process spawn() started.
  void kill9(pid_t pid);
  /// Forgets a child that has been reaped already.
  void forget(pid_t pid) { std::erase(children_, pid); }

 private:
  std::string switch_ns_;
  std::vector<std::string> hosts_;
  std::vector<pid_t> children_;
};

}  // namespace gpucloud::testing
