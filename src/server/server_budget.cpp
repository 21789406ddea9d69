// Tenant budgets (docs/cost.md, "Budgets"): each tenant's spend this calendar month (UTC), from
// the cost ledger with running attempts accruing, against its monthly budget. At the alert
// share an audit entry and a warning, once a month; at the budget with hard_cap its pending
// jobs wait (they are kept from the scheduler) with a reason that says so, and with
// stop_running its running jobs are interrupted (cause budget) and wait too.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ctime>

#include "common/units.h"
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

}  // namespace

void Server::check_budgets() {
  TimeMs now = clock_.now_ms();
  if (now - budgets_checked_at_ < 2000) return;
  budgets_checked_at_ = now;
  auto [month_start, next_month] = month_of(now);
  std::map<std::string, std::string> held;  // tenant -> why its jobs wait
  store::WriteBatch batch;
  for (const auto& t : file_config_.tenants) {
    if (!t.budget) continue;
    const BudgetConfig& b = *t.budget;
    auto spent = tenant_spend_usd(t.name, month_start);
    if (!spent) {
      spdlog::warn("budget of tenant {}: cannot read its spend: {}", t.name, spent.error().message);
      continue;
    }
    if (*spent >= b.alert_at * b.monthly_usd && budget_alerted_[t.name] != month_start) {
      budget_alerted_[t.name] = month_start;
      std::string what = fmt::format(
          "tenant {} has spent {} of its {} budget this month ({:.0f} %)", t.name, usd(*spent),
          usd(b.monthly_usd), b.monthly_usd > 0 ? 100 * *spent / b.monthly_usd : 100.0);
      spdlog::warn("budget alert: {}", what);
      store::AuditEntry alert{now, "server", "budget.alert", t.name, what};
      alert.tenant = t.name;
      batch.audit.push_back(std::move(alert));
    }
    if (b.hard_cap && *spent >= b.monthly_usd)
      held[t.name] = budget_exhausted_reason(*spent, b.monthly_usd, next_month);
  }
  // Jobs of tenants whose state changed are told to the scheduler again (held ones leave it);
  // jobs re-queued since the last check get the budget's reason.
  if (held.empty() && budget_held_.empty()) {
    if (!batch.empty()) (void)commit(batch);
    return;
  }
  for (auto& [id, job] : jobs_) {
    auto h = held.find(job.spec.tenant);
    bool was = budget_held_.count(job.spec.tenant) > 0, is = h != held.end();
    if (job.state == JobState::kPending && job.replicas.empty()) {
      if (is) job.pending_reason = h->second;
      if (was != is) {
        if (!is) job.pending_reason = "waiting to be scheduled";
        sched_dirty_jobs_.insert(id);
      }
    }
    if (is && job.state == JobState::kRunning && !stop_requested(job)) {
      const TenantConfig* t = nullptr;
      for (const auto& tc : file_config_.tenants)
        if (tc.name == job.spec.tenant) t = &tc;
      if (t && t->budget && t->budget->stop_running) {
        job.interrupt_reason = h->second;
        job.message = h->second + "; stopping (the tenant's budget stops running jobs)";
        stop_replicas(job, interrupt_cause::kBudget, h->second);
        batch.jobs.push_back(job);
        batch.audit.push_back({now, "server", "job.interrupt", job.id, h->second});
      }
    }
  }
  bool changed = held.size() != budget_held_.size() ||
                 !std::equal(held.begin(), held.end(), budget_held_.begin(),
                             [](const auto& a, const auto& b) { return a.first == b.first; });
  budget_held_ = std::move(held);
  if (!batch.empty()) (void)commit(batch);
  if (changed) schedule_soon();
}

}  // namespace gpucloud::server
