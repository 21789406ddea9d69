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

void TenantBook::changed(const Row& r) {
  ++changes_;
  if (r.spec) ++*r.cohort_count;
}

const TenantBook::Row* TenantBook::find(const std::string& tenant) const {
  auto it = tenant_rows_.find(tenant);
  return it == tenant_rows_.end() ? nullptr : &rows_[it->second];
}

TenantBook::Row& TenantBook::row(const std::string& tenant) {
  auto [it, fresh] = tenant_rows_.try_emplace(tenant, static_cast<int>(rows_.size()));
  if (fresh) {
    rows_.emplace_back();
    row_names_.push_back(&it->first);
    fill_limits(rows_.back());
  }
  return rows_[it->second];
}

int TenantBook::model_of(const std::string& model) const {
  auto it = models_.find(model);
  return it == models_.end() ? -1 : it->second;
}

int TenantBook::add_model(const std::string& model) {
  auto [it, fresh] = models_.try_emplace(model, static_cast<int>(models_.size()));
  if (fresh)
    for (Row& r : rows_) fill_limits(r);
  return it->second;
}

void TenantBook::fill_limits(Row& r) const {
  r.nominal.assign(models_.size(), 0);
  r.limit.assign(models_.size(), kNoLimit);
  if (!r.spec) return;
  for (const auto& [model, m] : models_) {
    if (auto q = r.spec->quota.find(model); q != r.spec->quota.end())
      r.nominal[m] = int64_t{q->second} * 1000;
    if (auto l = r.spec->borrowing_limit.find(model); l != r.spec->borrowing_limit.end())
      r.limit[m] = int64_t{l->second} * 1000;
  }
}

TenantBook::Asked TenantBook::ask(const std::string& tenant, const std::string& model) const {
  const Row* r = find(tenant);
  if (!r || !r->spec) return {};
  return {r, model_of(model)};
}

void TenantBook::configure(const std::vector<TenantSpec>& tenants) {
  ++changes_;
  ++config_changes_;
  for (Row& r : rows_) {  // (before the specs they point to go)
    r.spec = nullptr;
    r.weight = 1;
    r.cohort = -1;
    r.cohort_count = nullptr;
  }
  specs_.clear();
  cohort_members_.clear();
  for (const auto& t : tenants) {
    specs_[t.name] = t;
    for (const auto& [model, q] : t.quota) add_model(model);
    for (const auto& [model, l] : t.borrowing_limit) add_model(model);
  }
  for (const auto& t : tenants) row(t.name);  // (rows_ may grow: no Row& is held meanwhile)
  for (const auto& [name, spec] : specs_) {
    Row& r = rows_[tenant_rows_.at(name)];
    r.weight = spec.weight <= 0 ? 1 : spec.weight;
    if (!spec.has_quota) continue;
    r.spec = &spec;
    r.cohort_count = &cohort_changes_[spec.cohort];
  }
  for (Row& r : rows_) fill_limits(r);
  // A cohort's members in the order given (as often as given).
  std::map<std::string, int> cohort_index;
  for (const auto& t : tenants) {
    const Row& r = rows_[tenant_rows_.at(t.name)];
    if (!r.spec || r.spec->cohort.empty()) continue;
    auto [it, fresh] =
        cohort_index.try_emplace(r.spec->cohort, static_cast<int>(cohort_index.size()));
    if (fresh) cohort_members_.emplace_back();
    cohort_members_[it->second].push_back(tenant_rows_.at(t.name));
  }
  for (Row& r : rows_)
    if (r.spec && !r.spec->cohort.empty()) r.cohort = cohort_index.at(r.spec->cohort);
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
  const int m = gpu_milli ? add_model(gpu_model) : -1;
  Row& r = row(tenant);
  changed(r);
  if (m >= 0) {
    if (r.used.size() <= static_cast<size_t>(m)) r.used.resize(m + 1, 0);
    r.used[m] += sign * gpu_milli;
  }
  r.gpu_total += sign * gpu_milli;
  r.cpu += sign * cpu_milli;
  r.memory += sign * memory_mib;
}

void TenantBook::hold_reclaim(const std::string& tenant, const std::string& model, int64_t milli,
                              int sign) {
  const int m = add_model(model);
  Row& r = row(tenant);
  changed(r);
  if (r.held.size() <= static_cast<size_t>(m)) r.held.resize(m + 1, 0);
  r.held[m] = std::max<int64_t>(0, r.held[m] + sign * milli);
}

bool TenantBook::within_nominal(const std::string& tenant, const std::string& model,
                                int64_t milli) const {
  const Asked a = ask(tenant, model);
  return !a.row || used(a) + milli <= nominal(a);
}

int64_t TenantBook::nominal_headroom(const std::string& tenant, const std::string& model) const {
  const Asked a = ask(tenant, model);
  if (!a.row) return kNoLimit;
  return std::max<int64_t>(0, nominal(a) - used(a));
}

