// The server's configuration file (--config FILE): tenants and API tokens, until tenant
// management has its own API. docs/config.md documents it; it is reloaded on SIGHUP.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "cost/cost_settings.h"
#include "model/quota_windows.h"
#include "store/state_store.h"

namespace gpucloud::server {

/// When a running job's GPUs count as idle and how long they may stay idle before they are
/// handed back (docs/interruptions.md, "Idle GPUs handed back").
struct IdlePolicy {
  int64_t timeout_ms = 2 * 3'600'000;  // the idle window; 0 = idle reclaim off
  int threshold_pct = 5;               // a GPU below this utilisation is idle
  int64_t max_timeout_ms = 0;          // the longest window a job may ask for; 0 = no maximum
};

/// A tenant's changes to the file's idle policy: the fields it sets.
struct IdleOverrides {
  std::optional<int64_t> timeout_ms;
  std::optional<int> threshold_pct;
  std::optional<int64_t> max_timeout_ms;
};

/// A tenant's monthly budget (docs/cost.md, "Budgets"): spend is counted per calendar month
/// (UTC) from the cost ledger, running attempts included.
struct BudgetConfig {
  double monthly_usd = 0;
  double alert_at = 0.8;      // the share of the budget at which the alert fires, once a month
  bool hard_cap = true;       // at the budget its new jobs wait
  bool stop_running = false;  // ... and its running jobs are interrupted (cause budget)
};

/// A tenant: a team or project that owns jobs.
struct TenantConfig {
  std::string name;
  double weight = 1;                           // fair-share weight
  std::string cohort;                          // tenants that may borrow each other's quota
  std::map<std::string, int> quota;            // nominal GPUs per GPU model
  std::map<std::string, int> borrowing_limit;  // GPUs per model it may borrow in its cohort
  // Its quota by time of day (docs/config.md, "Quota windows"): while one is in force, the
  // models it names have its quota instead of `quota`.
  std::vector<QuotaWindow> quota_windows;
  // The user its jobs run as on the nodes (docs/security.md, "Job code"): -1 = one the agent
  // picks from its --job-uid-range; gid defaults to uid. allow_root runs them as root instead.
  int64_t uid = -1;
  int64_t gid = -1;
  bool allow_root = false;
  IdleOverrides idle;
  std::optional<BudgetConfig> budget;
};

struct ServerFileConfig {
  std::vector<TenantConfig> tenants;
  std::vector<store::TokenRecord> tokens;  // sha256, name, role (admin | member), tenants
  /// Priority classes by name: the built-in low (0), normal (100) and high (1000), with the
  /// file's `priority_classes` added or overriding them.
  std::map<std::string, int> priority_classes = default_priority_classes();
  IdlePolicy idle;          // the file's `idle`, for tenants that do not override it
  cost::CostSettings cost;  // the file's `cost` (docs/cost.md)

  /// The tenant of that name, or null.
  const TenantConfig* find_tenant(const std::string& name) const;
  /// The idle policy of a tenant's jobs: the file's, with the tenant's overrides.
  IdlePolicy idle_policy_for(const std::string& tenant) const;

  static std::map<std::string, int> default_priority_classes() {
    return {{"low", 0}, {"normal", 100}, {"high", 1000}};
  }
  /// The class's value, or an error naming the known classes.
  Result<int> priority_value(const std::string& name) const;
};

/// The idle window of a job under a policy, in ms (0: never reclaimed): the job's own
/// idle_timeout when it sets one, else the policy's, never above the policy's maximum. Fails
/// (kInvalidArgument, saying the limit) when the job asks for more than the maximum or for off
/// while there is one.
Result<int64_t> idle_window_for(const IdlePolicy& policy, int64_t job_idle_timeout_ms);

/// Reads and validates a config file. Errors name the file, the entry and the fix, e.g.
/// "gpucloud.yaml: tokens[1].role: 'root' is not admin or member".
Result<ServerFileConfig> load_server_config(const std::string& path);

}  // namespace gpucloud::server
