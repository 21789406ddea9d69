// Wake-ups: a pass decides the jobs submitted since the last one and, per tenant in queue
// order, the waiting jobs that may use what was freed since: capacity on a node (a job ended, a
// node joined, a reservation or a preemptor's hold ended), quota (a job of the tenant or its
// cohort ended), or a new running job they may preempt. The rest still cannot start (capacity
// and quota only shrink in between) and keep their reason, so an event costs what it freed,
// not the length of the queue.
#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <queue>
#include <set>

#include "sched/cluster_scheduler.h"
#include "sched/fit.h"

namespace gpucloud::sched {
namespace {

int64_t job_gpu_milli(const JobRequest& r) {
  return replica_gpu_milli(r) * r.replicas;
}

// A capacity's sizes (whole GPUs, GPU milli, CPUs, memory), and setting them.
std::array<int64_t, 4> sizes_of(const WaitCapacity& c) {
  return {c.whole_gpus, c.max_free_milli, c.cpu_milli, c.memory_mib};
}
void set_sizes(WaitCapacity& c, const std::array<int64_t, 4>& sizes) {
  c.whole_gpus = static_cast<int32_t>(sizes[0]);
  c.max_free_milli = static_cast<int32_t>(sizes[1]);
  c.cpu_milli = sizes[2];
  c.memory_mib = sizes[3];
}

// Raises each size of `into` (whole GPUs, GPU milli, CPUs, memory) to `from`'s where larger.
void take_most(WaitCapacity& into, const WaitCapacity& from) {
  into.whole_gpus = std::max(into.whole_gpus, from.whole_gpus);
  into.max_free_milli = std::max(into.max_free_milli, from.max_free_milli);
  into.cpu_milli = std::max(into.cpu_milli, from.cpu_milli);
  into.memory_mib = std::max(into.memory_mib, from.memory_mib);
}

}  // namespace

bool ClusterScheduler::waits_now(const PendingJob& job, TimeMs now) const {
  // As decide() would find: a job of the same request, priority and tenant waits in this pass
  // (for the same reservation), and nothing was freed since.
  if (!job.victims.empty() || nominated_slots_.count(job.req.job_id)) return false;
  auto it = waits_.find({job.shape, job.req.replicas, job.req.priority,
                         ends_before_reservation(job.req, now), job.tenant});
  return it != waits_.end() && it->second.now == now &&
         it->second.reservation == (reservation_ ? reservation_->job_id : std::string());
}

int ClusterScheduler::quota_wait_class(const PendingJob& job) {
  // decide(): a job whose shape failed to place waits for resources without a placement tried;
  // one the quota allows on some model may start there.
  const JobRequest& r = job.req;
  if (r.replicas != 1 || !job.victims.empty() || nominated_slots_.count(r.job_id) ||
      failed_shapes_.count(job.shape))
    return -1;
  const int64_t milli = replica_gpu_milli(r);
  if (milli == 0 || !tenants_.limited(r.tenant)) return -1;
  Shape& shape = shapes_[job.shape];
  bool any_allowed = false, all_allowed = true;
  for (const auto& model : shape_models(shape)) {
    bool allowed = milli <= quota_headroom(job.tenant, model);
    any_allowed |= allowed;
    all_allowed &= allowed;
  }
  if (all_allowed) return -1;
  // Its search (choose_reclaim_victims) is skipped, or known to find too little.
  if (settings_.preemption &&
      !failed_preemptions_.count({job.shape, r.replicas, r.priority, job.tenant}) &&
      !cohort_of_tenant(job.tenant).empty() && !reclaim_known_to_fail(job))
    return -1;
  // Held back by quota, not by resources: else it would search for victims (choose_victims).
  if (!gpus_free_somewhere(shape)) return -1;
  auto& ranked = refresh_ranking(job.shape).ranked;
  if (!any_allowed) return first_fitting_class(shape, ranked);
  // As pick_node walks the classes: none of a model the quota allows may fit it (it would be
  // tried there), and the first of another names the quota that refuses it.
  int first_refused = -1;
  bool allowed_fits = visit_live_classes(ranked, [&](const NodeClass& c) {
    if (!memory_fits(shape, c.id)) return false;
    if (milli <= quota_headroom(job.tenant, c.static_group)) return true;
    if (first_refused < 0) first_refused = c.id;
    return false;
  });
  return allowed_fits ? -1 : first_refused;
}

WaitNeed ClusterScheduler::wait_need(const PendingJob& job) const {
  const JobRequest& r = job.req;
  WaitNeed n;
  n.whole_gpus = r.gpu_milli > 0 ? 0 : r.gpus;
  n.share_milli = r.gpu_milli;
  n.cpu_milli = r.cpu_milli;
  n.memory_mib = r.memory_mib;
  n.quota_milli = job_gpu_milli(r);
  n.quota_each = r.replicas > 0 ? n.quota_milli / r.replicas : n.quota_milli;
  n.runtime_ms = r.max_runtime_ms;
  n.spot = r.preemptible();
  return n;
}

int ClusterScheduler::wait_class_of(const PendingJob& job) {
  if (job.had_victims || nominated_slots_.count(job.req.job_id)) return -1;
  // (The shape fixes what a job needs but its runtime: WaitIndex asks a class's need once.)
  auto key = std::make_tuple(job.shape, job.req.replicas, job.req.priority);
  return wait_classes_.try_emplace(key, static_cast<int>(wait_classes_.size())).first->second;
}

void ClusterScheduler::reset_wait_marks() {
  // As decide() finds whether a job ends before the reservation.
  waiting_.clear_waiting(reservation_ && reservation_->start != kNever
                             ? std::max<TimeMs>(-1, reservation_->start - pass_now_)
                             : -1);
}

void ClusterScheduler::index_waiting(PendingJob& job) {
  if (waiting_groups_ != classes_.static_groups()) return;  // rebuilt before the next pass
  job.signature = fit_signature(shapes_[job.shape]);
  job.wait_class = wait_class_of(job);
  waiting_.add(job.tenant, job.signature, job.key(), wait_need(job), &job, job.wait_class);
}

void ClusterScheduler::unindex_waiting(PendingJob& job) {
  if (job.signature < 0) return;
  waiting_.remove(job.tenant, job.signature, job.key());
  job.signature = -1;
  job.wait_class = -1;
}

void ClusterScheduler::rebuild_waiting() {
  waiting_.clear();
  waiting_groups_ = classes_.static_groups();
  for (auto& [id, job] : pending_) {
    job.signature = -1;
    index_waiting(job);
  }
  decide_all_ = true;  // jobs that could not run on any node before may run on the new kind
}

void ClusterScheduler::note_freed(int slot) {
  if (slot_freed_.size() <= static_cast<size_t>(slot)) slot_freed_.resize(nodes_.size(), 0);
  if (slot_freed_[slot]) return;
  slot_freed_[slot] = 1;
  freed_slots_.push_back(slot);
}

void ClusterScheduler::wake_in_pass(int slot) {
  if (sources_started_) {
    if (!sources_.count(slot)) sources_order_.push_back(slot);
    sources_[slot] = true;
    dirty_sources_.push_back(slot);
  } else if (std::find(wake_slots_.begin(), wake_slots_.end(), slot) == wake_slots_.end()) {
    wake_slots_.push_back(slot);
  }
}

const std::string& ClusterScheduler::cohort_of_tenant(int tenant) {
  if (headroom_.size() < tenant_names_.size()) headroom_.resize(tenant_names_.size());
  TenantHeadroom& cached = headroom_[tenant];
  if (!cached.cohort) cached.cohort = &tenants_.cohort_of(tenant_names_[tenant]);
  return *cached.cohort;
}

int ClusterScheduler::cohort_id_of_tenant(int tenant) {
  const std::string& cohort = cohort_of_tenant(tenant);  // (sizes headroom_)
  int& id = headroom_[tenant].cohort_id;
  if (id == kUnknownCohort) id = cohort_id(cohort);
  return id;
}

ClusterScheduler::TenantHeadroom& ClusterScheduler::tenant_headroom(int tenant) {
  // It reads the use of the tenant's cohort alone.
  if (headroom_.size() < tenant_names_.size()) headroom_.resize(tenant_names_.size());
  TenantHeadroom& cached = headroom_[tenant];
  if (cached.book_changes == tenants_.changes() && cached.cohort) return cached;
  if (!cached.cohort) cohort_of_tenant(tenant);
  if (const uint64_t changes = tenants_.cohort_changes(*cached.cohort); cached.changes != changes) {
    cached.by_model.clear();
    std::fill(cached.by_group.begin(), cached.by_group.end(), kUnknownHeadroom);
    cached.changes = changes;
  }
  cached.book_changes = tenants_.changes();
  return cached;
}

int64_t ClusterScheduler::quota_headroom(int tenant, const std::string& model) {
  TenantHeadroom& cached = tenant_headroom(tenant);
  for (const auto& [known, headroom] : cached.by_model)
    if (known == model) return headroom;
  return cached.by_model.emplace_back(model, tenants_.headroom(tenant_names_[tenant], model))
      .second;
}

int64_t ClusterScheduler::quota_headroom(int tenant, int group) {
  TenantHeadroom& cached = tenant_headroom(tenant);
  if (cached.by_group.size() <= static_cast<size_t>(group))
    cached.by_group.resize(classes_.static_groups(), kUnknownHeadroom);
  if (int64_t known = cached.by_group[group]; known != kUnknownHeadroom) return known;
  const int64_t headroom = quota_headroom(tenant, classes_.group_example(group).gpu_model);
  return cached.by_group[group] = headroom;
}

int64_t ClusterScheduler::quota_reach(int tenant, const std::string& model) {
  return std::max(quota_headroom(tenant, model),
                  tenants_.nominal_headroom(tenant_names_[tenant], model));
}

ClusterScheduler::NodeFree::NodeFree(const Node& n, int at)
    : node(n),
      slot(at),
      cpu(n.state.cpu_milli - n.state.cpu_used_milli),
      memory(n.state.memory_mib - n.state.memory_used_mib) {
  for (const auto& g : n.state.gpus) used.push_back(g.used_milli);
}

void ClusterScheduler::NodeFree::release(const RunningJob& r) {
  for (const auto& [other_slot, rp] : r.replicas) {
    if (other_slot != slot) continue;
    cpu += rp.cpu_milli;
    memory += rp.memory_mib;
    for (const auto& share : rp.gpus)
      for (size_t p = 0; p < node.state.gpus.size(); ++p)
        if (node.state.gpus[p].index == share.index) used[p] -= share.milli;
  }
}

WaitCapacity ClusterScheduler::NodeFree::capacity(int min_priority, int64_t quota_milli) const {
  WaitCapacity cap;
  for (int u : used) {
    if (u <= 0) ++cap.whole_gpus;
    cap.max_free_milli = std::max(cap.max_free_milli, 1000 - std::max(u, 0));
  }
  cap.cpu_milli = cpu;
  cap.memory_mib = memory;
  cap.quota_milli = quota_milli;
  cap.min_priority = min_priority;
  return cap;
}

void ClusterScheduler::preemption_caps(int slot, bool free_too,
                                       std::vector<std::pair<int, WaitCapacity>>& caps) {
  int c = classes_.class_of(slot);
  if (c < 0 || !nodes_[slot].present) return;
  const Node& n = nodes_[slot];
  const int group = classes_.summary(c).static_group;
  // What the node would offer were the jobs a pending job may preempt gone: per priority level
  // of its running jobs, all jobs up to that level (a spot job a level lower: jobs of its own
  // priority may preempt it), for jobs of a higher priority.
  std::vector<std::pair<int, const RunningJob*>> eligible;  // level, job
  for (const auto& [seq, r] : n.jobs) {
    if (r->preempting || r->placed_pass == pass_) continue;
    eligible.push_back({r->req.preemptible() ? r->req.priority - 1 : r->req.priority, r});
  }
  std::sort(eligible.begin(), eligible.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  NodeFree node(n, slot);
  // Held for a reservation (only jobs that end before it) or for preemptors (only jobs of a
  // higher priority): what is free there; and so for the preemption levels below.
  int64_t runtime_limit = WaitCapacity::kAny;
  if (reservation_ && slot < static_cast<int>(reserved_slot_.size()) && reserved_slot_[slot])
    runtime_limit =
        reservation_->start == kNever ? 0 : std::max<TimeMs>(0, reservation_->start - last_now_);
  int held_for = std::numeric_limits<int>::min();
  if (slot < static_cast<int>(nominees_by_slot_.size()))
    for (const auto& [priority, id] : nominees_by_slot_[slot])
      held_for = std::max(held_for, priority);
  if (free_too) {
    WaitCapacity cap = node.capacity(held_for, WaitCapacity::kAny);
    cap.runtime_limit = runtime_limit;
    caps.push_back({group, cap});
  }
  if (!settings_.preemption) return;
  bool spot_at_level = false;  // the level holds a spot job of the level's priority + 1
  for (size_t i = 0; i < eligible.size(); ++i) {
    const RunningJob& r = *eligible[i].second;
    node.release(r);
    spot_at_level |= r.req.preemptible();
    if (i + 1 < eligible.size() && eligible[i + 1].first == eligible[i].first) continue;
    // As choose_victims: not on a node held for a preemptor of at least the job's priority,
    // nor on one reserved for another job unless the job ends before the reservation.
    WaitCapacity cap = node.capacity(std::max(eligible[i].first, held_for), WaitCapacity::kAny);
    cap.runtime_limit = runtime_limit;
    cap.by_preempting = true;
    if (spot_at_level) cap.spot_excluded_priority = eligible[i].first + 1;
    caps.push_back({group, cap});
    spot_at_level = false;
  }
}

const ClusterScheduler::SlotReclaim& ClusterScheduler::reclaim_levels(int tenant, int slot) {
  if (slot_reclaim_.size() <= static_cast<size_t>(tenant)) slot_reclaim_.resize(tenant + 1);
  auto& memos = slot_reclaim_[tenant];
  if (memos.size() <= static_cast<size_t>(slot))
    memos.resize(std::max(nodes_.size(), static_cast<size_t>(slot) + 1));
  SlotReclaim& memo = memos[slot];
  const uint64_t version = slot < static_cast<int>(slot_version_.size()) ? slot_version_[slot] : 0;
  if (memo.valid && memo.version == version && (memo.pass == 0 || memo.pass == pass_)) return memo;
  memo.valid = true;
  memo.version = version;
  memo.pass = 0;
  memo.group = -1;
  memo.levels.clear();  // (keeping its room)
  int c = classes_.class_of(slot);
  if (c < 0 || !nodes_[slot].present || !settings_.preemption) return memo;
  memo.group = classes_.summary(c).static_group;
  const Node& n = nodes_[slot];
  const std::string& cohort = cohort_of_tenant(tenant);
  // A job of the tenant within its nominal quota may preempt the jobs it outranks and reclaim
  // from its cohort's borrowers that do not outrank it (choose_victims). Per threshold t (one
  // above a running job's level, or a borrower's priority): for jobs of priority t or higher,
  // every job of a level below t gone and every such borrower of priority t or lower. Only
  // once a borrower is gone: before, the preemption levels every tenant shares say as much.
  auto level = [](const RunningJob* r) {
    return r->req.preemptible() ? r->req.priority - 1 : r->req.priority;
  };
  // (A node runs few jobs: small vectors, searched linearly.)
  using Jobs = boost::container::small_vector<const RunningJob*, 16>;
  Jobs eligible, borrowers;
  for (const auto& [seq, r] : n.jobs) {
    if (r->preempting) continue;
    if (r->placed_pass == pass_) {
      memo.pass = pass_;  // a possible victim from the next pass on
      continue;
    }
    eligible.push_back(r);
    if (r->borrowed && r->tenant != tenant && !cohort.empty() &&
        cohort_of_tenant(r->tenant) == cohort)
      borrowers.push_back(r);
  }
  if (borrowers.empty()) return memo;
  boost::container::small_vector<int, 32> thresholds;
  for (const RunningJob* r : eligible) thresholds.push_back(level(r) + 1);
  for (const RunningJob* r : borrowers) thresholds.push_back(r->req.priority);
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  std::stable_sort(eligible.begin(), eligible.end(),
                   [&](const RunningJob* a, const RunningJob* b) { return level(a) < level(b); });
  std::stable_sort(
      borrowers.begin(), borrowers.end(),
      [](const RunningJob* a, const RunningJob* b) { return a->req.priority < b->req.priority; });
  NodeFree node(n, slot);
  Jobs released;
  auto release = [&](const RunningJob* r) {
    if (std::find(released.begin(), released.end(), r) != released.end()) return;
    released.push_back(r);
    node.release(*r);
  };
  size_t e = 0, b = 0;
  for (int t : thresholds) {
    for (; e < eligible.size() && level(eligible[e]) < t; ++e) release(eligible[e]);
    for (; b < borrowers.size() && borrowers[b]->req.priority <= t; ++b) release(borrowers[b]);
    if (b > 0) memo.levels.push_back({t, node.capacity(std::numeric_limits<int>::min(), 0)});
  }
  return memo;
}

const ClusterScheduler::BorrowedSlots& ClusterScheduler::released_borrowed_slots(
    const std::string& cohort) {
  BorrowedSlots& memo = released_borrowed_slots_[cohort];
  auto note = [&](int slot) {
    if (memo.slots.insert(slot).second) memo.order.push_back(slot);
  };
  auto add = [&](const RunningJob& r) {
    if (cohort_of_tenant(r.tenant) != cohort) return;
    for (size_t i = 0; i < r.replicas.size(); ++i)
      if (i < r.models.size() && memo.models.count(r.models[i])) note(r.replicas[i].first);
  };
  if (!memo.valid || memo.pass != pass_ || memo.removals != borrowed_removals_) {
    memo.valid = true;
    memo.pass = pass_;
    memo.removals = borrowed_removals_;
    ++memo.generation;
    memo.models.clear();
    memo.slots.clear();
    memo.order.clear();
    for (auto it = wake_released_.lower_bound({cohort, ""});
         it != wake_released_.end() && it->first.first == cohort; ++it)
      memo.models.insert(it->first.second);
    for (const auto& [key, slots] : borrowed_slots_)
      if (memo.models.count(key.second) && tenants_.cohort_of(key.first) == cohort)
        for (const auto& [slot, replicas] : slots) note(slot);
    memo.added_seen = borrowed_added_.size();
  }
  // Borrowers started since (in this pass).
  for (; memo.added_seen < borrowed_added_.size(); ++memo.added_seen)
    if (!memo.models.empty()) add(*borrowed_added_[memo.added_seen]);
  return memo;
}

const std::vector<WaitCapacity>& ClusterScheduler::free_classes(int group) {
  // The classes with a GPU (or part of one) free, on a node not held for a reservation or a
  // preemptor; each class's own capacity while they are few (a full cluster), else each
  // dimension at its most over them. The same for every tenant.
  constexpr size_t kMaxClasses = 16;
  if (free_classes_.size() != classes_.static_groups())
    free_classes_.assign(classes_.static_groups(), {});
  FreeClasses& cached = free_classes_[group];
  if (group_version_.size() <= static_cast<size_t>(group)) group_version_.resize(group + 1, 0);
  if (group_holds_version_.size() <= static_cast<size_t>(group))
    group_holds_version_.resize(group + 1, 0);
  if (cached.valid && cached.group_version == group_version_[group] &&
      cached.holds_version == group_holds_version_[group])
    return cached.caps;
  std::vector<WaitCapacity>& before = free_classes_before_;  // (scratch: no allocation)
  before.swap(cached.caps);
  cached.caps.clear();
  auto usable = [&](int class_id) {  // a node of the class is neither reserved nor held
    auto blocked = class_blocked_.find(class_id);
    return blocked == class_blocked_.end() ||
           static_cast<size_t>(blocked->second) < classes_.get(class_id).members.size();
  };
  std::vector<int>& found = free_classes_found_;
  found.clear();
  for (const auto& [neg_free, id] : classes_.group_by_free_gpus(group)) {
    if (neg_free == 0) break;
    if (usable(id)) found.push_back(id);
  }
  for (const auto& [neg_milli, id] : classes_.group_by_free_milli(group)) {
    if (neg_milli == 0) break;
    if (classes_.summary(id).free_gpus == 0 && usable(id)) found.push_back(id);
  }
  cached.most = WaitCapacity{};
  for (size_t i = 0; i < found.size(); ++i) {
    const ClassSummary& c = classes_.summary(found[i]);
    WaitCapacity cap;
    cap.whole_gpus = c.free_gpus;
    cap.max_free_milli = c.max_free_milli;
    cap.cpu_milli = c.cpu_free_milli;
    cap.memory_mib = c.memory_free_mib;
    if (found.size() <= kMaxClasses) cached.caps.push_back(cap);
    if (i == 0)
      cached.most = cap;
    else
      take_most(cached.most, cap);
  }
  if (found.size() > kMaxClasses) cached.caps.push_back(cached.most);
  if (!cached.valid || cached.caps != before) cached.revision = ++free_classes_revision_;
  cached.valid = true;
  cached.group_version = group_version_[group];
  cached.holds_version = group_holds_version_[group];
  return cached.caps;
}

void ClusterScheduler::start_released_pass() {
  // What a pool released is the same all pass (found once per tenant and group).
  const size_t groups = classes_.static_groups();
  if (released_pass_ != pass_ || released_.size() != tenant_names_.size() * groups) {
    released_.assign(tenant_names_.size() * groups, kUnknown);
    released_groups_.assign(tenant_names_.size(), {});
    released_pass_ = pass_;
  }
}

int64_t ClusterScheduler::pool_released(int tenant, int group) {
  start_released_pass();
  int64_t& released = released_[static_cast<size_t>(tenant) * classes_.static_groups() + group];
  if (released == kUnknown) {
    const std::string& model = classes_.group_example(group).gpu_model;
    const std::string& cohort = cohort_of_tenant(tenant);
    auto it = wake_released_.find({cohort.empty() ? "/" + tenant_names_[tenant] : cohort, model});
    released = it == wake_released_.end() ? kNone : it->second;
  }
  return released;
}

const std::vector<int>& ClusterScheduler::released_groups(int tenant) {
  start_released_pass();
  auto& [known, groups] = released_groups_[tenant];
  if (!known) {
    for (int g = 0; g < static_cast<int>(classes_.static_groups()); ++g)
      if (pool_released(tenant, g) != kNone) groups.push_back(g);
    known = true;
  }
  return groups;
}

std::optional<std::pair<int64_t, int64_t>> ClusterScheduler::quota_grown(int tenant, int group) {
  const int64_t released = pool_released(tenant, group);
  if (released == kNone) return {};
  const int64_t quota = quota_headroom(tenant, group);
  if (quota == 0 || quota >= WaitCapacity::kAny) return {};  // none, or no limit to hold jobs
  // Since the last pass it grew by at most what its pool released: jobs asking no more than
  // what it allowed then were not held back by it (free capacity woke them, as far as the quota
  // allowed when it was freed).
  return std::pair{quota, std::max<int64_t>(0, quota - released)};
}

namespace {

// Whether `a` admits every job `b` admits (so queries need not ask `b`).
bool admits_all_of(const WaitCapacity& a, const WaitCapacity& b) {
  return a.whole_gpus >= b.whole_gpus && a.max_free_milli >= b.max_free_milli &&
         a.cpu_milli >= b.cpu_milli && a.memory_mib >= b.memory_mib &&
         a.quota_milli >= b.quota_milli && a.runtime_limit >= b.runtime_limit &&
         a.min_priority <= b.min_priority &&
         (a.spot_excluded_priority == std::numeric_limits<int>::min() ||
          a.spot_excluded_priority == b.spot_excluded_priority) &&
         (a.quota_blocked_above < 0 ||
          (b.quota_blocked_above >= 0 && a.quota_blocked_above <= b.quota_blocked_above)) &&
         // Queries apply quota to the two kinds differently (see next_woken): never across.
         a.by_preempting == b.by_preempting;
}

}  // namespace

void ClusterScheduler::drop_dominated(std::vector<std::pair<int, WaitCapacity>>& caps) {
  // Each query asks every capacity: one that admits less than another of its group is dropped
  // (of equal ones, the first is kept). Quadratic: long lists (many sources) are kept whole.
  constexpr size_t kMaxPruned = 256;
  if (caps.size() < 2 || caps.size() > kMaxPruned) return;
  std::vector<char> dropped(caps.size(), 0);
  for (size_t i = 0; i < caps.size(); ++i) {
    if (dropped[i]) continue;
    for (size_t j = 0; j < caps.size(); ++j)
      if (j != i && !dropped[j] && caps[j].first == caps[i].first &&
          admits_all_of(caps[i].second, caps[j].second) &&
          (j > i || !admits_all_of(caps[j].second, caps[i].second)))
        dropped[j] = 1;
  }
  size_t kept = 0;
  for (size_t i = 0; i < caps.size(); ++i)
    if (!dropped[i]) caps[kept++] = caps[i];
  caps.resize(kept);
}

namespace {

// ClusterScheduler::WakeCapKey.
using CapKey =
    std::tuple<int, int32_t, int32_t, int64_t, int64_t, int64_t, int64_t, int, int, int64_t, bool>;

CapKey cap_key(int group, const WaitCapacity& w) {
  return {group,
          w.whole_gpus,
          w.max_free_milli,
          w.cpu_milli,
          w.memory_mib,
          w.quota_milli,
          w.runtime_limit,
          w.min_priority,
          w.spot_excluded_priority,
          w.quota_blocked_above,
          w.by_preempting};
}

std::pair<int, WaitCapacity> cap_of(const CapKey& k) {
  WaitCapacity w;
  int group = std::get<0>(k);
  std::tie(std::ignore, w.whole_gpus, w.max_free_milli, w.cpu_milli, w.memory_mib, w.quota_milli,
           w.runtime_limit, w.min_priority, w.spot_excluded_priority, w.quota_blocked_above,
           w.by_preempting) = k;
  return {group, w};
}

// The key with the sizes left out (GPUs, GPU milli, CPUs, memory): capacities merged.
CapKey envelope_key(CapKey k) {
  std::get<1>(k) = std::get<2>(k) = 0;
  std::get<3>(k) = std::get<4>(k) = 0;
  return k;
}

// The sizes of a key, in the order of ClusterScheduler::Envelope::sizes.
std::array<int64_t, 4> sizes(const CapKey& k) {
  return {std::get<1>(k), std::get<2>(k), std::get<3>(k), std::get<4>(k)};
}

}  // namespace

void ClusterScheduler::merge_sizes(std::vector<std::pair<int, WaitCapacity>>& caps) {
  std::map<CapKey, size_t> merged;  // -> index into caps
  size_t kept = 0;
  for (size_t i = 0; i < caps.size(); ++i) {
    const auto& [group, cap] = caps[i];
    auto [it, fresh] = merged.try_emplace(envelope_key(cap_key(group, cap)), kept);
    if (fresh) {
      caps[kept++] = caps[i];
      continue;
    }
    take_most(caps[it->second].second, cap);
  }
  caps.resize(kept);
}

void ClusterScheduler::start_wake_sources() {
  ++shared_changes_;
  shared_caps_.clear();
  source_caps_.clear();
  sources_.clear();
  sources_order_.clear();
  for (int slot : wake_slots_)
    if (sources_.insert_or_assign(slot, true).second) sources_order_.push_back(slot);
  for (const auto& [priority, seq] : wake_victims_) {
    auto v = by_priority_.find({priority, seq});
    if (v == by_priority_.end()) continue;
    for (const auto& [slot, rp] : v->second->replicas)
      if (sources_.try_emplace(slot, false).second) sources_order_.push_back(slot);
  }
  all_sources_dirty_ = true;
  sources_started_ = true;
}

void ClusterScheduler::refresh_wake_sources() {
  std::vector<std::pair<int, WaitCapacity>> caps;
  std::vector<WakeCapKey> keys;
  auto refresh = [&](int slot, bool free_too) {
    caps.clear();
    preemption_caps(slot, free_too, caps);
    keys.clear();
    for (const auto& [group, cap] : caps) keys.push_back(cap_key(group, cap));
    auto& mine = source_caps_[slot];
    if (keys == mine) return;  // (the shared capacities stand)
    ++shared_changes_;
    for (const auto& k : mine) {
      auto it = shared_caps_.find(envelope_key(k));
      if (it == shared_caps_.end()) continue;
      auto values = sizes(k);
      for (size_t d = 0; d < values.size(); ++d)
        if (auto c = it->second.sizes[d].find(values[d]);
            c != it->second.sizes[d].end() && --c->second == 0)
          it->second.sizes[d].erase(c);
      if (it->second.sizes[0].empty()) shared_caps_.erase(it);
    }
    mine = keys;
    for (const WakeCapKey& k : mine) {
      Envelope& envelope = shared_caps_[envelope_key(k)];
      auto values = sizes(k);
      for (size_t d = 0; d < values.size(); ++d) ++envelope.sizes[d][values[d]];
    }
  };
  if (all_sources_dirty_) {
    for (const auto& [slot, free_too] : sources_) refresh(slot, free_too);
    all_sources_dirty_ = false;
  } else {
    for (int slot : dirty_sources_)
      if (auto it = sources_.find(slot); it != sources_.end()) refresh(slot, it->second);
  }
  dirty_sources_.clear();
}

const ClusterScheduler::ReclaimEnvelope& ClusterScheduler::reclaim_envelope(int tenant) {
  ReclaimEnvelope& envelope = reclaim_envelopes_[tenant];
  if (!envelope.valid || envelope.pass != pass_) {  // (its vectors keep their room)
    envelope.valid = true;
    envelope.pass = pass_;
    ++envelope.revision;
    envelope.released_generation = std::numeric_limits<uint64_t>::max();  // nodes to be found
    envelope.released_seen = envelope.sources_seen = 0;
    envelope.changes_seen = 0;
    envelope.changes_epoch = 0;
    envelope.slots.clear();
    envelope.merged.clear();
    envelope.holders.clear();
  }
  auto version = [&](int slot) {
    return slot < static_cast<int>(slot_version_.size()) ? slot_version_[slot] : 0;
  };
  bool changed = false, merge_again = false;
  // Per merged key and size, how many of the nodes merged offer its most: a node that changed
  // takes its old levels out and puts its new ones in; only when a size loses every node that
  // offered its most is everything merged again.
  auto& merged = envelope.merged;
  auto& holders = envelope.holders;
  auto locate = [&](const std::pair<int, int>& key) {
    return std::find_if(merged.begin(), merged.end(),
                        [&](const auto& m) { return !(m.first < key); });
  };
  auto merge = [&](int slot) {
    const SlotReclaim& found = reclaim_levels(tenant, slot);
    for (const ReclaimLevel& here : found.levels) {
      const std::pair<int, int> key{found.group, here.priority};
      auto it = locate(key);
      const auto at = it - merged.begin();
      if (it == merged.end() || it->first != key) {
        merged.insert(it, {key, here.sizes});
        holders.insert(holders.begin() + at, {1, 1, 1, 1});
        changed = true;
        continue;
      }
      std::array<int64_t, 4> most = sizes_of(it->second);
      const std::array<int64_t, 4> mine = sizes_of(here.sizes);
      for (size_t d = 0; d < most.size(); ++d) {
        if (mine[d] > most[d]) {
          most[d] = mine[d];
          holders[at][d] = 1;
          changed = true;
        } else if (mine[d] == most[d]) {
          ++holders[at][d];
        }
      }
      set_sizes(it->second, most);
    }
  };
  auto unmerge = [&](int group, const std::vector<ReclaimLevel>& levels) {
    for (const ReclaimLevel& here : levels) {
      const std::pair<int, int> key{group, here.priority};
      auto it = locate(key);
      if (it == merged.end() || it->first != key) {
        merge_again = true;  // (cannot be: it was merged)
        continue;
      }
      const std::array<int64_t, 4> most = sizes_of(it->second), mine = sizes_of(here.sizes);
      for (size_t d = 0; d < most.size(); ++d)
        if (mine[d] > most[d] || (mine[d] == most[d] && --holders[it - merged.begin()][d] <= 0))
          merge_again = true;
    }
  };
  auto& slots = envelope.slots;  // sorted by slot but while nodes are added (below)
  auto find = [&](int slot) {
    auto it = std::lower_bound(slots.begin(), slots.end(), slot,
                               [](const auto& s, int x) { return s.first < x; });
    return it != slots.end() && it->first == slot ? &*it : nullptr;
  };
  size_t sorted = 0;  // slots before the nodes added in this call
  auto add = [&](int slot) {
    auto end = slots.begin() + static_cast<std::ptrdiff_t>(sorted);
    auto it = std::lower_bound(slots.begin(), end, slot,
                               [](const auto& s, int x) { return s.first < x; });
    if (it != end && it->first == slot) return;
    // (A node both where the cohort borrows and a source comes twice: merged once.)
    if (std::any_of(end, slots.end(), [&](const auto& s) { return s.first == slot; })) return;
    slots.push_back({slot, version(slot)});
    if (!merge_again) merge(slot);
  };
  // The nodes where its cohort borrows a released model, and the nodes that changed (the
  // wake-ups' sources): those added since, or all of them again when some may have gone.
  const BorrowedSlots& released = released_borrowed_slots(cohort_of_tenant(tenant));
  if (envelope.released_generation != released.generation) {
    merge_again |= std::erase_if(slots, [&](const auto& s) {
                     return !released.slots.count(s.first) && !sources_.count(s.first);
                   }) > 0;
    envelope.released_generation = released.generation;
    envelope.released_seen = 0;
    envelope.sources_seen = 0;
  }
  // The nodes that changed since they were merged: those logged, or every one once the log was
  // cleared. Each takes its old levels out and its new ones in (unmerge, merge); a size whose
  // most no node offers any longer has all nodes merged again.
  auto check = [&](int slot, uint64_t& counted) {
    if (counted == version(slot)) return;
    const uint64_t merged_at = counted;
    counted = version(slot);
    if (merge_again) return;
    // What it offered when merged is its memo still (only this merge asks for its levels).
    if (slot_reclaim_.size() <= static_cast<size_t>(tenant)) {
      merge_again = true;
      return;
    }
    const auto& memos = slot_reclaim_[tenant];
    if (static_cast<size_t>(slot) >= memos.size() || !memos[slot].valid ||
        memos[slot].version != merged_at) {
      merge_again = true;
      return;
    }
    unmerge(memos[slot].group, memos[slot].levels);  // (before merge asks for the new ones)
    if (!merge_again) merge(slot);
  };
  if (envelope.changes_epoch != changed_slots_epoch_) {
    for (auto& [slot, counted] : slots) check(slot, counted);
    envelope.changes_epoch = changed_slots_epoch_;
    envelope.changes_seen = changed_slots_.size();
  }
  for (; envelope.changes_seen < changed_slots_.size(); ++envelope.changes_seen)
    if (auto* it = find(changed_slots_[envelope.changes_seen])) check(it->first, it->second);
  sorted = slots.size();
  for (; envelope.released_seen < released.order.size(); ++envelope.released_seen)
    add(released.order[envelope.released_seen]);
  for (; envelope.sources_seen < sources_order_.size(); ++envelope.sources_seen)
    add(sources_order_[envelope.sources_seen]);
  if (slots.size() > sorted) {
    std::sort(slots.begin(), slots.end());
    auto end = std::unique(slots.begin(), slots.end(),
                           [](const auto& a, const auto& b) { return a.first == b.first; });
    merge_again |= end != slots.end();  // (cannot be: one merged twice would count twice)
    slots.erase(end, slots.end());
  }
  if (merge_again) {
    std::swap(envelope.merged, envelope.before);
    envelope.merged.clear();
    holders.clear();
    for (const auto& [slot, counted] : slots) merge(slot);
    changed = envelope.merged != envelope.before;
  }
  if (changed) ++envelope.revision;
  return envelope;
}

const ClusterScheduler::OwnCaps& ClusterScheduler::own_caps(int tenant) {
  // What they are made of, found first (each part is kept while its nodes are unchanged).
  auto& inputs = own_caps_scratch_.inputs;
  inputs.assign(1, static_cast<int64_t>(pass_));
  // Where its quota grew: (group, quota now, allowed before), in groups with GPUs free.
  auto& grown = own_caps_scratch_.grown;
  grown.clear();
  if (wake_quota_.count(tenant))
    for (int g : released_groups(tenant))
      if (classes_.group_members(g) > 0)
        if (auto quota = quota_grown(tenant, g); quota && !free_classes(g).empty()) {
          grown.emplace_back(g, quota->first, quota->second);
          inputs.insert(inputs.end(), {g, quota->first, quota->second,
                                       static_cast<int64_t>(free_classes_[g].revision)});
        }
  const std::string& name = tenant_names_[tenant];
  const std::string& cohort = cohort_of_tenant(tenant);
  // Per GPU model of the reclaim envelope: the quota the tenant is allowed, and its nominal.
  auto& quota = own_caps_scratch_.quota;
  quota.clear();
  const ReclaimEnvelope* envelope = nullptr;
  if (!cohort.empty()) {
    envelope = &reclaim_envelope(tenant);
    inputs.push_back(static_cast<int64_t>(envelope->revision));
    for (const auto& [key, sizes] : envelope->merged)
      if (const std::string& m = classes_.group_example(key.first).gpu_model;
          quota.empty() || *std::get<0>(quota.back()) != m) {
        quota.emplace_back(&m, quota_headroom(tenant, m), tenants_.nominal_headroom(name, m));
        inputs.insert(inputs.end(), {std::get<1>(quota.back()), std::get<2>(quota.back())});
      }
  }
  OwnCaps& cached = own_caps_[tenant];
  if (cached.valid && cached.inputs == inputs) return cached;
  cached.valid = true;
  cached.inputs = inputs;  // (copied into its room: the scratch keeps its own)
  auto& caps = cached.caps;
  caps.clear();
  // Where its quota grew: what is free (free_classes) in each group, its sizes merged (as
  // merge_sizes would), for the jobs the quota's growth may let start.
  for (const auto& [g, quota, allowed_before] : grown) {
    WaitCapacity cap = free_classes_[g].most;
    cap.quota_milli = quota;
    cap.quota_blocked_above = allowed_before;
    caps.push_back({g, cap});
  }
  if (envelope) {
    // Reclaiming, on the nodes that changed; and where its cohort's use of a GPU model fell (it
    // may now be within its nominal quota, or reclaiming may need to free less), on every node
    // where its cohort borrows that model.
    size_t model = 0;
    int64_t allowed = 0, nominal = 0;
    for (const auto& [key, sizes] : envelope->merged) {
      const auto& [group, priority] = key;
      while (*std::get<0>(quota[model]) != classes_.group_example(group).gpu_model) ++model;
      std::tie(std::ignore, allowed, nominal) = quota[model];
      // Only jobs the quota holds back now, within the tenant's nominal quota (what it lent).
      if (nominal <= allowed) continue;
      WaitCapacity cap = sizes;
      cap.min_priority = priority - 1;
      cap.quota_milli = nominal;
      cap.quota_blocked_above = allowed;
      cap.by_preempting = true;
      caps.push_back({group, cap});
    }
  }
  merge_sizes(caps);
  drop_dominated(caps);
  return cached;
}

ClusterScheduler::ReclaimRoom ClusterScheduler::reclaim_room(int tenant, const std::string& model) {
  const std::string& cohort = cohort_of_tenant(tenant);
  if (cohort.empty()) return {};
  return {tenants_.cohort_room(tenant_names_[tenant], model), &reclaimable(cohort, model)};
}

void ClusterScheduler::reclaim_bands(const ModelQuota& quota, const ReclaimRoom& room,
                                     const WaitCapacity& free, std::vector<WaitCapacity>& out) {
  if (!room.reclaimable) return;  // no cohort
  // A lender reclaims from borrowers that do not outrank it, as much as the cohort uses above
  // its nominal quota once the job is counted: a job asking m needs m - room freed.
  for (const auto& [priority, freeable] : *room.reclaimable) {
    WaitCapacity cap = free;
    cap.quota_blocked_above = quota.allowed;
    cap.quota_milli = std::min(quota.reach, room.room + freeable);
    cap.min_priority = std::max(free.min_priority, priority - 1);
    if (cap.quota_milli > quota.allowed) out.push_back(cap);
  }
}

const std::vector<std::pair<int, int64_t>>& ClusterScheduler::reclaimable(
    const std::string& cohort, const std::string& model) {
  auto [it, fresh] = reclaimable_.try_emplace({cohort, model});
  auto& [version, levels] = it->second;
  // (The borrowers are the same all pass: cohort_borrowers.)
  const auto inputs = std::make_tuple(pass_, tenants_.cohort_changes(cohort), victims_chosen_);
  if (!fresh && version == inputs) return levels;
  version = inputs;
  levels.clear();
  // Borrowers whose tenant still borrows the model (may_reclaim), not already preempted; asked
  // once per tenant.
  boost::container::small_vector<std::pair<const std::string*, bool>, 4> borrowing;
  auto still_borrows = [&](const std::string& tenant) {
    for (const auto& [name, yes] : borrowing)
      if (*name == tenant) return yes;
    return borrowing.emplace_back(&tenant, tenants_.borrowing(tenant, model)).second;
  };
  int64_t freeable = 0;
  const auto& borrowers = cohort_borrowers(cohort, model);
  for (size_t i = 0; i < borrowers.size(); ++i) {
    const RunningJob& r = *borrowers[i];
    if (!r.preempting && still_borrows(r.req.tenant)) freeable += job_gpu_milli(r.req);
    if (i + 1 < borrowers.size() && borrowers[i + 1]->req.priority == r.req.priority) continue;
    if (freeable > 0) levels.push_back({r.req.priority, freeable});
  }
  return levels;
}

const std::vector<std::vector<WaitCapacity>>& ClusterScheduler::wake_caps(int tenant, TimeMs now) {
  last_now_ = now;
  if (!sources_started_) start_wake_sources();
  refresh_wake_sources();
  // Shared by every tenant (their quota is applied per query): what the wake-ups' nodes offer.
  if (shared_version_ != shared_changes_ || !shared_valid_) {
    shared_list_.clear();
    // Capacities that differ only in size, as one with the most of each (merge_sizes).
    for (const auto& [k, envelope] : shared_caps_) {
      WaitCapacity& cap = shared_list_.emplace_back(cap_of(k)).second;
      cap.whole_gpus = static_cast<int32_t>(envelope.sizes[0].rbegin()->first);
      cap.max_free_milli = static_cast<int32_t>(envelope.sizes[1].rbegin()->first);
      cap.cpu_milli = envelope.sizes[2].rbegin()->first;
      cap.memory_mib = envelope.sizes[3].rbegin()->first;
    }
    drop_dominated(shared_list_);  // (their quota is every tenant's own: kAny here)
    shared_version_ = shared_changes_;
    shared_valid_ = true;
  }
  // The tenant's own: its quota grew, or it may reclaim what its cohort lent.
  WakeCaps& cached = wake_caps_[tenant];
  if (cached.valid && cached.version == wake_version_ && cached.changes == tenants_.changes())
    return cached.by_group;
  const auto& caps = own_caps(tenant).caps;

  // With the shared ones, the tenant's quota applied to every job, by static group (the quota of
  // a group's GPU model asked once). Within its nominal quota a job may preempt even where its
  // cohort lent that quota out (choose_victims), so where a capacity is offered by preempting,
  // the nominal headroom counts too. (Where it is free, a job the quota holds back there can
  // only reclaim, which the capacities of the nodes where its cohort borrows decide.) A job the
  // quota holds back is so not woken by capacity alone: own_caps wakes it when the quota grows.
  // (Made in a spare list: when they come out as they were, the queries built from them stand.)
  auto& by_group = spare_by_group_;
  by_group.resize(classes_.static_groups());
  for (auto& caps_of_group : by_group) caps_of_group.clear();  // (keeping their room)
  // Per group: its model's quota and, once a band is asked for, what reclaiming reads (each
  // asked once per model).
  auto& quota = group_quota_scratch_;
  quota.assign(by_group.size(), {ModelQuota{}, -1});
  auto& rooms = reclaim_room_scratch_;
  rooms.clear();
  for (const auto& [group, shared] : shared_list_) {
    if (group >= static_cast<int>(by_group.size())) continue;
    auto& [q, room] = quota[group];
    const std::string& model = classes_.group_example(group).gpu_model;
    if (q.allowed < 0) q = {quota_headroom(tenant, group), quota_reach(tenant, model)};
    WaitCapacity cap = shared;
    cap.quota_milli = shared.by_preempting ? q.reach : q.allowed;
    by_group[group].push_back(cap);
    // Free capacity also lets a job start that its quota holds back only because its cohort
    // borrows the quota: deciding it reclaims that quota (choose_reclaim_victims).
    if (shared.by_preempting || q.reach <= q.allowed) continue;
    if (room < 0) {
      auto known = std::find_if(rooms.begin(), rooms.end(),
                                [&](const auto& r) { return *r.first == model; });
      room = static_cast<int>(known - rooms.begin());
      if (known == rooms.end()) rooms.emplace_back(&model, reclaim_room(tenant, model));
    }
    reclaim_bands(q, rooms[room].second, cap, by_group[group]);
  }
  for (const auto& [group, cap] : caps)
    if (group < static_cast<int>(by_group.size())) by_group[group].push_back(cap);
  if (!cached.valid || by_group != cached.by_group) {
    std::swap(by_group, cached.by_group);
    cached.groups.clear();
    for (int g = 0; g < static_cast<int>(cached.by_group.size()); ++g)
      if (!cached.by_group[g].empty()) cached.groups.push_back(g);
    cached.queries_valid = false;
  }
  cached.valid = true;
  cached.version = wake_version_;
  cached.changes = tenants_.changes();
  return cached.by_group;
}

ClusterScheduler::PendingJob* ClusterScheduler::next_woken(int tenant, const QueueKey* after,
                                                           TimeMs now, const QueueKey* listed,
                                                           Plan& plan) {
  const auto& by_group = wake_caps(tenant, now);
  // The query asks in queue order: a job its quota holds back is decided as it is met, without
  // trying to place it, and without a query for each (set_wait marks the rest of its class). The
  // listed job, or one after it, ends the query (the listed one is decided first, by decide():
  // it may change how the others are).
  auto accept = [&](void* owner) {
    PendingJob& job = *static_cast<PendingJob*>(owner);
    if (job.decided_pass == pass_ || waits_now(job, now)) return false;
    if (listed && !(job.key() < *listed)) return true;
    if (int class_id = quota_wait_class(job); class_id >= 0) {
      ++stats_.woken;
      wait_for_quota(job, class_id, now, plan);
      return false;
    }
    return true;
  };
  // The queries: per partition of the tenant, the capacities of the static groups it fits
  // that may admit one of its jobs.
  WakeCaps& cached = wake_caps_[tenant];
  if (!cached.queries_valid || cached.queries_additions != waiting_.additions()) {
    std::vector<WaitIndex::PartitionQuery>& queries = cached.queries;
    size_t used = 0;
    for (const auto& [signature, partition] : waiting_.partitions_of(tenant)) {
      const std::string& fits = signature_bits_[signature];
      if (used == queries.size()) queries.emplace_back();
      WaitIndex::PartitionQuery& q = queries[used];
      q.partition = partition;
      q.caps.clear();
      q.known.reset();
      q.admitted.reset();
      for (int g : cached.groups)
        if (static_cast<size_t>(g) < fits.size() && fits[g] == '1')
          for (const WaitCapacity& cap : by_group[g])
            if (waiting_.may_admit(partition, cap)) q.caps.push_back(&cap);
      if (!q.caps.empty()) ++used;
    }
    cached.used = used;
    cached.resume.reset();
    cached.queries_valid = true;
    cached.queries_additions = waiting_.additions();
  }
  const std::vector<WaitIndex::PartitionQuery>& queries = cached.queries;
  const size_t used = cached.used;
  if (used == 0) return nullptr;
  return static_cast<PendingJob*>(
      waiting_.first_admitted(std::span<const WaitIndex::PartitionQuery>(queries.data(), used),
                              after, accept, &cached.resume));
}

void ClusterScheduler::decide_woken(TimeMs now, Plan& plan, bool full,
                                    std::vector<PendingJob*> reconsider) {
  // Jobs decided whatever freed: new ones, and (after a release) the reservation's holder or,
  // without one, each tenant's first job (the first that waits for resources reserves).
  std::map<int, std::vector<PendingJob*>> by_tenant;
  for (auto& [seq, job] : undecided_) by_tenant[job->tenant].push_back(job);
  if (full && settings_.backfill && !reservation_ && ends_count_ > 0) {
    // Without a reservation, the first job that waits for resources makes one: the tenants'
    // first jobs are decided again (once while they stay the first).
    std::vector<PendingJob*> heads;
    for (int tenant = 0; tenant < static_cast<int>(tenant_names_.size()); ++tenant) {
      PendingJob* first = nullptr;
      QueueKey first_key;
      for (const auto& [signature, partition] : waiting_.partitions_of(tenant)) {
        QueueKey key;
        void* found = waiting_.first_after(partition, nullptr, &key);
        if (found && (!first || key < first_key))
          first = static_cast<PendingJob*>(found), first_key = key;
      }
      if (first) heads.push_back(first);
    }
    std::vector<uint64_t> seqs;
    for (const PendingJob* head : heads) seqs.push_back(head->seq);
    // Again when what no reservation could count on was freed (a job without a declared end
    // ended, a node changed): a head that could never start may get a reservation now.
    if (seqs != heads_tried_ || heads_unending_freed_ != unending_freed_)
      reconsider.insert(reconsider.end(), heads.begin(), heads.end());
    heads_tried_ = std::move(seqs);
    heads_unending_freed_ = unending_freed_;
  }
  for (PendingJob* job : reconsider) by_tenant[job->tenant].push_back(job);
  // Kept by sequence number: a job placed in this pass is gone.
  std::map<int, std::vector<uint64_t>> listed;  // tenant -> jobs, in queue order
  for (auto& [tenant, jobs] : by_tenant) {
    std::sort(jobs.begin(), jobs.end(),
              [](const PendingJob* a, const PendingJob* b) { return a->key() < b->key(); });
    jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
    for (const PendingJob* job : jobs) listed[tenant].push_back(job->seq);
  }
  // Nothing to wake when every waiting job is new (an idle cluster's submissions).
  // (Or a preemptor may start in this pass and give back nodes held for it: wake_in_pass.)
  bool wakes = settings_.wake_ups && waiting_.size() > undecided_.size() &&
               (!wake_slots_.empty() || !wake_quota_.empty() || !wake_victims_.empty() ||
                !nominated_slots_.empty());
  struct Cursor {
    size_t listed = 0;     // next in `listed`
    bool started = false;  // `key` holds the last decided job's key
    int priority = 0;
    int64_t rank = 0;
    int64_t created_at = 0;
    std::string job_id;
    uint64_t id_high = 0, id_low = 0;
    QueueKey key() const { return {priority, rank, created_at, &job_id, id_high, id_low}; }
  };
  std::map<int, Cursor> cursors;
  using Entry = std::tuple<double, std::string, int>;  // share, tenant name, tenant
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> tenants;
  for (int tenant = 0; tenant < static_cast<int>(tenant_names_.size()); ++tenant)
    if (listed.count(tenant) || (wakes && !waiting_.partitions_of(tenant).empty()))
      tenants.push({tenants_.dominant_share(tenant_names_[tenant]), tenant_names_[tenant], tenant});
  while (!tenants.empty()) {
    auto [share, name, tenant] = tenants.top();
    tenants.pop();
    Cursor& cursor = cursors[tenant];
    // The tenant's next job: the first listed one not decided yet, or the first woken one
    // after the last decided, whichever comes first in queue order.
    PendingJob* next = nullptr;
    if (auto it = listed.find(tenant); it != listed.end()) {
      const auto& jobs = it->second;
      for (; cursor.listed < jobs.size(); ++cursor.listed) {
        auto job = pending_by_seq_.find(jobs[cursor.listed]);
        if (job != pending_by_seq_.end() && job->second->decided_pass != pass_) {
          next = job->second;
          break;
        }
      }
    }
    if (wakes) {
      QueueKey after = cursor.key();
      PendingJob* woken;
      {
        StatTimer timer(stats_.wake_ns);
        ++stats_.wake_queries;
        QueueKey listed;
        if (next) listed = next->key();
        woken = next_woken(tenant, cursor.started ? &after : nullptr, now, next ? &listed : nullptr,
                           plan);
      }
      if (woken && (!next || woken->key() < next->key())) next = woken, ++stats_.woken;
    }
    if (!next) continue;
    QueueKey key = next->key();
    if (!cursor.started || cursor.key() < key) {
      cursor.started = true;
      cursor.priority = key.priority;
      cursor.rank = key.rank;
      cursor.created_at = key.created_at;
      cursor.job_id = *key.job_id;
      cursor.id_high = key.id_high;
      cursor.id_low = key.id_low;
    }
    decide(*next, now, plan, full);  // `next` is gone if it was placed
    tenants.push({tenants_.dominant_share(name), name, tenant});
  }
}

}  // namespace gpucloud::sched