bool TenantBook::borrowing(const std::string& tenant, const std::string& model) const {
  const Asked a = ask(tenant, model);
  return a.row && used(a) > nominal(a);
}

int64_t TenantBook::over_nominal(const std::string& tenant, const std::string& model) const {
  const Asked a = ask(tenant, model);
  return a.row ? std::max<int64_t>(0, used(a) - nominal(a)) : 0;
}

int64_t TenantBook::over_limit(const std::string& tenant, const std::string& model) const {
  const Asked a = ask(tenant, model);
  if (!a.row) return 0;
  int64_t limit = nominal(a);
  if (!a.row->spec->cohort.empty()) {
    if (borrowing_limit(a) == kNoLimit) return 0;  // it may borrow without limit
    limit += borrowing_limit(a);
  }
  return std::max<int64_t>(0, used(a) - limit);
}

const std::string& TenantBook::cohort_of(const std::string& tenant) const {
  static const std::string kNone;
  const Row* r = find(tenant);
  return r && r->spec ? r->spec->cohort : kNone;
}

int64_t TenantBook::cohort_excess(const std::string& tenant, const std::string& model,
                                  int64_t milli) const {
  const Asked a = ask(tenant, model);
  if (!a.row) return 0;
  const CohortUse cohort = cohort_use(a);
  return std::max<int64_t>(0, cohort.used + milli - cohort.nominal);
}

bool TenantBook::allows(const std::string& tenant, const std::string& model, int64_t milli,
                        std::string* why) const {
  const Asked a = ask(tenant, model);
  if (!a.row || milli == 0) return true;
  const TenantSpec* s = a.row->spec;
  int64_t mine = used(a), quota = nominal(a);
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
  const int64_t limit = borrowing_limit(a);
  const CohortUse cohort = cohort_use(a);
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
  const Asked a = ask(tenant, model);
  if (!a.row) return kNoLimit;
  const int64_t own = nominal(a) - used(a);
  const CohortUse cohort = cohort_use(a);
  const int64_t cohort_room = cohort.nominal - cohort.used;
  if (own > cohort_room) return std::max<int64_t>(0, cohort_room);
  const int64_t lendable = std::max<int64_t>(0, cohort_room - cohort.held);
  return std::max<int64_t>({0, own, std::min(borrowing_limit(a) + own, lendable)});
}

int64_t TenantBook::cohort_room(const std::string& tenant, const std::string& model) const {
  const Asked a = ask(tenant, model);
  if (!a.row) return kNoLimit;
  const CohortUse cohort = cohort_use(a);
  return cohort.nominal - cohort.used;
}

TenantBook::CohortUse TenantBook::cohort_use(const Asked& a) const {
  CohortUse out{nominal(a), used(a), 0, nullptr};
  if (a.row->cohort < 0) return out;
  for (int member : cohort_members_[a.row->cohort]) {
    const Row& m = rows_[member];
    if (&m == a.row) continue;
    const int64_t member_nominal = at(m.nominal, a.model), member_used = at(m.used, a.model);
    out.nominal += member_nominal;
    out.used += member_used;
    if (int64_t h = at(m.held, a.model); h > 0) {
      int64_t held = std::min(h, std::max<int64_t>(0, member_nominal - member_used));
      out.held += held;
      if (held > 0 && !out.reclaimer) out.reclaimer = row_names_[member];
    }
  }
  return out;
}

double TenantBook::dominant_share(const std::string& tenant) const {
  const Row* r = find(tenant);
  if (!r) return 0;
  auto part = [](int64_t used, int64_t cap) {
    return cap > 0 ? static_cast<double>(used) / static_cast<double>(cap) : 0.0;
  };
  double share = std::max({part(r->gpu_total, capacity_gpu_), part(r->cpu, capacity_cpu_),
                           part(r->memory, capacity_memory_)});
  return share / r->weight;
}

std::vector<TenantUsage> TenantBook::usage() const {
  std::vector<const std::string*> model_names(models_.size());
  for (const auto& [model, m] : models_) model_names[m] = &model;
  std::set<std::pair<std::string, std::string>> keys;
  for (size_t t = 0; t < rows_.size(); ++t)
    for (size_t m = 0; m < rows_[t].used.size(); ++m)
      if (rows_[t].used[m] != 0) keys.insert({*row_names_[t], *model_names[m]});
  for (const auto& [tenant, s] : specs_)
    for (const auto& [model, q] : s.quota) keys.insert({tenant, model});
  std::vector<TenantUsage> out;
  for (const auto& [tenant, model] : keys) {
    TenantUsage u;
    u.tenant = tenant;
    u.gpu_model = model;
    const Row& r = rows_[tenant_rows_.at(tenant)];
    u.used_milli = at(r.used, model_of(model));
    if (const Asked a = ask(tenant, model); a.row) {
      u.quota_milli = nominal(a);
      u.borrowed_milli = std::max<int64_t>(0, u.used_milli - u.quota_milli);
    }
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace gpucloud::sched
