// Quota and fair-share accounting per tenant, with Kueue's semantics: a tenant may always use
// its nominal quota of a GPU model; beyond it, it borrows the unused nominal quota of its cohort,
// up to its borrowing limit. The weighted dominant-resource share orders tenants in the queue.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sched/types.h"

namespace gpucloud::sched {

/// Tenants, their quotas and what they use.
class TenantBook {
 public:
  /// Replaces the tenant specs; use is kept.
  void configure(const std::vector<TenantSpec>& tenants);
  /// Cluster capacity for dominant shares: GPU milli, CPU milli and memory of all nodes.
  void set_capacity(int64_t gpu_milli, int64_t cpu_milli, int64_t memory_mib);

  /// Records (sign +1) or releases (sign -1) what a replica uses.
  void charge(const std::string& tenant, const std::string& gpu_model, int64_t gpu_milli,
              int64_t cpu_milli, int64_t memory_mib, int sign);

  /// Whether the tenant may take `milli` more of the model now. On false, `why` (if given)
  /// says which limit, e.g. "tenant vision: A100 quota 16 in use of 16, cohort has none to lend".
  bool allows(const std::string& tenant, const std::string& gpu_model, int64_t milli,
              std::string* why = nullptr) const;
  /// The most of the model the tenant may take now, in milli: allows(tenant, model, m) holds for
  /// every m from 0 up to it and for none above (a large value without a quota).
  int64_t headroom(const std::string& tenant, const std::string& gpu_model) const;
  /// The model's nominal quota of the tenant's cohort (the tenant alone without one) less what
  /// its members use, in milli (negative when they use more).
  int64_t cohort_room(const std::string& tenant, const std::string& gpu_model) const;
  /// Whether taking `milli` more of the model keeps the tenant within its nominal quota
  /// (a lender reclaiming what it lent may preempt borrowers).
  bool within_nominal(const std::string& tenant, const std::string& gpu_model, int64_t milli) const;
  /// How much more of the model the tenant may take within its nominal quota, in milli (a
  /// large value without a quota; 0 at or above it).
  int64_t nominal_headroom(const std::string& tenant, const std::string& gpu_model) const;
  /// Whether the tenant currently uses more of the model than its nominal quota.
  bool borrowing(const std::string& tenant, const std::string& gpu_model) const;
  /// How much of the model the tenant uses above its nominal quota, in milli (0 without a quota).
  int64_t over_nominal(const std::string& tenant, const std::string& gpu_model) const;
  /// How much of the model the tenant uses above what it may hold at all, in milli: its nominal
  /// quota plus, in a cohort, its borrowing limit (none: no limit); 0 without a quota. Use above
  /// it (after a quota shrank) must be reclaimed, lender or not.
  int64_t over_limit(const std::string& tenant, const std::string& gpu_model) const;
  /// Whether the tenant has a quota (false: nothing it uses is limited).
  bool limited(const std::string& tenant) const { return spec(tenant) != nullptr; }
  /// The tenant's cohort, "" when it has none or no quota (it then lends and borrows nothing).
  const std::string& cohort_of(const std::string& tenant) const;
  /// How much of the model the cohort's members would use above the cohort's nominal quota if
  /// the tenant took `milli` more (0 when it fits): what reclaiming must free.
  int64_t cohort_excess(const std::string& tenant, const std::string& gpu_model,
                        int64_t milli) const;

  /// Holds (sign +1) or releases (sign -1) `milli` of the model for the tenant while it
  /// reclaims quota it lent (from choosing the borrowers to preempt until its job starts or
  /// leaves): meanwhile its cohort lends none of it again, so borrowers cannot take back what
  /// their preemption freed.
  void hold_reclaim(const std::string& tenant, const std::string& gpu_model, int64_t milli,
                    int sign);

  /// max(GPU, CPU, memory share of the cluster) / weight; 0 for a tenant using nothing.
  double dominant_share(const std::string& tenant) const;

  /// Use per tenant and model (tenants with a quota are listed even when idle).
  std::vector<TenantUsage> usage() const;

  /// Counts the changes to use and configuration: equal counts mean every answer above is
  /// unchanged.
  uint64_t changes() const { return changes_; }
  /// Counts the changes to the use and holds of the cohort's members and to the configuration:
  /// while it is unchanged, every answer above about them that reads no other tenant's use
  /// (all but dominant_share) is unchanged. The cohort "" (cohort_of a tenant without one)
  /// counts those of every tenant with a quota and no cohort (a tenant without a quota is told
  /// the same whatever it uses).
  uint64_t cohort_changes(const std::string& cohort) const {
    auto it = cohort_changes_.find(cohort);
    return config_changes_ + (it == cohort_changes_.end() ? 0 : it->second);
  }

 private:
  struct Use {
    std::map<std::string, int64_t> gpu_milli;  // per model
    int64_t gpu_total = 0, cpu = 0, memory = 0;
  };
  const TenantSpec* spec(const std::string& tenant) const;
  int64_t used(const std::string& tenant, const std::string& model) const;
  static int64_t nominal(const TenantSpec& spec, const std::string& model);
  // The tenant's borrowing limit on the model, in milli (a large value without one).
  static int64_t borrowing_limit(const TenantSpec& spec, const std::string& model);
  // The model's nominal quota and use summed over the tenant and the other members of its
  // cohort, and what members reclaiming quota they lent hold of their unused nominal quota
  // (with the first such member).
  struct CohortUse {
    int64_t nominal = 0, used = 0, held = 0;
    const std::string* reclaimer = nullptr;
  };
  CohortUse cohort_use(const std::string& tenant, const TenantSpec& spec,
                       const std::string& model) const;

  std::map<std::string, TenantSpec> specs_;
  std::map<std::string, std::vector<std::string>> cohorts_;  // cohort -> members
  std::map<std::string, Use> use_;
  std::map<std::pair<std::string, std::string>, int64_t> reclaim_held_;  // (tenant, model)
  int64_t capacity_gpu_ = 0, capacity_cpu_ = 0, capacity_memory_ = 0;
  uint64_t changes_ = 0;
  uint64_t config_changes_ = 0;
  std::map<std::string, uint64_t, std::less<>> cohort_changes_;
  // A change to the tenant's use or holds: counted for its cohort too.
  void changed(const std::string& tenant);
};

}  // namespace gpucloud::sched
