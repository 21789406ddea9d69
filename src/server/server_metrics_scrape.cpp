// GET /metrics: who may read it, and the gauges computed from the server's state at scrape
// time (the loop thread owns that state, so no lock is taken).
#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>

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

  // One walk of the active jobs and one of the nodes, counting under keys that point into the
  // server's own strings: label sets are built once per series, not once per job or node, so a
  // scrape of 10,000 nodes and 20,000 jobs allocates little (bench/RESULTS.md, "/metrics").
  using Key = std::string_view;
  // Sums in whole milli-GPUs, divided once: ten 100-milli shares make exactly 1 GPU.
  std::map<Key, std::map<Key, int64_t>> used_milli;          // tenant -> model -> milli
  std::map<std::tuple<Key, Key, bool>, int64_t> held_milli;  // model, tenant, whole
  std::map<std::pair<Key, bool>, int64_t> job_counts;        // tenant, running
  std::map<Key, TimeMs> pending_since;  // tenant -> the oldest pending job's start
  std::map<Key, int64_t> budget_held_jobs;
  // Milli-GPUs in use on each node, by GPU index (only nodes with something on their GPUs).
  std::unordered_map<Key, std::vector<std::pair<int, int64_t>>> used_on_node;
  static const std::string kUnknownModel = "unknown";
  for (const auto& [id, job] : jobs_) {
    if (is_terminal(job.state)) continue;
    Key tenant = job.spec.tenant;
    // A job whose latest attempt has not ended is placed (starting), no longer waiting.
    if (job.state == JobState::kPending &&
        (job.attempts.empty() || job.attempts.back().ended_at > 0)) {
      TimeMs since = job.attempts.empty() ? job.created_at : job.attempts.back().ended_at;
      auto [it, added] = pending_since.emplace(tenant, since);
      if (!added) it->second = std::min(it->second, since);
    }
    if (job.state == JobState::kPending && job.replicas.empty() &&
        (budget_held_.count(job.spec.tenant) || cost_held_.count(id)))
      ++budget_held_jobs[tenant];
    ++job_counts[{tenant, job.state == JobState::kRunning}];
    for (const auto& r : job.replicas) {
      if (r.state == ReplicaState::kExited || r.gpus.empty()) continue;
      auto node = nodes_.find(r.node_id);
      auto& used = used_on_node[node == nodes_.end() ? Key() : Key(node->first)];
      for (const auto& g : r.gpus) {
        Key model = kUnknownModel;
        if (node != nodes_.end())
          for (const auto& gpu : node->second.info.gpus)
            if (gpu.index == g.index) model = gpu.model;
        held_milli[{model, tenant, g.milli >= 1000}] += g.milli;
        used_milli[tenant][model] += g.milli;
        auto slot = std::find_if(used.begin(), used.end(),
                                 [&](const auto& u) { return u.first == g.index; });
        if (slot == used.end())
          used.emplace_back(g.index, g.milli);
        else
          slot->second += g.milli;
      }
    }
  }
  auto str = [](Key k) { return std::string(k); };
  for (const auto& [key, count] : job_counts)
    jobs.add({{"state", key.second ? "running" : "pending"}, {"tenant", str(key.first)}},
             static_cast<double>(count));
  for (const auto& [tenant, since] : pending_since)
    oldest_pending.add({{"tenant", str(tenant)}},
                       static_cast<double>(std::max<TimeMs>(0, clock_.now_ms() - since)) / 1000);
  for (const auto& [key, milli] : held_milli) {
    auto [model, tenant, whole] = key;
    allocated.add(
        {{"model", str(model)}, {"tenant", str(tenant)}, {"mode", whole ? "whole" : "shared"}},
        static_cast<double>(milli) / 1000);
    allocated_milli.add({{"model", str(model)}, {"tenant", str(tenant)}},
                        static_cast<double>(milli));
  }
  std::map<Key, int64_t> node_counts, gpu_capacity, free_whole, free_shared_milli;
  int64_t cordoned_count = 0;
  for (const auto& [id, rec] : nodes_) {
    ++node_counts[rec.state];
    if (rec.cordoned) ++cordoned_count;
    if (rec.state != "ready") continue;
    bool schedulable = !rec.cordoned && !rec.info.failed_check();
    auto used = used_on_node.find(Key(id));
    for (const auto& g : rec.info.gpus) {
      ++gpu_capacity[g.model];
      free_whole[g.model] += 0;
      free_shared_milli[g.model] += 0;
      if (!schedulable) continue;
      int64_t used_milli_here = 0;
      if (used != used_on_node.end())
        for (const auto& [index, milli] : used->second)
          if (index == g.index) used_milli_here += milli;
      if (used_milli_here <= 0)
        ++free_whole[g.model];
      else if (used_milli_here < 1000)
        free_shared_milli[g.model] += 1000 - used_milli_here;
    }
  }
  for (const auto& [state, count] : node_counts)
    nodes.add({{"state", str(state)}}, static_cast<double>(count));
  cordoned.add({}, static_cast<double>(cordoned_count));
  for (const auto& [model, count] : gpu_capacity)
    capacity.add({{"model", str(model)}}, static_cast<double>(count));
  for (const auto& [model, count] : free_whole)
    free_gpus.add({{"model", str(model)}, {"mode", "whole"}}, static_cast<double>(count));
  for (const auto& [model, milli] : free_shared_milli)
    free_gpus.add({{"model", str(model)}, {"mode", "shared"}}, static_cast<double>(milli) / 1000);
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
    for (const auto& [model, milli] : used_milli[Key(t.name)]) {
      auto q = nominal.find(str(model));
      int64_t over = milli - (q == nominal.end() ? 0 : int64_t{q->second} * 1000);
      borrowed.add({{"tenant", t.name}, {"model", str(model)}},
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
  for (const auto& [tenant, count] : budget_held_jobs)
    budget_held.add({{"tenant", str(tenant)}}, static_cast<double>(count));
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
