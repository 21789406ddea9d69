// Costs: prices fixed at placement, the ledger rows of ended attempts, GET /v1/cost, and the
// per-tenant spend budgets will read (docs/cost.md).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "cost/pricing.h"
#include "sched/fit.h"
#include "server/http_util.h"
#include "server/server.h"

namespace gpucloud::server {

using json = nlohmann::json;

namespace {

// A report bound: a date (2026-12-01, midnight UTC), a UTC time (2026-12-01T10:00:00Z), or a
// duration back from now (24h, 7d).
Result<TimeMs> parse_report_time(const std::string& name, const std::string& text, TimeMs now) {
  std::tm tm{};
  const char* end = nullptr;
  if (text.size() == 10) end = strptime(text.c_str(), "%Y-%m-%d", &tm);
  if (text.size() == 20) end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end && *end == '\0') return static_cast<TimeMs>(timegm(&tm)) * 1000;
  auto back = parse_duration_ms(text);
  if (back.ok() && *back >= 0) return now - *back;
  return invalid(fmt::format(
      "{}: '{}' is not a date (2026-12-01), a UTC time (2026-12-01T10:00:00Z) or a duration "
      "back from now (24h, 7d)",
      name, text.substr(0, 64)));
}

std::string day_of(TimeMs t) {
  std::time_t s = static_cast<std::time_t>(t / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

json line_json(const store::CostLine& l) {
  return {{"key", l.key},
          {"attempts", l.attempts},
          {"gpu_hours", l.gpu_hours},
          {"cost_usd", l.cost_usd},
          {"on_demand_usd", l.on_demand_usd},
          {"spot_savings_usd", std::max(0.0, l.on_demand_usd - l.cost_usd)},
          {"idle_released_gpu_hours", l.idle_released_gpu_hours},
          {"idle_released_usd", l.idle_released_usd}};
}

}  // namespace

void Server::price_replicas(Job& job) {
  for (auto& r : job.replicas) {
    if (r.usd_per_hour >= 0) continue;  // priced at its placement already
    auto it = nodes_.find(r.node_id);
    if (it == nodes_.end()) continue;
    const store::NodeRecord& node = it->second;
    cost::ResourceUse use;
    for (const auto& g : r.gpus) use.gpu_milli += g.milli;
    use.cpu_milli = r.cpu_milli;
    use.memory_mib = r.memory_mib;
    if (use.gpu_milli > 0 && !node.info.gpus.empty()) r.gpu_model = node.info.gpus.front().model;
    if (node.price.usd_per_hour < 0) continue;
    double share = cost::share_of_node(use, node.info, file_config_.cost.weights);
    r.usd_per_hour = node.price.usd_per_hour * share;
    r.on_demand_usd_per_hour = node.price.on_demand_usd_per_hour * share;
  }
}

void Server::write_ledger(const Job& job, AttemptRecord& record, store::WriteBatch& batch) {
  if (job.started_at <= 0) return;  // never ran: it cost nothing
  bool reclaimed = !job.reclaim_reason.empty();
  for (const auto& r : job.replicas) {
    store::LedgerEntry e;
    e.job_id = job.id;
    e.tenant = job.spec.tenant;
    e.attempt = job.attempt;
    e.rank = r.rank;
    e.node = r.node_name;
    e.gpu_model = r.gpu_model;
    for (const auto& g : r.gpus) e.gpu_milli += g.milli;
    e.started_at = job.started_at;
    e.ended_at = record.ended_at;
    e.usd_per_hour = std::max(0.0, r.usd_per_hour);
    e.on_demand_usd_per_hour = std::max(e.usd_per_hour, r.on_demand_usd_per_hour);
    e.cost_usd = cost::cost_usd(e.usd_per_hour, e.started_at, e.ended_at);
    e.end = record.end;
    e.cause = record.cause;
    // Idle reclaim hands the GPUs back early; what that saved is only known when the job said
    // how long it could run (max_runtime): the rest of that time. Without one it is not counted.
    if (reclaimed && job.spec.max_runtime_ms > 0)
      e.idle_released_ms = std::max<TimeMs>(0, e.started_at + job.spec.max_runtime_ms - e.ended_at);
    record.price_per_hour += e.usd_per_hour;
    record.cost_usd += e.cost_usd;
    metrics_->cost(e.tenant, e.gpu_model, e.cost_usd);
    batch.ledger.push_back(std::move(e));
  }
}

json Server::dry_run(const Job& job, const sched::JobRequest& request) const {
  std::vector<sched::NodeState> nodes = node_states();
  // Cheapest first (per GPU-hour), unpriced nodes last, then by name: the estimate is what the
  // job would pay at best; the scheduler's policy may pick another node that fits.
  std::stable_sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
    double pa = a.price_per_gpu_hour < 0 ? 1e18 : a.price_per_gpu_hour;
    double pb = b.price_per_gpu_hour < 0 ? 1e18 : b.price_per_gpu_hour;
    return pa != pb ? pa < pb : a.name < b.name;
  });
  json placements = json::array();
  double per_hour = 0;
  std::string why;
  for (int rank = 0; rank < request.replicas; ++rank) {
    sched::NodeState* chosen = nullptr;
    std::optional<sched::GpuChoice> gpus;
    for (auto& n : nodes) {
      std::string reason;
      if (!sched::node_could_fit(request, n, &reason)) {
        if (why.empty()) why = n.name + ": " + reason;
        continue;
      }
      if (!sched::cpu_memory_fit(request, n)) continue;
      if (request.gpus > 0) {
        gpus = sched::choose_gpus(request, n);
        if (!gpus) continue;
      }
      chosen = &n;
      break;
    }
    if (!chosen) {
      int ahead = 0;
      for (const auto& [id, other] : jobs_)
        if (other.state == JobState::kPending && other.replicas.empty()) ++ahead;
      return {
          {"would_run", false},
          {"reason", fmt::format("no node has room for replica {} ({}) now; it would wait "
                                 "with {} pending job{} queued{}",
                                 rank, sched::describe_gpus(request), ahead, ahead == 1 ? "" : "s",
                                 why.empty() ? "" : " (e.g. " + why + ")")}};
    }
    cost::ResourceUse use;
    use.gpu_milli = request.gpu_milli > 0 ? request.gpu_milli : 1000 * int64_t{request.gpus};
    use.cpu_milli = request.cpu_milli;
    use.memory_mib = request.memory_mib;
    if (gpus) sched::apply_choice(request, *gpus, *chosen);
    const store::NodeRecord& rec = nodes_.at(chosen->id);
    double share = cost::share_of_node(use, rec.info, file_config_.cost.weights);
    double price = rec.price.usd_per_hour >= 0 ? rec.price.usd_per_hour * share : -1;
    if (price > 0) per_hour += price;
    placements.push_back({{"rank", rank},
                          {"node", chosen->name},
                          {"usd_per_hour", price},
                          {"price_source", rec.price.source}});
  }
  json out = {{"would_run", true}, {"replicas", placements}, {"usd_per_hour", per_hour}};
  if (job.spec.max_runtime_ms > 0) {
    out["max_runtime_usd"] = per_hour * static_cast<double>(job.spec.max_runtime_ms) / 3'600'000.0;
    // Under a hard-capped budget, admission weighs the priciest node the job may use.
    if (auto left = budget_left_.find(job.spec.tenant); left != budget_left_.end()) {
      BudgetScratch scratch;
      double worst = worst_case_usd(job, scratch);
      out["worst_case_usd"] = worst;
      out["budget_left_usd"] = std::max(0.0, left->second);
      if (worst > left->second + 1e-9) {
        out["would_run"] = false;
        out["reason"] = budget_admission_reason(job, worst, left->second);
      }
    }
  }
  if (auto held = budget_held_.find(job.spec.tenant); held != budget_held_.end()) {
    out["would_run"] = false;
    out["reason"] = held->second;
  }
  return out;
}

