// GET /metrics: who may read it, and the gauges computed from the server's state at scrape
// time (the loop thread owns that state, so no lock is taken).
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "metrics/exposition.h"
#include "metrics/gauge_set.h"
#include "metrics/token_file.h"
#include "net/crypto.h"
#include "server/http_util.h"
#include "server/server.h"

#ifndef GPUCLOUD_VERSION
#define GPUCLOUD_VERSION "unknown"
#endif

namespace gpucloud::server {

namespace {

// The states a node record takes (store::NodeRecord::state), shown even when no node has them.
const char* const kNodeStates[] = {"ready",   "unreachable", "down", "interrupting",
                                   "leaving", "left",        "gone"};

}  // namespace

Status Server::load_metrics_token() {
  const std::string& path = config_.metrics_token_file;
  if (path.empty()) return {};
  auto token = metrics::read_token_file(path, "--metrics-token-file");
  if (!token) return token.error();
  metrics_token_sha256_ = net::sha256_hex(*token);
  return {};
}

std::optional<net::HttpResponse> Server::metrics_refusal(const net::HttpRequest& req) const {
  bool has_body = !req.header("transfer-encoding").empty() ||
                  (!req.header("content-length").empty() && req.header("content-length") != "0");
  if ((req.method != "GET" && req.method != "HEAD") || has_body) {
    auto r = error_response(
        {ErrorCode::kInvalidArgument, req.path + " accepts only GET or HEAD, without a body"});
    r.status = 405;
    r.headers.push_back({"Allow", "GET, HEAD"});
    return r;
  }
  if (config_.metrics_public) return std::nullopt;
  std::string authorization = req.header("authorization");
  const std::string bearer = "Bearer ";
  if (!metrics_token_sha256_.empty() && authorization.rfind(bearer, 0) == 0 &&
      net::constant_time_equal(net::sha256_hex(authorization.substr(bearer.size())),
                               metrics_token_sha256_))
    return std::nullopt;
  auto who = auth_.authenticate(authorization, clock_.now_ms());
  if (!who) return unauthenticated(req);
  if (!who->is_admin())
    return error_response(
        {ErrorCode::kPermissionDenied,
         fmt::format("{} shows every tenant's use: token '{}' ({}) may not read it; use the "
                     "admin token or the server's --metrics-token-file token (docs/metrics.md)",
                     req.path, who->name, who->role)});
  return std::nullopt;
}

net::HttpResponse Server::serve_metrics(const net::HttpRequest& req) const {
  using metrics::GaugeSet;
  GaugeSet jobs("gpucloud_jobs", "Active jobs by state (pending, running) and tenant.");
  GaugeSet oldest_pending("gpucloud_jobs_oldest_pending_age_seconds",
                          "How long the longest-waiting pending job of a tenant has waited "
                          "(since submission, or since its last attempt ended); 0 with none.");
  GaugeSet nodes("gpucloud_nodes", "Registered nodes by state.");
  GaugeSet cordoned("gpucloud_nodes_cordoned", "Registered nodes that take no new work.");
  GaugeSet capacity("gpucloud_gpus_capacity", "GPUs on ready nodes, by model.");
  GaugeSet allocated("gpucloud_gpus_allocated",
                     "GPUs held by running or starting replicas, by model, tenant and mode "
                     "(whole GPUs, or shared: the sum of milli-GPU shares / 1000).");
  GaugeSet allocated_milli("gpucloud_gpu_milli_allocated",
                           "Milli-GPUs held by running or starting replicas (1000 per whole "
                           "GPU), by model and tenant.");
  GaugeSet free_gpus("gpucloud_gpus_free",
                     "GPUs free for new work on ready, uncordoned nodes, by model and mode "
                     "(whole: wholly free GPUs; shared: the free part of partly used ones).");
  GaugeSet quota("gpucloud_tenant_quota_gpus", "A tenant's nominal GPU quota, by model.");
  GaugeSet borrowing_limit("gpucloud_tenant_borrowing_limit_gpus",
                           "GPUs a tenant may borrow from its cohort, by model.");
  GaugeSet borrowed("gpucloud_tenant_borrowed_gpus",
                    "GPUs a tenant with a quota uses above it (borrowed from its cohort), by "
                    "model.");
  GaugeSet weight("gpucloud_tenant_weight", "A tenant's fair-share weight.");
  GaugeSet budget("gpucloud_tenant_budget_usd", "A tenant's monthly budget in USD.");
  GaugeSet month_spend("gpucloud_tenant_month_spend_usd",
                       "What a budgeted tenant has spent this month (UTC) in USD, running "
                       "attempts included, as of the last budget check (every 2 s).");
  GaugeSet budget_held("gpucloud_tenant_budget_held_jobs",
                       "Pending jobs a tenant's budget holds: all of them at a hard cap, or "
                       "those whose worst case is more than what is left.");
  GaugeSet connections("gpucloud_api_connections_open", "Open API connections.");
  GaugeSet build("gpucloud_build_info", "The running gpucloud's version; always 1.");
  GaugeSet cert_expiry("gpucloud_tls_certificate_expiry_timestamp_seconds",
                       "When the certificate the API serves expires (its notAfter), in seconds "
                       "since the epoch. Absent without TLS.");

  std::vector<TenantConfig> tenants = file_config_.tenants;
  if (std::none_of(tenants.begin(), tenants.end(),
                   [](const TenantConfig& t) { return t.name == "default"; }))
    tenants.insert(tenants.begin(), TenantConfig{"default", 1, "", {}, {}});
  for (const auto& t : tenants) {
    for (const char* state : {"pending", "running"})
      jobs.touch({{"state", state}, {"tenant", t.name}});
    oldest_pending.touch({{"tenant", t.name}});
  }
  for (const char* state : kNodeStates) nodes.touch({{"state", state}});
  cordoned.touch({});

  auto model_of = [&](const std::string& node_id, int index) -> std::string {
    auto node = nodes_.find(node_id);
    if (node != nodes_.end())
      for (const auto& gpu : node->second.info.gpus)
        if (gpu.index == index) return gpu.model;
    return "unknown";
  };
  // Sums in whole milli-GPUs, divided once: ten 100-milli shares make exactly 1 GPU.
  std::map<std::string, std::map<std::string, int64_t>> used_milli;  // tenant -> model -> milli
  std::map<prometheus::Labels, int64_t> held_milli;                  // model, tenant, mode
  std::map<std::string, TimeMs> pending_since;  // tenant -> the oldest pending job's start
  for (const auto& [id, job] : jobs_) {
    if (is_terminal(job.state)) continue;
    // A job whose latest attempt has not ended is placed (starting), no longer waiting.
    if (job.state == JobState::kPending &&
        (job.attempts.empty() || job.attempts.back().ended_at > 0)) {
      TimeMs since = job.attempts.empty() ? job.created_at : job.attempts.back().ended_at;
      auto [it, added] = pending_since.emplace(job.spec.tenant, since);
      if (!added) it->second = std::min(it->second, since);
    }
    jobs.add({{"state", job.state == JobState::kRunning ? "running" : "pending"},
              {"tenant", job.spec.tenant}},
             1);
    for (const auto& r : job.replicas) {
      if (r.state == ReplicaState::kExited) continue;
      for (const auto& g : r.gpus) {
        std::string model = model_of(r.node_id, g.index);
        held_milli[{{"model", model},
                    {"tenant", job.spec.tenant},
                    {"mode", g.milli >= 1000 ? "whole" : "shared"}}] += g.milli;
        used_milli[job.spec.tenant][model] += g.milli;
      }
    }
  }
  for (const auto& [tenant, since] : pending_since)
    oldest_pending.add({{"tenant", tenant}},
                       static_cast<double>(std::max<TimeMs>(0, clock_.now_ms() - since)) / 1000);
  for (const auto& [labels, milli] : held_milli) {
    allocated.add(labels, static_cast<double>(milli) / 1000);
    allocated_milli.add({{"model", labels.at("model")}, {"tenant", labels.at("tenant")}},
                        static_cast<double>(milli));
  }
  std::map<std::string, int64_t> free_shared_milli;  // model -> milli
  for (const auto& n : node_states()) {
    const auto& rec = nodes_.at(n.id);
    nodes.add({{"state", rec.state}}, 1);
    if (rec.cordoned) cordoned.add({}, 1);
    if (rec.state != "ready") continue;
    for (const auto& g : n.gpus) {
      capacity.add({{"model", g.model}}, 1);
      free_gpus.touch({{"model", g.model}, {"mode", "whole"}});
      free_gpus.touch({{"model", g.model}, {"mode", "shared"}});
      if (!n.schedulable) continue;
      if (g.used_milli <= 0)
        free_gpus.add({{"model", g.model}, {"mode", "whole"}}, 1);
      else if (g.used_milli < 1000)
        free_shared_milli[g.model] += 1000 - g.used_milli;
    }
  }
  for (const auto& [model, milli] : free_shared_milli)
    free_gpus.add({{"model", model}, {"mode", "shared"}}, static_cast<double>(milli) / 1000);
  for (const auto& t : tenants) {
    weight.add({{"tenant", t.name}}, t.weight);
    // The quota in force: a quota window's while it is open (docs/config.md).
    auto in_force = quota_in_force_.find(t.name);
    const auto& nominal = in_force != quota_in_force_.end() ? in_force->second : t.quota;
    for (const auto& [model, gpus] : nominal)
      quota.add({{"tenant", t.name}, {"model", model}}, gpus);
    for (const auto& [model, gpus] : t.borrowing_limit)
      borrowing_limit.add({{"tenant", t.name}, {"model", model}}, gpus);
    if (nominal.empty() && t.borrowing_limit.empty()) continue;
    for (const auto& [model, milli] : used_milli[t.name]) {
      auto q = nominal.find(model);
      int64_t over = milli - (q == nominal.end() ? 0 : int64_t{q->second} * 1000);
      borrowed.add({{"tenant", t.name}, {"model", model}},
                   over > 0 ? static_cast<double>(over) / 1000 : 0);
    }
  }
  for (const auto& t : file_config_.tenants) {
    if (!t.budget) continue;
    budget.add({{"tenant", t.name}}, t.budget->monthly_usd);
    auto spent = budget_spent_.find(t.name);
    month_spend.add({{"tenant", t.name}}, spent == budget_spent_.end() ? 0 : spent->second);
    budget_held.touch({{"tenant", t.name}});
  }
  for (const auto& [id, job] : jobs_)
    if (job.state == JobState::kPending && job.replicas.empty() &&
        (budget_held_.count(job.spec.tenant) || cost_held_.count(id)))
      budget_held.add({{"tenant", job.spec.tenant}}, 1);
  if (http_) connections.add({}, static_cast<double>(http_->stats().open_connections));
  build.add({{"version", GPUCLOUD_VERSION}}, 1);
  if (tls_not_after_s_ > 0) cert_expiry.add({}, static_cast<double>(tls_not_after_s_));

  std::vector<prometheus::MetricFamily> families;
  for (const GaugeSet* g :
       {&build, &jobs, &oldest_pending, &nodes, &cordoned, &capacity, &allocated, &allocated_milli,
        &free_gpus, &quota, &borrowing_limit, &borrowed, &weight, &budget, &month_spend,
        &budget_held, &connections, &cert_expiry})
    families.push_back(g->family());
  for (auto& f : metrics_->collect()) families.push_back(std::move(f));
  metrics::Format format = metrics::negotiate_format(req.header("accept"));
  net::HttpResponse r;
  r.status = 200;
  r.content_type = metrics::content_type(format);
  r.body = metrics::render(families, format);
  return r;
}

void Server::note_job_started(const Job& job) {
  bool ran_before = std::any_of(job.attempts.begin(), job.attempts.end(),
                                [](const AttemptRecord& a) { return a.started_at > 0; });
  TimeMs pending_since = job.attempts.empty() ? job.created_at : job.attempts.back().ended_at;
  double wait_s = std::max<TimeMs>(0, job.started_at - pending_since) / 1000.0;
  double first_s = ran_before ? -1 : std::max<TimeMs>(0, job.started_at - job.created_at) / 1000.0;
  metrics_->job_started(wait_s, first_s);
}

}  // namespace gpucloud::server
