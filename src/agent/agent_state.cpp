#include "agent/agent_state.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace gpucloud::agent {

using json = nlohmann::json;

Result<AgentState> AgentState::load(const std::string& path) {
  AgentState state;
  std::ifstream in(path);
  if (!in) return state;
  std::stringstream text;
  text << in.rdbuf();
  try {
    json j = json::parse(text.str());
    state.node_id = j.value("node_id", "");
    state.credential = j.value("credential", "");
    state.next_seq = j.value("next_seq", int64_t{1});
    for (const auto& e : j.value("unacked", json::array())) {
      auto ev = replica_event_from_json(e);
      if (!ev) return ev.error();
      state.unacked.push_back(std::move(*ev));
    }
    for (const auto& r : j.value("replicas", json::array())) {
      LocalReplica lr;
      auto alloc = allocation_from_json(r.at("allocation"));
      if (!alloc) return alloc.error();
      lr.allocation = std::move(*alloc);
      const auto& p = r.at("process");
      lr.process.key = p.at("key").get<std::string>();
      lr.process.shim_pid = p.at("shim_pid").get<int>();
      lr.process.shim_start_ticks = p.at("shim_start_ticks").get<uint64_t>();
      lr.process.attempt_dir = p.at("attempt_dir").get<std::string>();
      lr.process.cgroup = p.value("cgroup", "");
      lr.started_at = r.value("started_at", TimeMs{0});
      lr.exited = r.value("exited", false);
      lr.stop_sent = r.value("stop_sent", false);
      lr.over_runtime = r.value("over_runtime", false);
      lr.log_shipped = r.value("log_shipped", int64_t{0});
      state.replicas[lr.allocation.key] = std::move(lr);
    }
  } catch (const json::exception& e) {
    return internal(fmt::format(
        "agent state file {} is corrupt ({}); move it away to start afresh (running jobs will "
        "then be reported lost)",
        path, e.what()));
  }
  return state;
}

Status AgentState::save(const std::string& path) const {
  json replicas_json = json::array();
  for (const auto& [key, r] : replicas)
    replicas_json.push_back({{"allocation", allocation_to_json(r.allocation)},
                             {"process",
                              {{"key", r.process.key},
                               {"shim_pid", r.process.shim_pid},
                               {"shim_start_ticks", r.process.shim_start_ticks},
                               {"attempt_dir", r.process.attempt_dir},
                               {"cgroup", r.process.cgroup}}},
                             {"started_at", r.started_at},
                             {"exited", r.exited},
                             {"stop_sent", r.stop_sent},
                             {"over_runtime", r.over_runtime},
                             {"log_shipped", r.log_shipped}});
  json events = json::array();
  for (const auto& e : unacked) events.push_back(replica_event_to_json(e));
  json j = {{"node_id", node_id},
            {"credential", credential},
            {"next_seq", next_seq},
            {"unacked", events},
            {"replicas", replicas_json}};
  std::string text = j.dump();
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return internal(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  // No fsync: the rename is atomic, and the file must survive a crash of the agent (the page
  // cache does), not of the machine, which takes the processes it describes with it.
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    return internal(fmt::format("cannot save {}: {}", path, std::strerror(errno)));
  return {};
}

}  // namespace gpucloud::agent
