#include "model/agent_protocol.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/json_fields.h"

namespace gpucloud {

using json = nlohmann::json;

namespace {
constexpr int64_t kMaxSpotDeadlineMs = 253'402'300'799'999;  // 9999-12-31T23:59:59.999Z
}  // namespace

std::string replica_key(const std::string& job_id, int attempt, int rank) {
  return fmt::format("{}.{}.{}", job_id, attempt, rank);
}

json allocation_to_json(const Allocation& a) {
  json gpus = json::array();
  for (const auto& g : a.gpus)
    gpus.push_back({{"index", g.index}, {"uuid", g.uuid}, {"milli", g.milli}});
  json j = {{"key", a.key},
            {"job_id", a.job_id},
            {"attempt", a.attempt},
            {"rank", a.rank},
            {"replicas", a.replicas},
            {"command", a.command},
            {"env", a.env},
            {"workdir", a.workdir},
            {"gpus", gpus},
            {"cpu_milli", a.cpu_milli},
            {"memory_mib", a.memory_mib},
            {"grace_ms", a.grace_ms},
            {"max_runtime_ms", a.max_runtime_ms},
            {"master_addr", a.master_addr},
            {"master_port", a.master_port}};
  if (!a.tenant.empty()) j["tenant"] = a.tenant;
  if (a.gpu_memory_mib > 0) j["gpu_memory_mib"] = a.gpu_memory_mib;
  if (a.uid >= 0) {
    j["uid"] = a.uid;
    j["gid"] = a.gid;
  }
  if (a.allow_root) j["allow_root"] = true;
  container_spec_to_json(a.container, j);
  return j;
}

int master_port_for(const std::string& job_id) {
  uint32_t h = 2166136261u;  // FNV-1a: the same port on every node and across restarts
  for (unsigned char c : job_id) h = (h ^ c) * 16777619u;
  return 20000 + static_cast<int>(h % 20000);
}

Result<Allocation> allocation_from_json(const json& j) {
  try {
    Allocation a;
    a.key = j.at("key").get<std::string>();
    a.job_id = j.at("job_id").get<std::string>();
    a.attempt = static_cast<int>(json_whole_at(j, "attempt", 0, kJsonIntMax));
    a.rank = static_cast<int>(json_whole_at(j, "rank", 0, kJsonIntMax));
    a.replicas = static_cast<int>(json_whole_at(j, "replicas", 1, kJsonIntMax));
    a.command = j.at("command").get<std::vector<std::string>>();
    a.env = j.at("env").get<std::map<std::string, std::string>>();
    a.workdir = j.at("workdir").get<std::string>();
    for (const auto& g : j.at("gpus"))
      a.gpus.push_back({static_cast<int>(json_whole_at(g, "index", 0, 1023)),
                        g.at("uuid").get<std::string>(),
                        static_cast<int>(json_whole_at(g, "milli", 0, 1000))});
    a.cpu_milli = json_whole_at(j, "cpu_milli", 0, kJsonInt64Max);
    a.memory_mib = json_whole_at(j, "memory_mib", 0, kJsonInt64Max);
    a.gpu_memory_mib = json_whole_or(j, "gpu_memory_mib", 0, 0, kJsonInt64Max);
    a.grace_ms = json_whole_at(j, "grace_ms", 0, kJsonInt64Max);
    a.max_runtime_ms = json_whole_at(j, "max_runtime_ms", 0, kJsonInt64Max);
    a.master_addr = j.value("master_addr", "");
    a.master_port = static_cast<int>(json_whole_or(j, "master_port", 0, 0, 65535));
    a.tenant = j.value("tenant", "");
    a.uid = j.value("uid", int64_t{-1});
    a.gid = j.value("gid", a.uid);
    a.allow_root = j.value("allow_root", false);
    for (const auto& [key, value] : j.items()) {
      if (!is_container_field(key)) continue;
      Status read = read_container_field(key, value, a.container);
      if (!read.ok()) return invalid("malformed allocation: " + read.error().message);
    }
    if (Status valid = validate_container_spec(a.container); !valid.ok())
      return invalid("malformed allocation: " + valid.error().message);
    if (a.uid < -1 || a.uid > 0xfffffffeLL || a.gid < -1 || a.gid > 0xfffffffeLL)
      return invalid("malformed allocation: uid/gid " + std::to_string(a.uid) + "/" +
                     std::to_string(a.gid) + " out of range 0..4294967294");
    return a;
  } catch (const JsonFieldError& e) {
    return invalid(std::string("malformed allocation: ") + e.what());
  } catch (const json::exception& e) {
    return invalid(std::string("malformed allocation: ") + e.what());
  }
}

json replica_event_to_json(const ReplicaEvent& e) {
  json j = {{"seq", e.seq},
            {"key", e.key},
            {"type", e.type},
            {"exit_code", e.exit_code},
            {"signal", e.signal},
            {"lost", e.lost},
            {"failed_to_start", e.failed_to_start},
            {"over_runtime", e.over_runtime},
            {"message", e.message},
            {"at", e.at}};
  if (e.not_started) j["not_started"] = true;  // only when set: older servers see no change
  if (e.checkpoint_at > 0) {
    j["checkpoint_at"] = e.checkpoint_at;
    j["checkpoint_bytes"] = e.checkpoint_bytes;
  }
  if (!e.interrupt_cause.empty()) j["interrupt_cause"] = e.interrupt_cause;
  return j;
}

Result<ReplicaEvent> replica_event_from_json(const json& e) {
  try {
    ReplicaEvent ev;
    ev.seq = json_whole_at(e, "seq", 0, kJsonInt64Max);
    ev.key = e.at("key").get<std::string>();
    ev.type = e.at("type").get<std::string>();
    ev.exit_code = static_cast<int>(json_whole_or(e, "exit_code", 0, -kJsonIntMax, kJsonIntMax));
    ev.signal = static_cast<int>(json_whole_or(e, "signal", 0, 0, 1024));
    ev.lost = e.value("lost", false);
    ev.failed_to_start = e.value("failed_to_start", false);
    ev.over_runtime = e.value("over_runtime", false);
    ev.message = e.value("message", "");
    ev.at = json_whole_or(e, "at", 0, 0, kJsonInt64Max);
    ev.not_started = e.value("not_started", false);
    ev.checkpoint_at = json_whole_or(e, "checkpoint_at", 0, 0, kJsonInt64Max);
    ev.checkpoint_bytes = json_whole_or(e, "checkpoint_bytes", 0, 0, kJsonInt64Max);
    ev.interrupt_cause = e.value("interrupt_cause", "");
    if (ev.interrupt_cause.size() > 32) return invalid("malformed event: interrupt_cause too long");
    return ev;
  } catch (const JsonFieldError& ex) {
    return invalid(std::string("malformed event: ") + ex.what());
  } catch (const json::exception& ex) {
    return invalid(std::string("malformed event: ") + ex.what());
  }
}

json poll_request_to_json(const PollRequest& r) {
  json events = json::array();
  for (const auto& e : r.events) events.push_back(replica_event_to_json(e));
  json logs = json::array();
  for (const auto& l : r.logs)
    logs.push_back({{"key", l.key}, {"offset", l.offset}, {"data", l.data_base64}});
  json out = {{"node_id", r.node_id}, {"applied_version", r.applied_version},
              {"running", r.running}, {"events", events},
              {"logs", logs},         {"hold_ms", r.hold_ms}};
  if (!r.gpus.empty()) {
    json gpus = json::array();
    for (const auto& g : r.gpus)
      gpus.push_back({{"index", g.index},
                      {"utilization_pct", g.utilization_pct},
                      {"memory_used_mib", g.memory_used_mib},
                      {"temperature_c", g.temperature_c},
                      {"power_w", g.power_w}});
    out["gpus"] = gpus;
  }
  if (r.leaving) out["leaving"] = true;
  if (r.has_spot_notice())
    out["spot_notice"] = {{"deadline_ms", r.spot_notice.deadline_ms},
                          {"reason", r.spot_notice.reason}};
  return out;
}

Result<PollRequest> poll_request_from_json(const json& j) {
  try {
    PollRequest r;
    r.node_id = j.at("node_id").get<std::string>();
    r.applied_version = json_whole_at(j, "applied_version", 0, kJsonInt64Max);
    r.running = j.at("running").get<std::vector<std::string>>();
    r.hold_ms = json_whole_or(j, "hold_ms", 5000, 0, 60'000);
    r.leaving = j.value("leaving", false);
    if (j.contains("spot_notice")) {
      const auto& n = j.at("spot_notice");
      if (!n.is_object()) return invalid("malformed poll request: spot_notice must be an object");
      r.spot_notice.deadline_ms = json_whole_at(n, "deadline_ms", 1, kMaxSpotDeadlineMs);
      r.spot_notice.reason = n.value("reason", "");
      if (r.spot_notice.reason.size() > 256)
        return invalid("malformed poll request: spot_notice.reason is longer than 256 bytes");
    }
    const auto& events = j.at("events");
    const auto& logs = j.at("logs");
    if (r.running.size() > 10'000 || events.size() > 10'000 || logs.size() > 10'000)
      return invalid("poll carries more than 10,000 running keys, events or log chunks");
    for (const auto& e : events) {
      auto ev = replica_event_from_json(e);
      if (!ev) return ev.error();
      r.events.push_back(std::move(*ev));
    }
    for (const auto& l : logs)
      r.logs.push_back({l.at("key").get<std::string>(),
                        json_whole_at(l, "offset", 0, kJsonInt64Max),
                        l.at("data").get<std::string>()});
    if (j.contains("gpus")) {
      const auto& gpus = j.at("gpus");
      if (gpus.size() > 64) return invalid("poll carries readings of more than 64 GPUs");
      for (const auto& g : gpus)
        r.gpus.push_back({static_cast<int>(json_whole_at(g, "index", 0, 1023)),
                          static_cast<int>(json_whole_or(g, "utilization_pct", 0, 0, 100)),
                          json_whole_or(g, "memory_used_mib", 0, 0, kJsonInt64Max),
                          static_cast<int>(json_whole_or(g, "temperature_c", 0, -273, 1000)),
                          static_cast<int>(json_whole_or(g, "power_w", 0, 0, 1'000'000))});
    }
    return r;
  } catch (const JsonFieldError& e) {
    return invalid(std::string("malformed poll request: ") + e.what());
  } catch (const json::exception& e) {
    return invalid(std::string("malformed poll request: ") + e.what());
  }
}

json poll_response_to_json(const PollResponse& r) {
  json allocations = json::array();
  for (const auto& a : r.allocations) allocations.push_back(allocation_to_json(a));
  json out = {{"version", r.version},
              {"allocations", allocations},
              {"acked_seq", r.acked_seq},
              {"log_offsets", r.log_offsets}};
  for (const auto* notices : {&r.interrupts, &r.warnings}) {
    if (notices->empty()) continue;
    json field = json::object();
    for (const auto& [key, notice] : *notices) field[key] = interrupt_notice_to_json(notice);
    out[notices == &r.interrupts ? "interrupts" : "warnings"] = field;
  }
  if (!r.node_state.empty()) out["node_state"] = r.node_state;
  return out;
}

Result<PollResponse> poll_response_from_json(const json& j) {
  try {
    PollResponse r;
    r.version = json_whole_at(j, "version", 0, kJsonInt64Max);
    r.acked_seq = json_whole_at(j, "acked_seq", 0, kJsonInt64Max);
    for (const auto& [key, offset] : j.at("log_offsets").items())
      r.log_offsets[key] = json_whole(offset, "log_offsets." + key, 0, kJsonInt64Max);
    for (const auto& a : j.at("allocations")) {
      auto alloc = allocation_from_json(a);
      if (!alloc) return alloc.error();
      r.allocations.push_back(std::move(*alloc));
    }
    for (const char* field : {"interrupts", "warnings"}) {
      if (!j.contains(field)) continue;
      const auto& notices = j.at(field);
      if (!notices.is_object() || notices.size() > 10'000)
        return invalid(
            fmt::format("malformed poll response: {} must map at most 10,000 keys", field));
      auto& out = std::string(field) == "interrupts" ? r.interrupts : r.warnings;
      for (const auto& [key, notice] : notices.items()) {
        auto n = interrupt_notice_from_json(notice);
        if (!n) return n.error();
        out[key] = std::move(*n);
      }
    }
    r.node_state = j.value("node_state", "");
    if (r.node_state.size() > 32) return invalid("malformed poll response: node_state too long");
    return r;
  } catch (const JsonFieldError& e) {
    return invalid(std::string("malformed poll response: ") + e.what());
  } catch (const json::exception& e) {
    return invalid(std::string("malformed poll response: ") + e.what());
  }
}

}  // namespace gpucloud
