// The agent side of the API: registration, the long-poll, replica events and node liveness.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/units.h"
#include "model/node_json.h"
#include "net/crypto.h"
#include "server/http_util.h"
#include "server/server.h"

namespace gpucloud::server {

using json = nlohmann::json;

namespace {

// Splits "<job>.<attempt>.<rank>".
bool parse_key(const std::string& key, std::string& job_id, int& attempt, int& rank);

// A key as replica_key() writes it, and nothing else (keys become file names).
bool parse_canonical_key(const std::string& key, std::string& job_id, int& attempt, int& rank) {
  return parse_key(key, job_id, attempt, rank) && attempt >= 1 && rank >= 0 &&
         looks_like_id_prefix(job_id) && key == replica_key(job_id, attempt, rank);
}

bool parse_key(const std::string& key, std::string& job_id, int& attempt, int& rank) {
  size_t a = key.find('.');
  size_t b = key.find('.', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos) return false;
  try {
    job_id = key.substr(0, a);
    attempt = std::stoi(key.substr(a + 1, b - a - 1));
    rank = std::stoi(key.substr(b + 1));
    return true;
  } catch (...) {
    return false;
  }
}

// The doctor's "clock" check, done here: the time the agent sent its registration at against
// the server's when it arrived (docs/doctor.md). Off by more than 2 s, event times and the
// cost of short attempts drift; by more than 5 minutes, TLS and token lifetimes break.
NodeCheck clock_check(TimeMs agent_sent_at, TimeMs server_now) {
  int64_t skew = agent_sent_at - server_now;  // the request's travel time makes it a little less
  int64_t off = skew < 0 ? -skew : skew;
  std::string how = fmt::format("the node's clock is {} {} the server's", format_duration_ms(off),
                                skew > 0 ? "ahead of" : "behind");
  const char* fix = "keep both clocks synchronised: run chrony or systemd-timesyncd on the node";
  if (off > 5 * 60'000) return {"clock", "fail", how, fix};
  if (off > 2'000) return {"clock", "warn", how, fix};
  return {"clock", "ok", "within 2 s of the server's", ""};
}

}  // namespace

void Server::register_node(const net::HttpRequest& req, const Principal& who,
                           net::Responder respond) {
  std::function<void(net::HttpResponse)> answer = std::move(respond);
  if (auto r = register_node_now(req, who, answer)) answer(std::move(*r));
}

std::optional<net::HttpResponse> Server::register_node_now(
    const net::HttpRequest& req, const Principal& who,
    const std::function<void(net::HttpResponse)>& answer) {
  if (who.role != "agent" && who.role != "node" && !who.is_admin())
    return error_response({ErrorCode::kPermissionDenied,
                           "registering a node needs an agent join token or the admin token"});
  auto body = parse_json_body(req.body);
  if (!body) return error_response(body.error());
  if (!body->is_object() || !body->contains("node"))
    return error_response(invalid("register: expected {\"node\": {...}}"));
  auto info = node_info_from_json(body->at("node"));
  if (!info) return error_response(info.error());
  TimeMs now = clock_.now_ms();
  for (const char* field : {"node_id", "credential"})
    if (body->contains(field) && !body->at(field).is_string())
      return error_response(invalid(fmt::format("register: {} must be a string", field)));
  std::string node_id = body->value("node_id", "");
  std::string credential = body->value("credential", "");
  auto refuse = [&](ErrorCode code, std::string message) {
    spdlog::warn("register refused from {} (token '{}', name '{}'): {}", req.remote_address,
                 who.name, info->name, message);
    return error_response({code, std::move(message)});
  };
  // A node credential re-registers its own node only (after a restart of the agent or server).
  if (who.role == "node" && node_id != who.node_id)
    return refuse(ErrorCode::kPermissionDenied,
                  "a node credential may only re-register its own node");
  if (body->contains("sent_at_ms")) {
    const json& sent = body->at("sent_at_ms");
    if (!sent.is_number_integer() || sent.get<int64_t>() < 0)
      return error_response(
          invalid("register: sent_at_ms must be the agent's wall clock in whole ms since 1970"));
    std::erase_if(info->doctor, [](const NodeCheck& c) { return c.name == "clock"; });
    // Room for it within the limit, which the stored record is read back with.
    clip_node_checks(info->doctor, kMaxNodeChecks - 1);
    info->doctor.push_back(clock_check(sent.get<int64_t>(), now));
  }
  if (info->address.empty()) {  // the address the agent's connection came from
    info->address = req.remote_address;
    if (info->address.rfind("::ffff:", 0) == 0) info->address = info->address.substr(7);
  }
  // The node this registration is for by its credential: the bearer's own node, or the one
  // whose id and credential the body carries.
  store::NodeRecord* own = nullptr;
  if (who.role == "node") {
    auto it = nodes_.find(who.node_id);
    if (it == nodes_.end()) return error_response(not_found("node is not registered"));
    own = &it->second;
    if (credential.empty() ||
        !net::constant_time_equal(net::sha256_hex(credential), own->credential_sha256))
      credential.clear();  // a fresh one is issued below
  } else if (!node_id.empty()) {
    auto it = nodes_.find(node_id);
    if (it != nodes_.end() && !credential.empty() &&
        net::constant_time_equal(net::sha256_hex(credential), it->second.credential_sha256))
      own = &it->second;
  }
  store::NodeRecord* existing = own;
  // The node is back with its own credential: an approval to replace it is void.
  if (own) own->replace_approved = false;
  std::vector<std::string> same_name;  // the records with this name (by the index, by id)
  if (auto named = node_ids_by_name_.find(info->name); named != node_ids_by_name_.end())
    same_name.assign(named->second.begin(), named->second.end());
  for (const auto& id : same_name) {
    auto& node = nodes_.at(id);
    if (&node == own) continue;
    if (node.state == "ready")
      return refuse(
          ErrorCode::kConflict,
          fmt::format("a ready node named '{}' is already registered; give this agent another "
                      "name or stop the other one",
                      info->name));
    // A credential is bound to its node: it never takes over another one, and a join token
    // takes over a node that is gone only once an admin has approved it.
    if (who.role == "node")
      return refuse(ErrorCode::kPermissionDenied,
                    fmt::format("the credential of node '{}' cannot register as '{}', which is "
                                "another node ({})",
                                own->info.name, info->name, node.id));
    if (!who.is_admin() && !node.replace_approved)
      return refuse(
          ErrorCode::kConflict,
          fmt::format("node name '{}' belongs to node {}, which is {}; if this machine is that "
                      "node and lost its agent state, an admin approves the replacement with "
                      "`gpucloud node replace {}`; otherwise give this agent another --name",
                      info->name, node.id, node.state, info->name));
    existing = &node;  // a machine that lost its agent state takes its old record back
    existing->replace_approved = false;
    credential.clear();
  }
  store::NodeRecord record;
  if (existing) {
    record = *existing;
  } else {
    record.id = ids_.next(now);
    record.registered_at = now;
  }
  bool fresh_credential = credential.empty() || !existing;
  if (fresh_credential) {
    credential = random_token();
    record.credential_sha256 = net::sha256_hex(credential);
  }
  record.info = std::move(*info);
  record.state = "ready";
  record.last_seen = now;
  store::WriteBatch batch;
  batch.nodes.push_back(record);
  batch.audit.push_back({now, who.name, existing ? "node.reregister" : "node.register", record.id,
                         fmt::format("{} with {} GPUs ({})", record.info.name,
                                     record.info.gpus.size(), record.info.gpu_backend)});
  auth_.set_node_credential(record.credential_sha256, record.id, record.info.name);
  record_node_event(record.info.name, existing ? "rejoined" : "joined",
                    fmt::format("{} GPUs ({})", record.info.gpus.size(), record.info.gpu_backend));
  if (const NodeCheck* failed = record.info.failed_check()) {
    // Its doctor failed at the agent's start: the node takes no jobs (node_state) until an
    // agent start passes.
    spdlog::warn("node {}: doctor: {} failed: {}; it is given no jobs", record.info.name,
                 failed->name, failed->why);
    record_node_event(record.info.name, "unhealthy",
                      fmt::format("doctor: {} failed: {}", failed->name, failed->why));
  }
  put_node(record);
  auto& rt = runtime_[record.id];
  if (rt.version == 0) rt.version = ++version_clock_;
  if (existing && fresh_credential) {
    // An agent that lost its state file cannot re-adopt what its predecessor ran: those
    // replicas are lost (their processes may be orphaned on the machine; the node's operator
    // must clean them up), and must not be handed to the new agent to start a second time.
    // Every replica here is marked first, then each job settles (settling may answer other
    // nodes' polls, which must not see a replica here that is already lost).
    std::vector<Job*> touched = jobs_on(record.id);
    for (Job* job : touched)
      for (auto& r : job->replicas)
        if (r.node_id == record.id && r.state != ReplicaState::kExited) {
          r.state = ReplicaState::kExited;
          r.lost = true;
          r.message = fmt::format("the agent on {} restarted without its state", record.info.name);
        }
    for (Job* job : touched) settle_attempt(*job, batch);
    rt.acked_seq = 0;  // the new agent numbers its events afresh
  }
  spdlog::info("node {} ({}) registered with {} GPUs", record.info.name, record.id,
               record.info.gpus.size());
  node_changed(record.id);
  auto response = json_response(
      200,
      {{"node_id", record.id}, {"credential", credential}, {"poll_hold_ms", config_.poll_hold_ms}});
  if (existing && fresh_credential) {  // lost replicas: durable before anything else is said
    if (auto st = commit(batch); !st.ok()) return error_response(st.error());
    return response;
  }
  // The answer waits for the record to be durable; registrations that arrive together share
  // one transaction (a fleet that joins at once would otherwise wait on one fsync each).
  commit_later(batch,
               [answer, response = std::move(response)]() mutable { answer(std::move(response)); });
  return std::nullopt;
}

void Server::poll(const net::HttpRequest& req, const Principal& who, net::Responder respond) {
  auto body = parse_json_body(req.body);
  if (!body) return respond(error_response(body.error()));
  auto poll = poll_request_from_json(*body);
  if (!poll) return respond(error_response(poll.error()));
  if (poll->node_id != who.node_id)
    return respond(error_response({ErrorCode::kPermissionDenied, "poll for another node's id"}));
  auto node_it = nodes_.find(who.node_id);
  if (node_it == nodes_.end())
    return respond(error_response(not_found("node is not registered; register again")));
  TimeMs now = clock_.now_ms();
  store::NodeRecord& node = node_it->second;
  store::WriteBatch batch;
  node.last_seen = now;
  if (node.replace_approved) {  // the node is back with its own credential: not to be replaced
    node.replace_approved = false;
    batch.nodes.push_back(node);
  }
  if (poll->leaving) {
    leave_node(node, *poll, batch);
  } else if (node.state != "ready" && node.state != "interrupting" && node.state != "gone" &&
             node.state != "left") {
    spdlog::info("node {} is reachable again (was {})", node.info.name, node.state);
    batch.audit.push_back({now, "server", "node.ready", node.id, "was " + node.state});
    record_node_event(node.info.name, "ready", "reachable again (was " + node.state + ")");
    node.state = "ready";
    batch.nodes.push_back(node);
    node_changed(node.id);
  }
  if (poll->has_spot_notice() && !poll->leaving && node.state != "interrupting" &&
      node.state != "gone" && node.state != "left") {
    // The agent saw its provider's notice (docs/interruptions.md, "Spot notices"): the same as
    // `gpucloud node interrupt`. The answer's node_state tells the agent it was acted on.
    std::string reason = poll->spot_notice.reason.empty() ? "the provider reclaims this spot node"
                                                          : poll->spot_notice.reason;
    begin_spot_interruption(node, poll->spot_notice.deadline_ms, reason, "agent " + node.info.name,
                            batch);
  }
  auto& rt = runtime_[node.id];
  // Logs first: a replica's last output travels in the same poll as its exit.
  std::map<std::string, int64_t> offsets;
  for (const auto& chunk : poll->logs) {
    std::string job_id;
    int attempt = 0, rank = 0;
    if (!parse_canonical_key(chunk.key, job_id, attempt, rank)) continue;
    auto data = net::base64_decode(chunk.data_base64);
    auto job_it = jobs_.find(job_id);
    bool ours = job_it != jobs_.end() && job_it->second.attempt == attempt &&
                rank < static_cast<int>(job_it->second.replicas.size()) &&
                job_it->second.replicas[rank].node_id == node.id;
    if (!ours || !data) {
      // Output of an attempt that is over (or garbled): acknowledge it as dropped, so the
      // agent does not offer it again.
      offsets[chunk.key] = chunk.offset + (data ? static_cast<int64_t>(data->size()) : 0);
      continue;
    }
    auto size = logs_.append(chunk.key, chunk.offset, *data);
    if (size) offsets[chunk.key] = *size;
  }
  for (const auto& ev : poll->events) {
    if (ev.seq <= rt.acked_seq) continue;
    apply_event(node.id, ev, batch);
    rt.acked_seq = ev.seq;
  }
  rt.applied_version = poll->applied_version;
  if (!poll->gpus.empty()) {
    rt.readings = poll->gpus;
    observe_idleness(node.id, batch);
  }
  reconcile_running(node.id, *poll, batch);
  (void)commit(batch);
  // What the events freed is placed now, so this answer already carries the new allocations
  // (instead of a second round trip once the scheduler has run).
  if (schedule_pending_) run_scheduler();
  if (rt.waiter) {  // an older poll of this node is still held: answer it now
    auto old = std::move(rt.waiter);
    rt.waiter = nullptr;
    loop_.cancel(rt.waiter_timer);
    old(poll_response(node.id, {}));
  }
  bool carried = !poll->events.empty() || !poll->logs.empty();
  int64_t hold = std::min(poll->hold_ms, config_.poll_hold_ms);
  if (poll->applied_version != rt.version || carried || hold == 0)
    return respond(poll_response(node.id, offsets));
  rt.waiter = std::move(respond);
  std::string node_id = node.id;
  uint64_t hold_id = ++rt.hold_seq;
  rt.waiter_timer = loop_.run_after(hold, [this, node_id, hold_id] {
    auto& r = runtime_[node_id];
    if (!r.waiter || r.hold_seq != hold_id) return;  // answered already; a newer poll waits
    auto w = std::move(r.waiter);
    r.waiter = nullptr;
    w(poll_response(node_id, {}));
  });
}

void Server::apply_event(const std::string& node_id, const ReplicaEvent& ev,
                         store::WriteBatch& batch) {
  std::string job_id;
  int attempt = 0, rank = 0;
  if (!parse_canonical_key(ev.key, job_id, attempt, rank)) return;
  auto it = jobs_.find(job_id);
  if (ev.type == "exited" && ev.interrupt_cause == interrupt_cause::kFenced && it != jobs_.end()) {
    // The agent stopped it alone (fenced, docs/audit.md): recorded whatever the
    // server had already decided about the attempt (its node may have been declared down).
    auto node = nodes_.find(node_id);
    batch.audit.push_back(
        {clock_.now_ms(), "agent " + (node == nodes_.end() ? node_id : node->second.info.name),
         "job.fence", job_id,
         fmt::format("attempt {} rank {} stopped by its node, which had lost contact with the "
                     "server",
                     attempt, rank)});
  }
  if (it == jobs_.end() || it->second.attempt != attempt) {
    spdlog::debug("ignoring event {} for {}: not the job's current attempt", ev.type, ev.key);
    return;
  }
  Job& job = it->second;
  if (rank < 0 || rank >= static_cast<int>(job.replicas.size()) ||
      job.replicas[rank].node_id != node_id)
    return;
  auto& replica = job.replicas[rank];
  if (replica.state == ReplicaState::kExited) return;
  if (ev.type == "started") {
    replica.state = ReplicaState::kRunning;
    bool all_running =
        std::all_of(job.replicas.begin(), job.replicas.end(),
                    [](const ReplicaAssignment& r) { return r.state != ReplicaState::kAssigned; });
    if (all_running && job.state == JobState::kPending) {
      job.state = JobState::kRunning;
      job.started_at = ev.at ? ev.at : clock_.now_ms();
      job.pending_reason.clear();
      record_job_event(job, job.started_at, "running",
                       fmt::format("attempt {}: every replica has started", job.attempt));
      note_job_started(job);
    }
    batch.jobs.push_back(job);
  } else if (ev.type == "exited") {
    replica.state = ReplicaState::kExited;
    replica.lost = ev.lost;
    if (!ev.lost) replica.exit_code = ev.exit_code;
    replica.message = ev.failed_to_start ? "failed to start: " + ev.message : ev.message;
    if (ev.failed_to_start) replica.exit_code = ev.exit_code ? ev.exit_code : 127;
    replica.end_reason = ev.failed_to_start          ? "failed_to_start"
                         : ev.over_runtime           ? "max_runtime"
                         : ev.lost && ev.not_started ? "not_started"
                                                     : "";
    replica.checkpoint_at = ev.checkpoint_at;
    replica.checkpoint_bytes = ev.checkpoint_bytes;
    replica.interrupt_cause = ev.interrupt_cause;
    std::string end = ev.lost
                          ? "lost" + (ev.message.empty() ? "" : ": " + ev.message)
                          : fmt::format("exit code {}{}", replica.exit_code.value_or(0),
                                        replica.message.empty() ||
                                                replica.message.rfind("exited with code", 0) == 0
                                            ? ""
                                            : " (" + replica.message + ")");
    std::string checkpoint =
        ev.checkpoint_at > 0 ? fmt::format("; last checkpoint {} bytes at {}", ev.checkpoint_bytes,
                                           format_time_iso(ev.checkpoint_at))
                             : "";
    record_job_event(job, ev.at ? ev.at : clock_.now_ms(), "exited",
                     fmt::format("rank {} on {}: {}{}", rank, replica.node_name, end, checkpoint));
    if (job.started_at == 0) job.started_at = ev.at ? ev.at : clock_.now_ms();
    logs_.wake(ev.key);
    settle_attempt(job, batch);
  }
}

void Server::leave_node(store::NodeRecord& node, const PollRequest& poll,
                        store::WriteBatch& batch) {
  TimeMs now = clock_.now_ms();
  if (node.state != "leaving" && node.state != "left") {
    spdlog::info("node {} is leaving: its agent is stopping", node.info.name);
    batch.audit.push_back({now, "server", "node.leave", node.id, "was " + node.state});
    node.state = "leaving";  // no new work from now on
    record_node_event(node.info.name, "leaving", "its agent is stopping");
    batch.nodes.push_back(node);
    node_changed(node.id);
    // Its jobs are interrupted (the agent has sent them the notice itself when it could not
    // wait for this answer) and re-queued at once when their replicas have stopped.
    for (Job* job_here : jobs_on(node.id)) {
      Job& job = *job_here;
      if (stop_requested(job) || is_terminal(job.state) || job.replicas.empty()) continue;
      job.interrupt_reason =
          fmt::format("node {} is leaving (its agent was stopped)", node.info.name);
      job.message = job.interrupt_reason;
      stop_replicas(job, interrupt_cause::kAgentShutdown, job.interrupt_reason);
      batch.jobs.push_back(job);
      batch.audit.push_back({now, "server", "job.interrupt", job.id, job.message});
    }
  }
  if (node.state == "leaving" && poll.running.empty()) {
    spdlog::info("node {} has left", node.info.name);
    batch.audit.push_back({now, "server", "node.left", node.id, ""});
    node.state = "left";
    record_node_event(node.info.name, "left", "its agent has stopped and nothing runs there");
    batch.nodes.push_back(node);
    node_changed(node.id);
  }
}

void Server::reconcile_running(const std::string& node_id, const PollRequest& poll,
                               store::WriteBatch& batch) {
  std::set<std::string> running(poll.running.begin(), poll.running.end());
  auto& rt = runtime_[node_id];
  std::vector<Job*> touched;  // a job once, however many of its replicas changed
  for (Job* job_here : jobs_on(node_id)) {
    Job& job = *job_here;
    bool changed = false;
    for (auto& replica : job.replicas) {
      if (replica.node_id != node_id || replica.state == ReplicaState::kExited) continue;
      std::string key = replica_key(job.id, job.attempt, replica.rank);
      if (running.count(key)) continue;
      bool stopping = attempt_ending(job);
      auto placed = rt.placed_at.find(key);
      int64_t placed_version = placed == rt.placed_at.end() ? 0 : placed->second;
      auto removed = rt.removed_at.find(key);
      if (stopping && removed != rt.removed_at.end() && poll.applied_version >= removed->second) {
        replica.state = ReplicaState::kExited;
        replica.message = "stopped before it started";
        logs_.wake(key);
        changed = true;
      } else if (!stopping && placed_version != 0 && poll.applied_version >= placed_version) {
        replica.state = ReplicaState::kExited;
        replica.lost = true;
        replica.message =
            fmt::format("the agent on {} no longer has the process and recorded no exit",
                        nodes_.at(node_id).info.name);
        logs_.wake(key);
        changed = true;
      }
    }
    if (changed) touched.push_back(job_here);
  }
  for (Job* job : touched) settle_attempt(*job, batch);
}

std::vector<Job*> Server::jobs_on(const std::string& node_id) {
  std::vector<Job*> out;
  auto rt = runtime_.find(node_id);
  if (rt == runtime_.end()) return out;
  auto& ids = rt->second.jobs;
  for (auto it = ids.begin(); it != ids.end();) {
    auto job = jobs_.find(*it);
    bool here = job != jobs_.end() &&
                std::any_of(job->second.replicas.begin(), job->second.replicas.end(),
                            [&](const ReplicaAssignment& r) {
                              return r.node_id == node_id && r.state != ReplicaState::kExited;
                            });
    if (!here) {
      it = ids.erase(it);
      continue;
    }
    out.push_back(&job->second);
    ++it;
  }
  return out;
}

std::vector<Allocation> Server::desired_for(const std::string& node_id) {
  std::vector<Allocation> out;
  for (const Job* job_here : jobs_on(node_id)) {
    const Job& job = *job_here;
    if (job.cancel_requested) continue;
    if (attempt_ending(job)) continue;
    for (const auto& r : job.replicas) {
      if (r.node_id != node_id || r.state == ReplicaState::kExited) continue;
      Allocation a;
      a.key = replica_key(job.id, job.attempt, r.rank);
      a.job_id = job.id;
      a.attempt = job.attempt;
      a.rank = r.rank;
      a.replicas = job.spec.replicas;
      a.command = job.spec.command;
      a.env = job.spec.env;
      a.workdir = job.spec.workdir;
      a.container = job.spec.container;
      a.gpus = r.gpus;
      if (!r.gpus.empty() && r.gpus.front().milli < 1000)
        a.gpu_memory_mib = job.spec.gpu_memory_mib;
      a.cpu_milli = r.cpu_milli;
      a.memory_mib = r.memory_mib;
      a.grace_ms = job.spec.grace_period_ms;
      a.max_runtime_ms = job.spec.max_runtime_ms;
      if (auto rank0 = nodes_.find(job.replicas.front().node_id); rank0 != nodes_.end())
        a.master_addr = rank0->second.info.address;
      a.master_port = master_port_for(job.id);
      a.tenant = job.spec.tenant;
      for (const auto& t : file_config_.tenants) {
        if (t.name != a.tenant) continue;
        a.uid = t.uid;
        a.gid = t.uid < 0 ? -1 : t.gid;
        a.allow_root = t.allow_root;
      }
      out.push_back(std::move(a));
    }
  }
  return out;
}

net::HttpResponse Server::poll_response(const std::string& node_id,
                                        const std::map<std::string, int64_t>& log_offsets) {
  PollResponse r;
  auto& rt = runtime_[node_id];
  r.version = rt.version;
  r.acked_seq = rt.acked_seq;
  r.allocations = desired_for(node_id);
  r.log_offsets = log_offsets;
  r.interrupts = rt.interrupts;
  r.warnings = rt.warnings;
  if (auto node = nodes_.find(node_id); node != nodes_.end()) r.node_state = node->second.state;
  return json_response(200, poll_response_to_json(r));
}

void Server::bump_node(const std::string& node_id) {
  auto& rt = runtime_[node_id];
  rt.version = ++version_clock_;
  if (rt.waiter) {
    auto w = std::move(rt.waiter);
    rt.waiter = nullptr;
    loop_.cancel(rt.waiter_timer);
    w(poll_response(node_id, {}));
  }
}

void Server::check_node_liveness() {
  TimeMs now = clock_.now_ms();
  store::WriteBatch batch;
  for (auto& [id, node] : nodes_) {
    TimeMs silent = now - node.last_seen;
    if ((node.state == "ready" || node.state == "leaving") &&
        silent > config_.unreachable_after_ms) {
      node.state = "unreachable";
      record_node_event(node.info.name, "unreachable", fmt::format("no poll for {} ms", silent));
      sched_dirty_nodes_.insert(id);  // takes no new work (told at the next pass)
      spdlog::warn("node {} is unreachable (no poll for {} ms)", node.info.name, silent);
      batch.nodes.push_back(node);
      batch.audit.push_back({now, "server", "node.unreachable", id, ""});
    }
    if (node.state == "unreachable" && silent > config_.down_after_ms) {
      node.state = "down";
      record_node_event(node.info.name, "down", "its attempts are lost");
      sched_dirty_nodes_.insert(id);
      spdlog::warn("node {} is down; its attempts are lost", node.info.name);
      batch.nodes.push_back(node);
      batch.audit.push_back({now, "server", "node.down", id, ""});
      std::vector<Job*> touched = jobs_on(id);  // all marked first, then settled
      for (Job* job : touched)
        for (auto& r : job->replicas)
          if (r.node_id == id && r.state != ReplicaState::kExited) {
            r.state = ReplicaState::kExited;
            r.lost = true;
            r.message = fmt::format("node {} went down (no contact for {} s)", node.info.name,
                                    silent / 1000);
          }
      for (Job* job : touched) settle_attempt(*job, batch);
    }
  }
  (void)commit(batch);
}

}  // namespace gpucloud::server
