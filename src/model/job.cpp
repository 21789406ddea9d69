#include "model/job.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpucloud {

using json = nlohmann::json;

const char* to_string(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "pending";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kLost:
      return "lost";
    case JobState::kIdleReclaimed:
      return "idle-reclaimed";
  }
  return "pending";
}

Result<JobState> job_state_from_string(const std::string& s) {
  for (auto st : {JobState::kPending, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                  JobState::kCancelled, JobState::kLost, JobState::kIdleReclaimed})
    if (s == to_string(st)) return st;
  return invalid("unknown job state '" + s + "'");
}

const char* to_string(ReplicaState s) {
  switch (s) {
    case ReplicaState::kAssigned:
      return "assigned";
    case ReplicaState::kRunning:
      return "running";
    case ReplicaState::kExited:
      return "exited";
  }
  return "assigned";
}

bool replica_failed(const ReplicaAssignment& r) {
  return r.state == ReplicaState::kExited &&
         (r.lost || r.exit_code.value_or(0) != 0 || r.end_reason == "max_runtime");
}

void add_job_event(Job& job, TimeMs at, std::string type, std::string message) {
  if (job.events.size() >= kMaxJobEvents) job.events.erase(job.events.begin() + 1);
  job.events.push_back({at, std::move(type), std::move(message)});
}

bool stop_requested(const Job& job) {
  return job.cancel_requested || !job.interrupt_reason.empty() || !job.reclaim_reason.empty() ||
         !job.cost_limit_reason.empty();
}

bool attempt_ending(const Job& job) {
  return stop_requested(job) ||
         std::any_of(job.replicas.begin(), job.replicas.end(), replica_failed);
}

namespace {

json time_or_null(TimeMs t) {
  return t ? json(format_time_iso(t)) : json(nullptr);
}

}  // namespace