json Server::job_cost_json(const Job& job) const {
  double ended = 0;
  for (const auto& a : job.attempts) ended += a.cost_usd;
  double per_hour = 0, running = 0;
  if (!is_terminal(job.state) && job.started_at > 0) {
    for (const auto& r : job.replicas)
      if (r.state != ReplicaState::kExited) per_hour += std::max(0.0, r.usd_per_hour);
    running = cost::cost_usd(per_hour, job.started_at, clock_.now_ms());
  }
  return {{"total_usd", ended + running},
          {"running_usd_per_hour", per_hour},
          {"ended_attempts_usd", ended}};
}

Result<std::vector<store::CostLine>> Server::cost_lines(const store::CostQuery& q) {
  auto lines = store_->cost_report(q);
  if (!lines) return lines.error();
  std::map<std::string, store::CostLine> merged;
  for (auto& l : *lines) merged[l.key] = l;
  TimeMs now = clock_.now_ms();
  TimeMs until = q.until > 0 ? std::min(q.until, now) : now;
  for (const auto& [id, job] : jobs_) {
    if (is_terminal(job.state) || job.started_at <= 0) continue;
    if (!q.job_id.empty() && job.id != q.job_id) continue;
    if (!q.tenants.empty() &&
        std::find(q.tenants.begin(), q.tenants.end(), job.spec.tenant) == q.tenants.end())
      continue;
    TimeMs from = std::max(job.started_at, q.since);
    if (until <= from) continue;
    for (const auto& r : job.replicas) {
      if (r.state == ReplicaState::kExited) continue;
      std::string key = q.group_by == "job"         ? job.id
                        : q.group_by == "node"      ? r.node_name
                        : q.group_by == "gpu-model" ? r.gpu_model
                        : q.group_by == "day"       ? day_of(until)
                                                    : job.spec.tenant;
      auto& line = merged[key];
      line.key = key;
      line.attempts += 1;
      int64_t milli = 0;
      for (const auto& g : r.gpus) milli += g.milli;
      line.gpu_hours += static_cast<double>(milli) / 1000 * (until - from) / 3'600'000.0;
      double price = std::max(0.0, r.usd_per_hour);
      line.cost_usd += cost::cost_usd(price, from, until);
      line.on_demand_usd += cost::cost_usd(std::max(price, r.on_demand_usd_per_hour), from, until);
    }
  }
  std::vector<store::CostLine> out;
  for (auto& [key, line] : merged) out.push_back(std::move(line));
  return out;
}

