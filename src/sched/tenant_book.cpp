#include "sched/tenant_book.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

namespace gpucloud::sched {
namespace {

// "16", "6110.5", "0.25": GPUs from milli, without exponents or trailing zeros.
std::string gpus_text(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  std::string text = fmt::format("{:.3f}", milli / 1000.0);
  while (text.back() == '0') text.pop_back();
  return text;
}

}  // namespace

void TenantBook::changed(const std::string& tenant) {
  ++changes_;
  if (const TenantSpec* s = spec(tenant)) ++cohort_changes_[s->cohort];
}

void TenantBook::configure(const std::vector<TenantSpec>& tenants) {
  ++changes_;
  ++config_changes_;
  specs_.clear();
  cohorts_.clear();
  for (const auto& t : tenants) {
    specs_[t.name] = t;
    if (!t.cohort.empty() && t.has_quota) cohorts_[t.cohort].push_back(t.name);
  }
}

void TenantBook::set_capacity(int64_t gpu_milli, int64_t cpu_milli, int64_t memory_mib) {
  ++changes_;
  ++config_changes_;
  capacity_gpu_ = gpu_milli;
  capacity_cpu_ = cpu_milli;
  capacity_memory_ = memory_mib;
}

void TenantBook::charge(const std::string& tenant, const std::string& gpu_model, int64_t gpu_milli,
                        int64_t cpu_milli, int64_t memory_mib, int sign) {
  changed(tenant);
  Use& u = use_[tenant];
  if (gpu_milli) u.gpu_milli[gpu_model] += sign * gpu_milli;
  u.gpu_total += sign * gpu_milli;
  u.cpu += sign * cpu_milli;
  u.memory += sign * memory_mib;
}

void TenantBook::hold_reclaim(const std::string& tenant, const std::string& model, int64_t milli,
                              int sign) {
  changed(tenant);
  auto [it, fresh] = reclaim_held_.try_emplace({tenant, model}, 0);
  it->second += sign * milli;
  if (it->second <= 0) reclaim_held_.erase(it);
}

const TenantSpec* TenantBook::spec(const std::string& tenant) const {
  auto it = specs_.find(tenant);
  return it == specs_.end() || !it->second.has_quota ? nullptr : &it->second;
}

int64_t TenantBook::nominal(const TenantSpec& spec, const std::string& model) {
  auto it = spec.quota.find(model);
  return it == spec.quota.end() ? 0 : int64_t{it->second} * 1000;
}

int64_t TenantBook::used(const std::string& tenant, const std::string& model) const {
  auto it = use_.find(tenant);
  if (it == use_.end()) return 0;
  auto m = it->second.gpu_milli.find(model);
  return m == it->second.gpu_milli.end() ? 0 : m->second;
}

bool TenantBook::within_nominal(const std::string& tenant, const std::string& model,
                                int64_t milli) const {
  const TenantSpec* s = spec(tenant);
  return !s || used(tenant, model) + milli <= nominal(*s, model);
}

int64_t TenantBook::nominal_headroom(const std::string& tenant, const std::string& model) const {
  const TenantSpec* s = spec(tenant);
  if (!s) return std::numeric_limits<int64_t>::max() / 4;
  return std::max<int64_t>(0, nominal(*s, model) - used(tenant, model));
}

bool TenantBook::borrowing(const std::string& tenant, const std::string& model) const {
  const TenantSpec* s = spec(tenant);
  return s && used(tenant, model) > nominal(*s, model);
}

int64_t TenantBook::over_nominal(const std::string& tenant, const std::string& model) const {
  const TenantSpec* s = spec(tenant);
  return s ? std::max<int64_t>(0, used(tenant, model) - nominal(*s, model)) : 0;
}

int64_t TenantBook::over_limit(const std::string& tenant, const std::string& model) const {
  const TenantSpec* s = spec(tenant);
  if (!s) return 0;
  int64_t limit = nominal(*s, model);
  if (!s->cohort.empty()) {
    auto it = s->borrowing_limit.find(model);
    if (it == s->borrowing_limit.end()) return 0;  // it may borrow without limit
    limit += int64_t{it->second} * 1000;
  }
  return std::max<int64_t>(0, used(tenant, model) - limit);
}

const std::string& TenantBook::cohort_of(const std::string& tenant) const {
  static const std::string kNone;
  const TenantSpec* s = spec(tenant);
  return s ? s->cohort : kNone;
}

int64_t TenantBook::cohort_excess(const std::string& tenant, const std::string& model,
                                  int64_t milli) const {
  const TenantSpec* s = spec(tenant);
  if (!s) return 0;
  int64_t cohort_nominal = nominal(*s, model), cohort_used = used(tenant, model);
  if (auto c = cohorts_.find(s->cohort); c != cohorts_.end() && !s->cohort.empty())
    for (const auto& member : c->second)
      if (member != tenant) {
        cohort_nominal += nominal(specs_.at(member), model);
        cohort_used += used(member, model);
      }
  return std::max<int64_t>(0, cohort_used + milli - cohort_nominal);
}

bool TenantBook::allows(const std::string& tenant, const std::string& model, int64_t milli,
                        std::string* why) const {
  const TenantSpec* s = spec(tenant);
  if (!s || milli == 0) return true;
  int64_t mine = used(tenant, model), quota = nominal(*s, model);
  if (mine + milli <= quota) {
    // The tenant's own quota, unless others borrowed it: then it must be reclaimed first.
    if (int64_t excess = cohort_excess(tenant, model, milli); excess > 0) {
      if (why)
        *why = fmt::format("tenant {}: {} quota {} in use of {}; {} of it is lent within cohort {}",
                           tenant, model.empty() ? "GPU" : model, gpus_text(mine), gpus_text(quota),
                           gpus_text(excess), s->cohort);
      return false;
    }
    return true;
  }
  // Borrowing: within the tenant's limit and the cohort's unused nominal quota (Kueue: cohort
  // use + request <= cohort nominal), less what members reclaiming their lent quota hold of
  // their unused nominal quota.
  const int64_t limit = borrowing_limit(*s, model);
  const CohortUse cohort = cohort_use(tenant, *s, model);
  const std::string* reclaimer = cohort.reclaimer;
  int64_t lendable = std::max<int64_t>(0, cohort.nominal - cohort.used - cohort.held);
  int64_t need = milli;
  int64_t already = mine - quota;  // may be negative: part of the request is the tenant's own
  if (already + need <= limit && need <= lendable) return true;
  if (why) {
    std::string lend;
    if (s->cohort.empty())
      lend = "no cohort to borrow from";
    else if (already + need > limit)
      lend = fmt::format("borrowing limit {} reached in cohort {}", gpus_text(limit), s->cohort);
    else if (lendable == 0)
      lend = fmt::format("cohort {} has none to lend", s->cohort);
    else
      lend = fmt::format("cohort {} can lend only {}", s->cohort, gpus_text(lendable));
    if (reclaimer && already + need <= limit)
      lend += fmt::format(" (tenant {} is taking back quota it lent)", *reclaimer);
    *why = fmt::format("tenant {}: {} quota {} in use of {}, {}", tenant,
                       model.empty() ? "GPU" : model, gpus_text(mine), gpus_text(quota), lend);
  }
  return false;
}

int64_t TenantBook::headroom(const std::string& tenant, const std::string& model) const {
  // allows() in closed form. Within its own quota (m <= own) a request must leave the cohort
  // within its nominal quota (m <= cohort_room); above it, it borrows: up to its borrowing
  // limit above the quota and what the cohort can lend (lendable <= cohort_room, as lendable
  // also counts what reclaiming members hold). So where own > cohort_room nothing above
  // cohort_room is allowed; else everything up to own, and beyond it what borrowing allows.
  const TenantSpec* s = spec(tenant);
  if (!s) return std::numeric_limits<int64_t>::max() / 4;
  const int64_t own = nominal(*s, model) - used(tenant, model);
  const CohortUse cohort = cohort_use(tenant, *s, model);
  const int64_t cohort_room = cohort.nominal - cohort.used;
  if (own > cohort_room) return std::max<int64_t>(0, cohort_room);
  const int64_t lendable = std::max<int64_t>(0, cohort_room - cohort.held);
  return std::max<int64_t>({0, own, std::min(borrowing_limit(*s, model) + own, lendable)});
}

int64_t TenantBook::cohort_room(const std::string& tenant, const std::string& model) const {
  const TenantSpec* s = spec(tenant);
  if (!s) return std::numeric_limits<int64_t>::max() / 4;
  const CohortUse cohort = cohort_use(tenant, *s, model);
  return cohort.nominal - cohort.used;
}

int64_t TenantBook::borrowing_limit(const TenantSpec& spec, const std::string& model) {
  auto it = spec.borrowing_limit.find(model);
  return it == spec.borrowing_limit.end() ? std::numeric_limits<int64_t>::max() / 4
                                          : int64_t{it->second} * 1000;
}

TenantBook::CohortUse TenantBook::cohort_use(const std::string& tenant, const TenantSpec& spec,
                                             const std::string& model) const {
  CohortUse out{nominal(spec, model), used(tenant, model), 0, nullptr};
  auto c = cohorts_.find(spec.cohort);
  if (spec.cohort.empty() || c == cohorts_.end()) return out;
  for (const auto& member : c->second) {
    if (member == tenant) continue;
    int64_t member_nominal = nominal(specs_.at(member), model);
    int64_t member_used = used(member, model);
    out.nominal += member_nominal;
    out.used += member_used;
    if (auto h = reclaim_held_.find({member, model}); h != reclaim_held_.end()) {
      int64_t held = std::min(h->second, std::max<int64_t>(0, member_nominal - member_used));
      out.held += held;
      if (held > 0 && !out.reclaimer) out.reclaimer = &member;
    }
  }
  return out;
}

double TenantBook::dominant_share(const std::string& tenant) const {
  auto it = use_.find(tenant);
  if (it == use_.end()) return 0;
  const Use& u = it->second;
  auto part = [](int64_t used, int64_t cap) {
    return cap > 0 ? static_cast<double>(used) / static_cast<double>(cap) : 0.0;
  };
  double share = std::max({part(u.gpu_total, capacity_gpu_), part(u.cpu, capacity_cpu_),
                           part(u.memory, capacity_memory_)});
  auto s = specs_.find(tenant);
  double weight = s == specs_.end() || s->second.weight <= 0 ? 1 : s->second.weight;
  return share / weight;
}

std::vector<TenantUsage> TenantBook::usage() const {
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto& [tenant, u] : use_)
    for (const auto& [model, milli] : u.gpu_milli)
      if (milli != 0) keys.insert({tenant, model});
  for (const auto& [tenant, s] : specs_)
    for (const auto& [model, q] : s.quota) keys.insert({tenant, model});
  std::vector<TenantUsage> out;
  for (const auto& [tenant, model] : keys) {
    TenantUsage u;
    u.tenant = tenant;
    u.gpu_model = model;
    u.used_milli = used(tenant, model);
    if (const TenantSpec* s = spec(tenant)) {
      u.quota_milli = nominal(*s, model);
      u.borrowed_milli = std::max<int64_t>(0, u.used_milli - u.quota_milli);
    }
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace gpucloud::sched