json job_to_json(const Job& job) {
  json replicas = json::array();
  for (const auto& r : job.replicas) {
    json gpus = json::array();
    for (const auto& g : r.gpus)
      gpus.push_back({{"index", g.index}, {"uuid", g.uuid}, {"milli", g.milli}});
    replicas.push_back({{"rank", r.rank},
                        {"node", r.node_name},
                        {"node_id", r.node_id},
                        {"gpus", gpus},
                        {"cpu_milli", r.cpu_milli},
                        {"memory_mib", r.memory_mib},
                        {"state", to_string(r.state)},
                        {"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
                        {"lost", r.lost},
                        {"end_reason", r.end_reason},
                        {"message", r.message},
                        {"checkpoint_at_ms", r.checkpoint_at},
                        {"checkpoint_bytes", r.checkpoint_bytes},
                        {"interrupt_cause", r.interrupt_cause},
                        {"usd_per_hour", r.usd_per_hour},
                        {"on_demand_usd_per_hour", r.on_demand_usd_per_hour},
                        {"gpu_model", r.gpu_model}});
  }
  json attempts = json::array();
  for (const auto& a : job.attempts)
    attempts.push_back({{"attempt", a.attempt},
                        {"nodes", a.nodes},
                        {"started_at", time_or_null(a.started_at)},
                        {"ended_at", time_or_null(a.ended_at)},
                        {"started_at_ms", a.started_at},
                        {"ended_at_ms", a.ended_at},
                        {"end", a.end},
                        {"cause", a.cause},
                        {"checkpoint_committed", a.checkpoint_committed},
                        {"checkpoint_at_ms", a.checkpoint_at},
                        {"checkpoint_bytes", a.checkpoint_bytes},
                        {"gpu_seconds_lost", a.gpu_seconds_lost},
                        {"price_per_hour", a.price_per_hour},
                        {"cost_usd", a.cost_usd}});
  json events = json::array();
  for (const auto& e : job.events)
    events.push_back(
        {{"at", time_or_null(e.at)}, {"at_ms", e.at}, {"type", e.type}, {"message", e.message}});
  return {{"id", job.id},
          {"name", job.spec.name},
          {"tenant", job.spec.tenant},
          {"state", to_string(job.state)},
          {"exit_code", job.exit_code ? json(*job.exit_code) : json(nullptr)},
          {"pending_reason",
           job.state == JobState::kPending ? json(job.pending_reason) : json(nullptr)},
          {"message", job.message},
          {"attempt", job.attempt},
          {"replicas", replicas},
          {"created_at", time_or_null(job.created_at)},
          {"started_at", time_or_null(job.started_at)},
          {"finished_at", time_or_null(job.finished_at)},
          {"created_at_ms", job.created_at},
          {"started_at_ms", job.started_at},
          {"finished_at_ms", job.finished_at},
          {"cancel_requested", job.cancel_requested},
          {"interrupt_reason", job.interrupt_reason},
          {"reclaim_reason", job.reclaim_reason},
          {"cost_limit_reason", job.cost_limit_reason},
          {"interruptions", job.interruptions},
          {"attained_gpu_ms", job.attained_gpu_ms},
          {"idle_since_ms", job.idle_since},
          {"attempts", attempts},
          {"events", events},
          {"submitted_by", job.submitted_by},
          {"spec", job_spec_to_json(job.spec)}};
}

Result<Job> job_from_json(const json& j) {
  try {
    Job job;
    job.id = j.at("id").get<std::string>();
    auto spec = job_spec_from_json(j.at("spec"));
    if (!spec) return spec.error();
    job.spec = std::move(*spec);
    auto state = job_state_from_string(j.at("state").get<std::string>());
    if (!state) return state.error();
    job.state = *state;
    if (!j.at("exit_code").is_null()) job.exit_code = j.at("exit_code").get<int>();
    if (j.at("pending_reason").is_string())
      job.pending_reason = j.at("pending_reason").get<std::string>();
    job.message = j.value("message", "");
    job.attempt = j.at("attempt").get<int>();
    job.created_at = j.at("created_at_ms").get<TimeMs>();
    job.started_at = j.at("started_at_ms").get<TimeMs>();
    job.finished_at = j.at("finished_at_ms").get<TimeMs>();
    job.cancel_requested = j.value("cancel_requested", false);
    job.interrupt_reason = j.value("interrupt_reason", "");
    job.reclaim_reason = j.value("reclaim_reason", "");
    job.cost_limit_reason = j.value("cost_limit_reason", "");
    job.interruptions = j.value("interruptions", 0);
    job.attained_gpu_ms = j.value("attained_gpu_ms", int64_t{0});
    job.submitted_by = j.value("submitted_by", "");
    for (const auto& r : j.at("replicas")) {
      ReplicaAssignment a;
      a.rank = r.at("rank").get<int>();
      a.node_name = r.at("node").get<std::string>();
      a.node_id = r.at("node_id").get<std::string>();
      a.cpu_milli = r.at("cpu_milli").get<int64_t>();
      a.memory_mib = r.at("memory_mib").get<int64_t>();
      std::string st = r.at("state").get<std::string>();
      a.state = st == "running"  ? ReplicaState::kRunning
                : st == "exited" ? ReplicaState::kExited
                                 : ReplicaState::kAssigned;
      if (!r.at("exit_code").is_null()) a.exit_code = r.at("exit_code").get<int>();
      a.lost = r.value("lost", false);
      a.end_reason = r.value("end_reason", "");
      a.message = r.value("message", "");
      a.checkpoint_at = r.value("checkpoint_at_ms", int64_t{0});
      a.checkpoint_bytes = r.value("checkpoint_bytes", int64_t{0});
      a.interrupt_cause = r.value("interrupt_cause", "");
      a.usd_per_hour = r.value("usd_per_hour", -1.0);
      a.on_demand_usd_per_hour = r.value("on_demand_usd_per_hour", -1.0);
      a.gpu_model = r.value("gpu_model", "");
      for (const auto& g : r.at("gpus"))
        a.gpus.push_back(
            {g.at("index").get<int>(), g.at("uuid").get<std::string>(), g.at("milli").get<int>()});
      job.replicas.push_back(std::move(a));
    }
    for (const auto& r : j.value("attempts", json::array())) {
      AttemptRecord a;
      a.attempt = r.at("attempt").get<int>();
      a.nodes = r.at("nodes").get<std::vector<std::string>>();
      a.started_at = r.at("started_at_ms").get<TimeMs>();
      a.ended_at = r.at("ended_at_ms").get<TimeMs>();
      a.end = r.at("end").get<std::string>();
      a.cause = r.value("cause", "");
      a.checkpoint_committed = r.value("checkpoint_committed", false);
      a.checkpoint_at = r.value("checkpoint_at_ms", TimeMs{0});
      a.checkpoint_bytes = r.value("checkpoint_bytes", int64_t{0});
      a.gpu_seconds_lost = r.value("gpu_seconds_lost", 0.0);
      a.price_per_hour = r.value("price_per_hour", 0.0);
      a.cost_usd = r.value("cost_usd", 0.0);
      job.attempts.push_back(std::move(a));
    }
    for (const auto& e : j.value("events", json::array()))
      job.events.push_back({e.at("at_ms").get<TimeMs>(), e.at("type").get<std::string>(),
                            e.at("message").get<std::string>()});
    return job;
  } catch (const json::exception& e) {
    return internal(std::string("stored job record is malformed: ") + e.what());
  }
}

}  // namespace gpucloud