Result<double> Server::tenant_spend_usd(const std::string& tenant, TimeMs since, TimeMs until) {
  store::CostQuery q;
  q.group_by = "tenant";
  q.since = since;
  q.until = until;
  q.tenants = {tenant};
  auto lines = cost_lines(q);
  if (!lines) return lines.error();
  double total = 0;
  for (const auto& l : *lines) total += l.cost_usd;
  return total;
}

net::HttpResponse Server::cost_report(const net::HttpRequest& req, const Principal& who) {
  for (const auto& [key, value] : req.query)
    if (key != "by" && key != "since" && key != "until" && key != "tenant" && key != "job")
      return error_response(invalid(
          fmt::format("{}: unknown parameter; GET /v1/cost takes by, since, until, tenant and job",
                      key.substr(0, 64))));
  store::CostQuery q;
  TimeMs now = clock_.now_ms();
  if (auto it = req.query.find("by"); it != req.query.end()) q.group_by = it->second;
  static const char* const kBy[] = {"tenant", "job", "node", "gpu-model", "day"};
  if (std::find(std::begin(kBy), std::end(kBy), q.group_by) == std::end(kBy))
    return error_response(invalid(fmt::format(
        "by: '{}' is not one of tenant, job, node, gpu-model, day", q.group_by.substr(0, 64))));
  for (auto [name, into] : {std::pair{"since", &q.since}, std::pair{"until", &q.until}}) {
    auto it = req.query.find(name);
    if (it == req.query.end()) continue;
    auto t = parse_report_time(name, it->second, now);
    if (!t) return error_response(t.error());
    *into = *t;
  }
  if (q.until > 0 && q.until <= q.since)
    return error_response(invalid(fmt::format("until ({}) is not after since ({})",
                                              format_time_iso(q.until), format_time_iso(q.since))));
  std::string tenant = req.query.count("tenant") ? req.query.at("tenant") : "";
  if (!tenant.empty()) {
    if (!who.may_act_for(tenant))
      return error_response(
          {ErrorCode::kPermissionDenied,
           fmt::format("tenant '{}': you may read the costs of {} only", tenant.substr(0, 64),
                       who.tenants.empty() ? std::string("no tenant")
                                           : fmt::format("{}", fmt::join(who.tenants, ", ")))});
    q.tenants = {tenant};
  } else if (!who.is_admin()) {
    q.tenants = who.tenants;
    if (q.tenants.empty())
      return json_response(200, {{"by", q.group_by}, {"lines", json::array()}});
  }
  if (auto it = req.query.find("job"); it != req.query.end()) {
    auto job = find_visible_job(it->second, who);
    if (!job) return error_response(job.error());
    q.job_id = job->id;
  }
  auto lines = cost_lines(q);
  if (!lines) return error_response(lines.error());
  json out = json::array();
  store::CostLine total;
  total.key = "total";
  for (const auto& l : *lines) {
    out.push_back(line_json(l));
    total.attempts += l.attempts;
    total.gpu_hours += l.gpu_hours;
    total.cost_usd += l.cost_usd;
    total.on_demand_usd += l.on_demand_usd;
    total.idle_released_gpu_hours += l.idle_released_gpu_hours;
    total.idle_released_usd += l.idle_released_usd;
  }
  return json_response(200, {{"by", q.group_by},
                             {"since", q.since ? json(format_time_iso(q.since)) : json(nullptr)},
                             {"until", format_time_iso(q.until ? q.until : now)},
                             {"lines", out},
                             {"total", line_json(total)}});
}

}  // namespace gpucloud::server
