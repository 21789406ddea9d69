// Tenant budgets (docs/cost.md, "Budgets"): each tenant's spend this calendar month (UTC), from
// the cost ledger with running attempts accruing, against its monthly budget. At the alert
// share an audit entry and a warning, once a month; at the budget with hard_cap its pending
// jobs wait (they are kept from the scheduler) with a reason that says so, and with
// stop_running its running jobs are interrupted (cause budget) and wait too.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ctime>

#include "common/units.h"
#include "cost/pricing.h"
#include "sched/fit.h"
#include "server/server.h"

namespace gpucloud::server {

namespace {

// The first moment (ms, UTC) of the month holding `t`, and of the next one.
std::pair<TimeMs, TimeMs> month_of(TimeMs t) {
  std::time_t secs = static_cast<std::time_t>(t / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  tm.tm_mday = 1;
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  TimeMs start = static_cast<TimeMs>(::timegm(&tm)) * 1000;
  tm.tm_mon += 1;  // timegm normalises December + 1
  TimeMs next = static_cast<TimeMs>(::timegm(&tm)) * 1000;
  return {start, next};
}

std::string usd(double v) {
  std::string digits = fmt::format("{:.2f}", v);
  // Thousands separators: $10,000.00.
  size_t dot = digits.find('.');
  for (int i = static_cast<int>(dot) - 3; i > (digits[0] == '-' ? 1 : 0); i -= 3)
    digits.insert(static_cast<size_t>(i), ",");
  return "$" + digits;
}

// Why a tenant over its hard cap waits, as users see it in `ps` and `show`.
std::string budget_exhausted_reason(double spent, double budget, TimeMs resets_at) {
  return fmt::format("budget exhausted: {} of {} this month, resets {}", usd(spent), usd(budget),
                     format_time_iso(resets_at).substr(0, 10));
}

// A pending job's request as the scheduler sees it, keyed by what decides its price.
std::string price_key(const sched::JobRequest& r) {
  std::string key =
      fmt::format("{}/{}/{}/{}/{}/{}/{}/{}", r.gpus, r.gpu_milli, r.gpu_memory_mib, r.gpu_model,
                  r.cpu_milli, r.memory_mib, static_cast<int>(r.capacity_class), r.max_price);
  for (const auto& [k, v] : r.node_selector) key += "/" + k + "=" + v;
  return key;
}

// How often budgets are checked; a job with max_cost is stopped when what is left of it would
// pay for no more than its grace period and two checks.
constexpr TimeMs kBudgetCheckMs = 2000;

}  // namespace

double Server::worst_case_usd(const Job& job, BudgetScratch& scratch) const {
  if (job.spec.max_runtime_ms <= 0) return 0;
  auto request = sched::JobRequest::from_spec(job.id, job.spec, job.created_at, 0);
  std::string key = price_key(request);
  auto cached = scratch.replica_usd_per_hour.find(key);
  if (cached == scratch.replica_usd_per_hour.end()) {
    if (!scratch.nodes_read) {
      scratch.nodes = node_states();
      scratch.nodes_read = true;
    }
    cost::ResourceUse use;
    use.gpu_milli = request.gpu_milli > 0 ? request.gpu_milli : 1000 * int64_t{request.gpus};
    use.cpu_milli = request.cpu_milli;
    use.memory_mib = request.memory_mib;
    double worst = 0;
    for (const auto& n : scratch.nodes) {
      if (!sched::node_could_fit(request, n)) continue;
      const store::NodeRecord& rec = nodes_.at(n.id);
      if (rec.price.usd_per_hour < 0) continue;
      worst = std::max(worst, rec.price.usd_per_hour *
                                  cost::share_of_node(use, rec.info, file_config_.cost.weights));
    }
    cached = scratch.replica_usd_per_hour.emplace(key, worst).first;
  }
  return cached->second * job.spec.replicas * static_cast<double>(job.spec.max_runtime_ms) /
         3'600'000.0;
}

std::string Server::budget_admission_reason(const Job& job, double worst, double left) const {
  const TenantConfig* tenant = file_config_.find_tenant(job.spec.tenant);
  double budget = tenant && tenant->budget ? tenant->budget->monthly_usd : 0;
  return fmt::format(
      "budget: its worst case, {} ({} at most), is more than the {} left of the tenant's {} "
      "this month after its running and earlier queued jobs; it waits until the budget grows, "
      "jobs end under their max_runtime or the month turns ({}), or run it with a shorter "
      "max_runtime",
      usd(worst), format_duration_ms(job.spec.max_runtime_ms), usd(std::max(0.0, left)),
      usd(budget), format_time_iso(month_of(clock_.now_ms()).second).substr(0, 10));
}

void Server::admit_by_budget(Job& job) {
  if (job.spec.max_runtime_ms <= 0) return;
  const TenantConfig* tenant = file_config_.find_tenant(job.spec.tenant);
  if (!tenant || !tenant->budget || !tenant->budget->hard_cap) return;
  // Not checked since the server started or the config was reloaded: check now, so the job
  // cannot start before its worst case was weighed.
  if (!budget_left_.count(job.spec.tenant) && !budget_held_.count(job.spec.tenant)) {
    budgets_checked_at_ = 0;
    check_budgets();
  }
  auto left = budget_left_.find(job.spec.tenant);
  if (left == budget_left_.end()) return;
  BudgetScratch scratch;
  double worst = worst_case_usd(job, scratch);
  if (worst <= left->second + 1e-9) {
    left->second -= worst;
    return;
  }
  std::string why = budget_admission_reason(job, worst, left->second);
  cost_held_[job.id] = why;
  job.pending_reason = why;
}

void Server::check_budgets() {
  TimeMs now = clock_.now_ms();
  if (now - budgets_checked_at_ < kBudgetCheckMs) return;
  budgets_checked_at_ = now;
  auto [month_start, next_month] = month_of(now);
  store::WriteBatch batch;

  // This month's spend of every budgeted tenant: one ledger query and one walk of the jobs.
  store::CostQuery query;
  query.group_by = "tenant";
  query.since = month_start;
  for (const auto& t : file_config_.tenants)
    if (t.budget) query.tenants.push_back(t.name);
  std::map<std::string, double> spent;
  if (!query.tenants.empty()) {
    auto lines = cost_lines(query);
    if (!lines) {
      spdlog::warn("budgets: cannot read this month's spend: {}", lines.error().message);
      return;
    }
    for (const auto& l : *lines) spent[l.key] += l.cost_usd;
  }

  std::map<std::string, std::string> held;  // tenant -> why its jobs wait
  std::map<std::string, double> left;       // hard-capped tenant -> USD its jobs may still take
  for (const auto& t : file_config_.tenants) {
    if (!t.budget) continue;
    const BudgetConfig& b = *t.budget;
    double s = spent[t.name];
    if (s >= b.alert_at * b.monthly_usd && budget_alerted_[t.name] != month_start) {
      budget_alerted_[t.name] = month_start;
      std::string what = fmt::format(
          "tenant {} has spent {} of its {} budget this month ({:.0f} %)", t.name, usd(s),
          usd(b.monthly_usd), b.monthly_usd > 0 ? 100 * s / b.monthly_usd : 100.0);
      spdlog::warn("budget alert: {}", what);
      metrics_->budget_alert(t.name);
      store::AuditEntry alert{now, "server", "budget.alert", t.name, what};
      alert.tenant = t.name;
      batch.audit.push_back(std::move(alert));
    }
    if (!b.hard_cap) continue;
    if (s >= b.monthly_usd)
      held[t.name] = budget_exhausted_reason(s, b.monthly_usd, next_month);
    else
      left[t.name] = b.monthly_usd - s;
  }
  budget_spent_ = std::move(spent);

  // Cost-aware admission under a hard cap: running jobs reserve the worst case of the rest of
  // their max_runtime, then pending jobs with a max_runtime reserve theirs in submission order;
  // a job whose worst case is more than what is left waits. Jobs without max_runtime have no
  // worst case and are only held once the budget is spent.
  std::vector<Job*> queued;
  for (auto& [id, job] : jobs_) {
    auto l = left.find(job.spec.tenant);
    if (l == left.end() || job.spec.max_runtime_ms <= 0 || is_terminal(job.state)) continue;
    if (!job.replicas.empty()) {
      double per_hour = 0;
      for (const auto& r : job.replicas)
        if (r.state != ReplicaState::kExited) per_hour += std::max(0.0, r.usd_per_hour);
      TimeMs started = job.started_at > 0 ? job.started_at : now;
      TimeMs rest = std::max<TimeMs>(0, started + job.spec.max_runtime_ms - now);
      l->second -= per_hour * static_cast<double>(rest) / 3'600'000.0;
    } else if (job.state == JobState::kPending && !job.cancel_requested) {
      queued.push_back(&job);
    }
  }
  std::sort(queued.begin(), queued.end(), [](const Job* a, const Job* b) {
    return a->created_at != b->created_at ? a->created_at < b->created_at : a->id < b->id;
  });
  std::map<std::string, std::string> cost_held;
  BudgetScratch scratch;
  for (Job* job : queued) {
    double& l = left[job->spec.tenant];
    double worst = worst_case_usd(*job, scratch);
    if (worst <= l + 1e-9)
      l -= worst;
    else
      cost_held[job->id] = budget_admission_reason(*job, worst, l);
  }
  budget_left_ = std::move(left);

  // Jobs whose hold changed are told to the scheduler again (held ones leave it); re-queued jobs
  // get their reason.
  for (auto& [id, job] : jobs_) {
    if (is_terminal(job.state)) continue;
    auto h = held.find(job.spec.tenant);
    auto c = cost_held.find(id);
    bool was = budget_held_.count(job.spec.tenant) > 0 || cost_held_.count(id) > 0;
    bool is = h != held.end() || c != cost_held.end();
    if (job.state == JobState::kPending && job.replicas.empty()) {
      if (is) job.pending_reason = h != held.end() ? h->second : c->second;
      if (was != is) {
        if (!is) job.pending_reason = "waiting to be scheduled";
        sched_dirty_jobs_.insert(id);
      }
    }
    if (h != held.end() && job.state == JobState::kRunning && !stop_requested(job)) {
      const TenantConfig* t = file_config_.find_tenant(job.spec.tenant);
      if (t && t->budget && t->budget->stop_running) {
        job.interrupt_reason = h->second;
        job.message = h->second + "; stopping (the tenant's budget stops running jobs)";
        stop_replicas(job, interrupt_cause::kBudget, h->second);
        batch.jobs.push_back(job);
        batch.audit.push_back({now, "server", "job.interrupt", job.id, h->second});
      }
    }
    enforce_max_cost(job, batch);
  }
  bool changed = held.size() != budget_held_.size() || cost_held.size() != cost_held_.size() ||
                 !std::equal(held.begin(), held.end(), budget_held_.begin(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }) ||
                 !std::equal(cost_held.begin(), cost_held.end(), cost_held_.begin(),
                             [](const auto& a, const auto& b) { return a.first == b.first; });
  budget_held_ = std::move(held);
  cost_held_ = std::move(cost_held);
  if (!batch.empty()) (void)commit(batch);
  if (changed) schedule_soon();
}

void Server::enforce_max_cost(Job& job, store::WriteBatch& batch) {
  if (job.spec.max_cost <= 0 || is_terminal(job.state) || stop_requested(job)) return;
  double ended = 0;
  for (const auto& a : job.attempts) ended += a.cost_usd;
  TimeMs now = clock_.now_ms();
  if (job.replicas.empty()) {
    // Re-queued with nothing left: it ends instead of waiting for an attempt it cannot pay.
    if (ended < job.spec.max_cost - 0.005) return;
    end_job(job, JobState::kFailed, std::nullopt,
            fmt::format("cost limit: its attempts cost {}, its max_cost is {}", usd(ended),
                        usd(job.spec.max_cost)),
            batch);
    return;
  }
  double per_hour = 0;
  for (const auto& r : job.replicas)
    if (r.state != ReplicaState::kExited) per_hour += std::max(0.0, r.usd_per_hour);
  if (job.started_at <= 0 || per_hour <= 0) return;
  double total = ended + cost::cost_usd(per_hour, job.started_at, now);
  double margin =
      per_hour * static_cast<double>(job.spec.grace_period_ms + 2 * kBudgetCheckMs) / 3'600'000.0;
  if (total + margin < job.spec.max_cost) return;
  job.cost_limit_reason = fmt::format(
      "cost limit: {} spent of its max_cost {}, and its grace period ({}) at {}/hour "
      "would pass it",
      usd(total), usd(job.spec.max_cost), format_duration_ms(job.spec.grace_period_ms),
      usd(per_hour));
  job.message = "stopping: " + job.cost_limit_reason;
  spdlog::info("job {}: {}", job.id, job.message);
  stop_replicas(job, interrupt_cause::kBudget, job.cost_limit_reason);
  batch.jobs.push_back(job);
  batch.audit.push_back({now, "server", "job.cost_limit", job.id, job.cost_limit_reason});
}

}  // namespace gpucloud::server
