// The jobs and nodes API: submit, list, show, cancel, logs, nodes.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/units.h"
#include "model/node_json.h"
#include "server/http_util.h"
#include "server/server.h"

namespace gpucloud::server {

using json = nlohmann::json;

net::HttpResponse Server::submit_job(const net::HttpRequest& req, const Principal& who) {
  auto body = parse_json_body(req.body);
  if (!body) return error_response(body.error());
  auto spec = job_spec_from_json(*body);
  if (!spec) return error_response(spec.error());
  // A member who named no tenant submits for its first one.
  if (spec->tenant == "default" && !who.may_act_for("default") && !who.tenants.empty() &&
      !body->contains("tenant"))
    spec->tenant = who.tenants.front();
  if (!who.may_act_for(spec->tenant))
    return error_response({ErrorCode::kPermissionDenied,
                           fmt::format("tenant: token '{}' may not submit jobs for tenant '{}'",
                                       who.name, spec->tenant)});
  if (auto window =
          idle_window_for(file_config_.idle_policy_for(spec->tenant), spec->idle_timeout_ms);
      !window)
    return error_response(window.error());
  TimeMs now = clock_.now_ms();
  Job job;
  job.id = ids_.next(now);
  job.spec = std::move(*spec);
  job.created_at = now;
  job.submitted_by = who.name;
  record_job_event(job, now, "submitted",
                   fmt::format("by {} for tenant {}", who.name, job.spec.tenant));
  auto priority = file_config_.priority_value(job.spec.priority);
  if (!priority) return error_response(priority.error());
  auto request = sched::JobRequest::from_spec(job.id, job.spec, now, *priority);
  if (auto st = sched::check_satisfiable(request, node_builds()); !st.ok())
    return error_response(st.error());
  if (req.query.count("dry_run")) return json_response(200, dry_run(job, request));
  job.pending_reason =
      nodes_.empty() ? "waiting for a node to register" : "waiting to be scheduled";
  if (auto held = budget_held_.find(job.spec.tenant); held != budget_held_.end())
    job.pending_reason = held->second;
  else
    admit_by_budget(job);
  store::WriteBatch batch;
  batch.jobs.push_back(job);
  batch.audit.push_back({now, who.name, "job.submit", job.id,
                         fmt::format("tenant {} name {}", job.spec.tenant, job.spec.name)});
  if (auto st = commit(batch); !st.ok()) return error_response(st.error());
  spdlog::debug("job {} submitted", job.id);
  metrics_->job_submitted(job.spec.tenant);
  auto response = json_response(201, job_to_json(job));
  jobs_.emplace(job.id, std::move(job));
  schedule_soon();
  return response;
}

void Server::list_jobs(const net::HttpRequest& req, const Principal& who, net::Responder respond) {
  auto flag = [&](const char* name) {
    auto it = req.query.find(name);
    return it != req.query.end() && it->second != "0" && it->second != "false";
  };
  bool all = flag("all");
  int limit = kDefaultJobPage;
  if (auto it = req.query.find("limit"); it != req.query.end()) {
    auto parsed = parse_whole_param(it->second, kMaxJobPage);
    if (!parsed || *parsed < 1 || *parsed > kMaxJobPage)
      return respond(
          error_response(invalid(fmt::format("limit: '{}' is not a whole number from 1 to {}",
                                             it->second.substr(0, 32), kMaxJobPage))));
    limit = static_cast<int>(*parsed);
  }
  std::string cursor = req.query.count("cursor") ? req.query.at("cursor") : "";
  if (!cursor.empty() && (!looks_like_id_prefix(cursor) || cursor.size() > 64))
    return respond(error_response(invalid(
        "cursor: not a cursor this server gave out; pass the next_cursor of the last page")));
  // The tenants whose jobs the caller sees: empty means every tenant.
  std::vector<std::string> tenants;
  std::string tenant = req.query.count("tenant") ? req.query.at("tenant") : "";
  if (!tenant.empty()) {
    if (who.may_act_for(tenant)) tenants.push_back(tenant);
  } else if (!who.is_admin()) {
    tenants = who.tenants;
  }
  if (tenants.empty() && (!tenant.empty() || !who.is_admin()))
    return respond(json_response(200, {{"jobs", json::array()}}));
  auto visible = [&](const Job& j) {
    return tenants.empty() ||
           std::find(tenants.begin(), tenants.end(), j.spec.tenant) != tenants.end();
  };
  // The active jobs of the page (newest first), copied: the answer is built off the loop.
  // One more than the page, to tell whether another page follows.
  std::vector<Job> active;
  auto it = cursor.empty() ? jobs_.end() : jobs_.lower_bound(cursor);
  while (it != jobs_.begin() && static_cast<int>(active.size()) <= limit) {
    --it;
    if (visible(it->second)) active.push_back(it->second);
  }
  auto answer = std::make_shared<net::Responder>(std::move(respond));
  bool queued = background_->post([this, all, limit, cursor, tenants = std::move(tenants),
                                   active = std::move(active), answer]() mutable {
    auto& respond = *answer;
    try {
      std::vector<Job> page = std::move(active);
      if (all) {
        auto finished = read_store_->finished_jobs_page(cursor, tenants, limit + 1);
        if (!finished) return respond(error_response(finished.error()));
        // A job that ended since the copy is in both: its stored, final version wins.
        std::set<std::string> ended;
        for (const auto& j : *finished) ended.insert(j.id);
        std::erase_if(page, [&](const Job& j) { return ended.count(j.id) > 0; });
        page.insert(page.end(), std::make_move_iterator(finished->begin()),
                    std::make_move_iterator(finished->end()));
        std::sort(page.begin(), page.end(), [](const Job& a, const Job& b) { return a.id > b.id; });
      }
      json out = {{"jobs", json::array()}};
      for (int i = 0; i < static_cast<int>(page.size()) && i < limit; ++i)
        out["jobs"].push_back(job_to_json(page[i]));
      if (static_cast<int>(page.size()) > limit) out["next_cursor"] = page[limit - 1].id;
      respond(json_response(200, out));
    } catch (const std::exception& e) {
      respond(error_response(internal(std::string("listing jobs failed: ") + e.what())));
    }
  });
  if (!queued)
    (*answer)(error_response(
        {ErrorCode::kUnavailable, "too many large reads in progress; retry in a moment"}));
}

Result<Job> Server::find_visible_job(const std::string& id_or_prefix, const Principal& who) {
  auto hidden = [&] {
    return not_found(
        fmt::format("no job '{}' (see gpucloud ps --all)", id_or_prefix.substr(0, 64)));
  };
  if (!looks_like_id_prefix(id_or_prefix)) return hidden();
  std::vector<Job> matches;
  if (auto it = jobs_.find(id_or_prefix); it != jobs_.end()) {
    matches.push_back(it->second);
  } else {
    for (auto it2 = jobs_.lower_bound(id_or_prefix);
         it2 != jobs_.end() && it2->first.rfind(id_or_prefix, 0) == 0; ++it2)
      matches.push_back(it2->second);
    // Enough to find the caller's own job among other tenants' jobs with the same prefix.
    auto stored = store_->find_jobs_by_prefix(id_or_prefix, 50);
    if (!stored) return stored.error();
    for (auto& j : *stored)
      if (!jobs_.count(j.id)) matches.push_back(std::move(j));
  }
  std::erase_if(matches, [&](const Job& j) { return !who.may_act_for(j.spec.tenant); });
  if (matches.empty()) return hidden();
  if (matches.size() > 1 && matches[0].id != id_or_prefix)
    return invalid(
        fmt::format("job id prefix '{}' is ambiguous ({} and {} match); type more of the id",
                    id_or_prefix, matches[0].id, matches[1].id));
  return std::move(matches[0]);
}

net::HttpResponse Server::cancel_job(const std::string& id_or_prefix, const Principal& who) {
  auto found = find_visible_job(id_or_prefix, who);
  if (!found) return error_response(found.error());
  auto it = jobs_.find(found->id);
  if (it == jobs_.end())
    return error_response({ErrorCode::kConflict, fmt::format("job {} has already ended ({})",
                                                             found->id, to_string(found->state))});
  Job& job = it->second;
  store::WriteBatch batch;
  batch.audit.push_back({clock_.now_ms(), who.name, "job.cancel", job.id, ""});
  if (job.replicas.empty()) {
    end_job(job, JobState::kCancelled, std::nullopt,
            fmt::format("cancelled by {} before it started", who.name), batch);
  } else if (!job.cancel_requested) {
    job.cancel_requested = true;
    job.message = fmt::format("cancel requested by {}; stopping (grace period {})", who.name,
                              format_duration_ms(job.spec.grace_period_ms));
    record_job_event(job, clock_.now_ms(), "cancel-requested", job.message);
    stop_replicas(job, interrupt_cause::kCancel, job.message);
    batch.jobs.push_back(job);
  }
  json out = job_to_json(job);
  if (auto st = commit(batch); !st.ok()) return error_response(st.error());
  return json_response(202, out);
}

void Server::job_logs(const net::HttpRequest& req, const std::string& id, const Principal& who,
                      net::Responder respond) {
  auto found = find_visible_job(id, who);
  if (!found) return respond(error_response(found.error()));
  auto int_param = [&](const char* name, int64_t def, int64_t lo, int64_t hi) -> Result<int64_t> {
    auto it = req.query.find(name);
    if (it == req.query.end()) return def;
    try {
      size_t used = 0;
      int64_t v = std::stoll(it->second, &used);
      if (used != it->second.size() || v < lo || v > hi) throw std::out_of_range("");
      return v;
    } catch (...) {
      return invalid(fmt::format("{}: '{}' is not a whole number in {}..{}", name,
                                 it->second.substr(0, 32), lo, hi));
    }
  };
  auto offset = int_param("offset", 0, 0, INT64_MAX / 2);
  auto rank = int_param("rank", 0, 0, found->spec.replicas - 1);
  auto attempt = int_param("attempt", found->attempt, 1, found->attempt);
  auto wait_ms = int_param("wait_ms", 20'000, 0, 60'000);
  auto limit = int_param("limit", 1 << 20, 1, 16 << 20);
  for (auto* r : {&offset, &rank, &attempt, &wait_ms, &limit})
    if (!r->ok()) return respond(error_response(r->error()));
  bool follow = req.query.count("follow") && req.query.at("follow") != "0" &&
                req.query.at("follow") != "false";
  std::string key = replica_key(found->id, static_cast<int>(*attempt), static_cast<int>(*rank));
  std::string job_id = found->id;
  int current_attempt = found->attempt;
  int64_t from = *offset, max_bytes = *limit;
  // Answers with what is there; "done" once the replica can write no more.
  auto answer = [this, key, job_id, from, max_bytes, rank = static_cast<int>(*rank),
                 attempt = static_cast<int>(*attempt)](net::Responder& respond) {
    auto data = logs_.read(key, from, max_bytes);
    if (!data) return respond(error_response(data.error()));
    bool done = true;
    if (auto it = jobs_.find(job_id); it != jobs_.end() && attempt == it->second.attempt) {
      const Job& job = it->second;
      done = false;
      if (rank < static_cast<int>(job.replicas.size()) &&
          job.replicas[rank].state == ReplicaState::kExited)
        done = true;
    }
    int64_t next = from + static_cast<int64_t>(data->size());
    done = done && next >= logs_.size(key);
    net::HttpResponse r;
    r.content_type = "application/octet-stream";
    r.body = std::move(*data);
    r.headers.push_back({"X-Gpucloud-Offset", std::to_string(next)});
    r.headers.push_back({"X-Gpucloud-Done", done ? "1" : "0"});
    respond(std::move(r));
  };
  bool has_data = logs_.size(key) > from;
  bool live = false;
  if (auto it = jobs_.find(job_id); it != jobs_.end() && *attempt == current_attempt) {
    const auto& replicas = it->second.replicas;
    live = replicas.empty() || *rank >= static_cast<int64_t>(replicas.size()) ||
           replicas[*rank].state != ReplicaState::kExited;
  }
  if (!follow || has_data || !live || *wait_ms == 0) return answer(respond);
  auto shared = std::make_shared<net::Responder>(std::move(respond));
  auto fired = std::make_shared<bool>(false);
  auto fire = [answer, shared, fired]() mutable {
    if (*fired) return;
    *fired = true;
    answer(*shared);
  };
  uint64_t waiter = logs_.on_next_append(key, fire);
  loop_.run_after(*wait_ms, [this, key, waiter, fire]() mutable {
    logs_.cancel_waiter(key, waiter);
    fire();
  });
}

net::HttpResponse Server::list_nodes(const Principal& who) {
  json out = json::array();
  auto states = node_states();
  std::map<std::string, std::vector<std::string>> gpu_jobs;  // "<node>/<index>" -> job ids
  for (const auto& [id, job] : jobs_) {
    if (!who.may_act_for(job.spec.tenant)) continue;  // other tenants' jobs stay invisible
    for (const auto& r : job.replicas)
      if (r.state != ReplicaState::kExited)
        for (const auto& g : r.gpus)
          gpu_jobs[r.node_id + "/" + std::to_string(g.index)].push_back(job.id);
  }
  for (const auto& st : states) {
    const auto& rec = nodes_.at(st.id);
    json gpus = json::array();
    for (size_t i = 0; i < st.gpus.size(); ++i) {
      const auto& g = rec.info.gpus[i];
      gpus.push_back({{"index", g.index},
                      {"uuid", g.uuid},
                      {"name", g.name},
                      {"model", g.model},
                      {"memory_mib", g.memory_mib},
                      {"numa_node", g.numa_node},
                      {"nvlink_peers", g.nvlink_peers},
                      {"pci_bus_id", g.pci_bus_id},
                      {"mig", json::array()},
                      {"used_milli", st.gpus[i].used_milli},
                      {"jobs", gpu_jobs[st.id + "/" + std::to_string(g.index)]}});
      for (const auto& reading : runtime_[st.id].readings)
        if (reading.index == g.index) {
          auto& out_gpu = gpus.back();
          out_gpu["utilization_pct"] = reading.utilization_pct;
          out_gpu["memory_used_mib"] = reading.memory_used_mib;
          out_gpu["temperature_c"] = reading.temperature_c;
          out_gpu["power_w"] = reading.power_w;
        }
      for (const auto& m : g.mig)
        gpus.back()["mig"].push_back(
            {{"uuid", m.uuid}, {"profile", m.profile}, {"memory_mib", m.memory_mib}});
      if (g.mig_parent >= 0) gpus.back()["mig_parent"] = g.mig_parent;
    }
    out.push_back({{"id", rec.id},
                   {"name", rec.info.name},
                   {"hostname", rec.info.hostname},
                   {"address", rec.info.address},
                   {"state", rec.state},
                   {"cordoned", rec.cordoned},
                   {"gpu_backend", rec.info.gpu_backend},
                   {"driver_version", rec.info.driver_version},
                   {"cuda_version", rec.info.cuda_version},
                   {"cpu_milli", st.cpu_milli},
                   {"cpu_used_milli", st.cpu_used_milli},
                   {"memory_mib", st.memory_mib},
                   {"memory_used_mib", st.memory_used_mib},
                   {"labels", rec.info.labels},
                   {"last_seen", format_time_iso(rec.last_seen)},
                   {"gpu_sharing", rec.info.gpu_sharing},
                   {"gpus", gpus}});
    if (!rec.info.doctor.empty()) {
      out.back()["doctor"] = node_checks_to_json(rec.info.doctor);
      out.back()["doctor_status"] = rec.info.doctor_status();
    }
    if (const NodeCheck* failed = rec.info.failed_check())
      out.back()["unschedulable_reason"] =
          fmt::format("doctor: {} failed: {}; fix: {}", failed->name, failed->why, failed->fix);
    if (rec.price.usd_per_hour >= 0) {
      out.back()["price_per_hour"] = rec.price.usd_per_hour;
      out.back()["price_source"] = rec.price.source;
      if (st.price_per_gpu_hour >= 0) out.back()["price_per_gpu_hour"] = st.price_per_gpu_hour;
    }
  }
  return json_response(200, {{"nodes", out}});
}

net::HttpResponse Server::list_tenants(const Principal& who) {
  // GPUs in use per tenant and model, from the replicas that hold resources now.
  std::map<std::string, std::map<std::string, double>> used;
  std::map<std::string, std::pair<int, int>> counts;  // pending, running
  for (const auto& [id, job] : jobs_) {
    auto& c = counts[job.spec.tenant];
    (job.state == JobState::kRunning ? c.second : c.first) += 1;
    for (const auto& r : job.replicas) {
      if (r.state == ReplicaState::kExited) continue;
      auto node = nodes_.find(r.node_id);
      for (const auto& g : r.gpus) {
        std::string model = "GPU";
        if (node != nodes_.end())
          for (const auto& gpu : node->second.info.gpus)
            if (gpu.index == g.index) model = gpu.model;
        used[job.spec.tenant][model] += g.milli / 1000.0;
      }
    }
  }
  std::vector<TenantConfig> tenants = file_config_.tenants;
  if (std::none_of(tenants.begin(), tenants.end(),
                   [](const TenantConfig& t) { return t.name == "default"; }))
    tenants.insert(tenants.begin(), TenantConfig{"default", 1, "", {}, {}});
  json out = json::array();
  for (const auto& t : tenants) {
    if (!who.may_act_for(t.name)) continue;
    // The quota in force (a quota window's, in one), and its windows and next change.
    json quota = quota_window_json(t);
    const auto in_force = quota["quota"].get<std::map<std::string, int>>();
    // Use above the nominal quota is borrowed from the cohort (only with a quota).
    std::map<std::string, double> borrowed;
    if (!in_force.empty() || !t.borrowing_limit.empty())
      for (const auto& [model, gpus] : used[t.name]) {
        auto q = in_force.find(model);
        double over = gpus - (q == in_force.end() ? 0 : q->second);
        if (over > 1e-9) borrowed[model] = over;
      }
    json entry = {{"name", t.name},
                  {"weight", t.weight},
                  {"cohort", t.cohort},
                  {"borrowing_limit", t.borrowing_limit},
                  {"gpus_in_use", used[t.name]},
                  {"borrowed", borrowed},
                  {"pending_jobs", counts[t.name].first},
                  {"running_jobs", counts[t.name].second}};
    entry.update(quota);
    out.push_back(std::move(entry));
  }
  return json_response(200, {{"tenants", out}});
}

}  // namespace gpucloud::server
