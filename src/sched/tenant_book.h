// Quota and fair-share accounting per tenant, with Kueue's semantics: a tenant may always use
// its nominal quota of a GPU model; beyond it, it borrows the unused nominal quota of its cohort,
// up to its borrowing limit. The weighted dominant-resource share orders tenants in the queue.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
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
  bool limited(const std::string& tenant) const {
    const Row* r = find(tenant);
    return r && r->spec;
  }
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
  // Tenants and GPU models are kept by index: a question finds its tenant and model once, then
  // reads vectors (a cohort's members are rows too).
  struct Row {
    const TenantSpec* spec = nullptr;     // its spec if it has a quota (specs_)
    double weight = 1;                    // from its spec, quota or not
    int cohort = -1;                      // index into cohort_members_ (a quota and a cohort)
    uint64_t* cohort_count = nullptr;     // its cohort's cohort_changes_ entry (quota only)
    std::vector<int64_t> nominal, limit;  // by model, milli (limit: none if absent)
    std::vector<int64_t> used, held;      // by model, milli
    int64_t gpu_total = 0, cpu = 0, memory = 0;
  };
  static constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max() / 4;
  // The row of a tenant (nullptr: never named in a spec, a charge or a hold).
  const Row* find(const std::string& tenant) const;
  // The tenant's row, made (without a spec) when it has none.
  Row& row(const std::string& tenant);
  // The model's index, -1 when no spec, charge or hold named it (nothing is used or held of it,
  // and no quota names it).
  int model_of(const std::string& model) const;
  int add_model(const std::string& model);
  // Fills the row's nominal quota and borrowing limit for every model from its spec.
  void fill_limits(Row& r) const;
  static int64_t at(const std::vector<int64_t>& by_model, int m) {
    return m >= 0 && static_cast<size_t>(m) < by_model.size() ? by_model[m] : 0;
  }
  // The row and model of a question about a tenant with a quota (row nullptr: no quota).
  struct Asked {
    const Row* row = nullptr;
    int model = -1;
  };
  Asked ask(const std::string& tenant, const std::string& model) const;
  int64_t nominal(const Asked& a) const { return at(a.row->nominal, a.model); }
  int64_t used(const Asked& a) const { return at(a.row->used, a.model); }
  int64_t borrowing_limit(const Asked& a) const {
    return a.model >= 0 ? a.row->limit[a.model] : kNoLimit;
  }
  // The model's nominal quota and use summed over the tenant and the other members of its
  // cohort, and what members reclaiming quota they lent hold of their unused nominal quota
  // (with the first such member).
  struct CohortUse {
    int64_t nominal = 0, used = 0, held = 0;
    const std::string* reclaimer = nullptr;
  };
  CohortUse cohort_use(const Asked& a) const;

  std::map<std::string, TenantSpec> specs_;
  std::unordered_map<std::string, int> tenant_rows_;
  std::vector<Row> rows_;
  std::vector<const std::string*> row_names_;  // (keys of tenant_rows_)
  std::unordered_map<std::string, int> models_;
  std::vector<std::vector<int>> cohort_members_;  // rows, in the order given
  int64_t capacity_gpu_ = 0, capacity_cpu_ = 0, capacity_memory_ = 0;
  uint64_t changes_ = 0;
  uint64_t config_changes_ = 0;
  std::map<std::string, uint64_t, std::less<>> cohort_changes_;
  // A change to the tenant's use or holds: counted for its cohort too.
  void changed(const Row& r);
};

}  // namespace gpucloud::sched
