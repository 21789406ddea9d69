#include "agent/agent_state.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

namespace gpucloud::agent {

using json = nlohmann::json;

namespace {

std::string read_all(const std::string& path, bool& exists) {
  std::ifstream in(path);
  exists = static_cast<bool>(in);
  std::stringstream text;
  if (exists) text << in.rdbuf();
  return text.str();
}

}  // namespace

namespace {

// The fields of one saved state.
Result<AgentState> state_from_json(const json& j, const std::string& path) {
  AgentState state;
  try {
    state.generation = j.value("generation", int64_t{0});
    state.node_id = j.value("node_id", "");
    state.credential = j.value("credential", "");
    state.boot_id = j.value("boot_id", "");
    state.next_seq = j.value("next_seq", int64_t{1});
    for (const auto& e : j.value("unacked", json::array())) {
      auto ev = replica_event_from_json(e);
      if (!ev) return ev.error();
      state.unacked.push_back(std::move(*ev));
    }
    state.tenant_uids = j.value("tenant_uids", std::map<std::string, int64_t>{});
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
      lr.interrupt_cause = r.value("interrupt_cause", "");
      lr.job_gid = r.value("job_gid", int64_t{-1});
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

}  // namespace

Result<AgentState> AgentState::load(const std::string& path) {
  // Two slots, written alternately: a save torn by a crash leaves the other one whole. A
  // single file without slots (an agent before slots existed) is read as generation 0.
  std::vector<std::pair<int64_t, json>> candidates;
  bool any = false;
  for (const std::string& file : {path + ".0", path + ".1"}) {
    bool exists = false;
    std::string text = read_all(file, exists);
    any |= exists;
    if (!exists) continue;
    try {
      json j = json::parse(text);
      candidates.emplace_back(j.value("generation", int64_t{0}), std::move(j));
    } catch (const json::exception&) {
      // A torn write: the other slot has the state before it.
    }
  }
  if (!any) {
    bool exists = false;
    std::string text = read_all(path, exists);
    if (!exists) return AgentState{};
    try {
      candidates.emplace_back(0, json::parse(text));
    } catch (const json::exception& e) {
      return internal(
          fmt::format("agent state file {} is corrupt ({}); move it away to start afresh "
                      "(running jobs will then be reported lost)",
                      path, e.what()));
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [generation, j] : candidates) {
    auto state = state_from_json(j, path);
    if (state.ok()) return state;
  }
  return internal(
      fmt::format("agent state {}.0 and {}.1 are both unreadable; move them away to start "
                  "afresh (running jobs will then be reported lost)",
                  path, path));
}

Status AgentState::save(const std::string& path, bool durable) {
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
                             {"interrupt_cause", r.interrupt_cause},
                             {"job_gid", r.job_gid},
                             {"log_shipped", r.log_shipped}});
  json events = json::array();
  for (const auto& e : unacked) events.push_back(replica_event_to_json(e));
  const int64_t next = generation + 1;
  json j = {{"generation", next},        {"node_id", node_id},        {"credential", credential},
            {"boot_id", boot_id},        {"next_seq", next_seq},      {"unacked", events},
            {"replicas", replicas_json}, {"tenant_uids", tenant_uids}};
  std::string text = j.dump();
  // In place, into the slot not holding the latest state: no file is created or renamed per
  // save. Most saves need to survive a crash of the agent (the page cache does), not of the
  // machine, which takes the processes they describe with it; a durable one is fsync'ed (and
  // so is the directory, the first time a slot is created).
  std::string slot = path + (next % 2 == 0 ? ".0" : ".1");
  bool created = false;
  int fd = ::open(slot.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    fd = ::open(slot.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    created = true;
  }
  if (fd < 0) return internal(fmt::format("cannot write {}: {}", slot, std::strerror(errno)));
  bool ok = ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
            ::ftruncate(fd, static_cast<off_t>(text.size())) == 0 &&
            (!durable || ::fdatasync(fd) == 0);
  int saved = errno;
  ::close(fd);
  if (ok && durable && created) {
    std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
    int dfd = ::open(dir.empty() ? "/" : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ok = dfd >= 0 && ::fsync(dfd) == 0;
    saved = errno;
    if (dfd >= 0) ::close(dfd);
  }
  if (!ok) return internal(fmt::format("cannot save {}: {}", slot, std::strerror(saved)));
  generation = next;  // only now: a failed save is retried into the same slot, never the good one
  return {};
}

}  // namespace gpucloud::agent
