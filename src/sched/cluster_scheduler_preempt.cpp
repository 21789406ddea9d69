// Preemption: the smallest set of running jobs (whole gangs) whose end lets a job start, and
// reclaiming quota a tenant lent within its cohort.
#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <limits>
#include <map>

#include "sched/cluster_scheduler.h"
#include "sched/fit.h"

namespace gpucloud::sched {
namespace {

bool fits(const JobRequest& req, const NodeState& node) {
  return cpu_memory_fit(req, node) && gpus_fit(req, node);
}

int64_t gpu_milli_of(const JobRequest& r) {
  return int64_t{r.replicas} * (r.gpu_milli > 0 ? r.gpu_milli : int64_t{r.gpus} * 1000);
}

// Cheapest victims first: borrowers, then lower priority, then smaller, then the most recently
// started.
bool cheaper_victim(const JobRequest& a_req, bool a_borrowed, TimeMs a_start,
                    const JobRequest& b_req, bool b_borrowed, TimeMs b_start) {
  if (a_borrowed != b_borrowed) return a_borrowed;
  if (a_req.priority != b_req.priority) return a_req.priority < b_req.priority;
  int64_t ga = gpu_milli_of(a_req), gb = gpu_milli_of(b_req);
  if (ga != gb) return ga < gb;
  if (a_start != b_start) return a_start > b_start;
  return a_req.job_id < b_req.job_id;
}

// The least GPU milli victims must hold on the node for the request to fit there: a share needs
// the shortfall on its best GPU; whole GPUs need their holders gone, the least used GPUs first.
// `mask`: the node's GPU positions that match the request.
int64_t least_victim_milli(const JobRequest& req, const NodeState& node, uint64_t mask) {
  if (req.gpus == 0) return 0;
  boost::container::small_vector<int64_t, 16> used;
  for (size_t p = 0; p < node.gpus.size() && p < 64; ++p)
    if (mask >> p & 1) used.push_back(node.gpus[p].used_milli);
  if (req.gpu_milli > 0) {
    int64_t least = 1000;
    for (int64_t u : used)
      least = std::min(least, std::max<int64_t>(0, req.gpu_milli - (1000 - u)));
    return least;
  }
  std::sort(used.begin(), used.end());
  int64_t sum = 0;
  for (size_t i = 0; i < used.size() && i < static_cast<size_t>(req.gpus); ++i) sum += used[i];
  return sum;
}

// A job of (priority, spot) may preempt a victim of (victim_priority, victim_spot) for its rank
// alone: a lower priority, or a spot job of no higher priority when the job is not spot.
bool outranks_victim(int priority, bool spot, int victim_priority, bool victim_spot) {
  return victim_priority < priority || (victim_spot && !spot && victim_priority <= priority);
}
bool outranks_victim(int priority, bool spot, const JobRequest& victim) {
  return outranks_victim(priority, spot, victim.priority, victim.preemptible());
}

// The victim outranks a job of (priority, spot): a higher priority, or the same and not spot
// where the job is spot. A lender never reclaims from such a borrower.
bool outranked_by(int priority, bool spot, int victim_priority, bool victim_spot) {
  return victim_priority > priority || (victim_priority == priority && spot && !victim_spot);
}
bool outranked_by(int priority, bool spot, const JobRequest& victim) {
  return outranked_by(priority, spot, victim.priority, victim.preemptible());
}

// Whether a running job of (victim_priority, victim_spot) may be a victim for some job of the
// key's (priority, spot, cohort) (a superset of may_preempt): not one already chosen nor one
// placed in this pass; one it outranks; or, unless it outranks the key, a borrower of the
// key's cohort (`cohort_borrower()`; may_reclaim decides per node what it borrows).
template <typename CohortBorrower>
bool victim_for_key(int priority, bool spot, int victim_priority, bool victim_spot,
                    bool unavailable, CohortBorrower&& cohort_borrower) {
  if (unavailable) return false;
  if (outranks_victim(priority, spot, victim_priority, victim_spot)) return true;
  if (outranked_by(priority, spot, victim_priority, victim_spot)) return false;
  return cohort_borrower();
}

}  // namespace

bool ClusterScheduler::may_preempt(const PendingJob& job, const RunningJob& victim) const {
  // Neither one already chosen nor one placed in this very pass (do not churn). A job is never
  // pending and running at once, so the victim is never the job itself.
  if (victim.preempting || victim.placed_pass == pass_) return false;
  if (outranks_victim(job.req.priority, job.req.preemptible(), victim.req)) return true;
  return may_reclaim(job, victim);
}

bool ClusterScheduler::reclaims_only(const PendingJob& job, const RunningJob& victim) const {
  return !outranks_victim(job.req.priority, job.req.preemptible(), victim.req) &&
         may_reclaim(job, victim);
}

bool ClusterScheduler::held_against(const PendingJob& job, int slot) const {
  if (slot >= static_cast<int>(nominees_by_slot_.size())) return false;
  for (const auto& [priority, preemptor] : nominees_by_slot_[slot])
    if (priority >= job.req.priority && preemptor != job.req.job_id) return true;
  return false;
}

bool ClusterScheduler::may_reclaim(const PendingJob& job, const RunningJob& victim) const {
  // A lender reclaims quota it lent: only from borrowers of its own cohort, only as far as its
  // own nominal quota goes, and never from a job that outranks it (a higher priority, or the
  // same priority and not spot where the lender's job is spot): that job, requeued, would
  // preempt it back by priority, and the two would take turns forever.
  if (!victim.borrowed || victim.req.tenant == job.req.tenant || victim.models.empty())
    return false;
  if (outranked_by(job.req.priority, job.req.preemptible(), victim.req)) return false;
  const std::string& cohort = tenants_.cohort_of(job.req.tenant);
  if (cohort.empty() || cohort != tenants_.cohort_of(victim.req.tenant)) return false;
  int64_t milli = gpu_milli_of(job.req);
  const std::string& model = victim.models[0];
  return milli > 0 && tenants_.within_nominal(job.req.tenant, model, milli) &&
         tenants_.borrowing(victim.req.tenant, model);
}

std::optional<ClusterScheduler::VictimOption> ClusterScheduler::node_victims(
    const PendingJob& job, const JobRequest& request, int slot) const {
  const Node& n = nodes_[slot];
  if (fits(request, n.state)) return VictimOption{{}, 0, static_cast<int>(n.jobs.size()), slot};
  boost::container::small_vector<const RunningJob*, 16> eligible;
  for (const auto& [seq, r] : n.jobs)
    if (may_preempt(job, *r)) eligible.push_back(r);
  if (eligible.empty()) return std::nullopt;
  // What preempting all of them would free at most: too little, and the node is out.
  NodeFree freed(n, slot);
  for (const RunningJob* r : eligible) freed.release(*r);
  if (freed.cpu < request.cpu_milli || freed.memory < request.memory_mib) return std::nullopt;
  if (request.gpus > 0) {
    int64_t need = request.gpu_milli > 0 ? request.gpu_milli : 1000;
    int usable = 0;
    for (size_t i = 0; i < n.state.gpus.size(); ++i)
      if (1000 - freed.used[i] >= need && gpu_matches(request, n.state.gpus[i])) ++usable;
    if (usable < (request.gpu_milli > 0 ? 1 : request.gpus)) return std::nullopt;
  }
  std::sort(eligible.begin(), eligible.end(), [](const RunningJob* a, const RunningJob* b) {
    return cheaper_victim(a->req, a->borrowed, a->started_at, b->req, b->borrowed, b->started_at);
  });
  // Only what fits() reads (labels stay out: copying them would allocate).
  NodeState& scratch = scratch_;
  scratch.gpus = n.state.gpus;
  scratch.cpu_milli = n.state.cpu_milli;
  scratch.cpu_used_milli = n.state.cpu_used_milli;
  scratch.memory_mib = n.state.memory_mib;
  scratch.memory_used_mib = n.state.memory_used_mib;
  auto release = [&](const RunningJob* r, int sign) {
    for (const auto& [s, rp] : r->replicas)
      if (s == slot) apply_replica_use(scratch, r->req, rp, -sign);
  };
  boost::container::small_vector<const RunningJob*, 16> chosen;
  for (const RunningJob* r : eligible) {
    release(r, +1);
    chosen.push_back(r);
    if (fits(request, scratch)) break;
  }
  if (!fits(request, scratch)) return std::nullopt;
  // Drop victims that turn out not to be needed, the last added first.
  for (size_t i = chosen.size(); i-- > 0;) {
    release(chosen[i], -1);
    if (fits(request, scratch))
      chosen.erase(chosen.begin() + static_cast<long>(i));
    else
      release(chosen[i], +1);
  }
  VictimOption option{{}, 0, static_cast<int>(n.jobs.size()), slot};
  for (const RunningJob* r : chosen) {
    option.victims.push_back(r->req.job_id);
    option.victim_gpu_milli += gpu_milli_of(r->req);
  }
  return option;
}

ClusterScheduler::VictimMemos& ClusterScheduler::victim_memos(const PendingJob& job, int shape) {
  return victim_memo_[{shape, gpu_milli_of(job.req), job.req.priority, job.req.preemptible(),
                       job.req.tenant}];
}

const std::optional<ClusterScheduler::VictimOption>& ClusterScheduler::victims_on(
    const PendingJob& job, const JobRequest& request, VictimMemos& memos, int slot) {
  // slot_version_ covers every slot: a node is reindexed when it first appears. Kept across
  // passes while the node is as it was, unless a job placed there in the memo's pass (then not
  // a possible victim) may be one now, or the node runs a borrower (whether the job may
  // reclaim from it depends on quotas).
  auto [it, fresh] = memos.try_emplace(slot);
  VictimMemo& m = it->second;
  if (fresh) ++victim_memo_entries_;
  bool stale = fresh || m.node_version != slot_version_[slot] ||
               (m.quota_dependent && m.tenant_changes != tenants_.changes()) ||
               (m.pass != pass_ && static_cast<size_t>(slot) < slot_placed_pass_.size() &&
                slot_placed_pass_[slot] == m.pass);
  if (stale) {
    m.node_version = slot_version_[slot];
    m.tenant_changes = tenants_.changes();
    m.pass = pass_;
    m.quota_dependent = std::any_of(nodes_[slot].jobs.begin(), nodes_[slot].jobs.end(),
                                    [](const auto& kv) { return kv.second->borrowed; });
    m.option = node_victims(job, request, slot);
  }
  return m.option;
}

int ClusterScheduler::cohort_id(const std::string& cohort) {
  if (cohort.empty()) return -1;
  return cohort_ids_.try_emplace(cohort, static_cast<int>(cohort_ids_.size())).first->second;
}

void ClusterScheduler::add_victim_record(std::vector<NodeVictim>& list, const RunningJob& r,
                                         int slot) {
  const NodeState& n = nodes_[slot].state;
  NodeVictim& v = list.emplace_back();
  v.seq = r.seq;
  v.priority = r.req.priority;
  v.spot = r.req.preemptible();
  v.borrowed = r.borrowed;
  v.preempting = r.preempting;
  v.cohort = cohort_id_of_tenant(r.tenant);
  v.placed_pass = r.placed_pass;
  v.job_gpu_milli = gpu_milli_of(r.req);
  for (const auto& [s, rp] : r.replicas) {
    if (s != slot) continue;
    v.cpu_milli += rp.cpu_milli;
    v.memory_mib += rp.memory_mib;
    for (const auto& share : rp.gpus)
      for (size_t p = 0; p < n.gpus.size() && p < 256; ++p)
        if (n.gpus[p].index == share.index)
          v.gpus.push_back({static_cast<uint8_t>(p), static_cast<int32_t>(share.milli)});
  }
}

void ClusterScheduler::victims_changed(int slot, const RunningJob* started,
                                       const RunningJob* ended) {
  if (victims_version_.size() <= static_cast<size_t>(slot)) victims_version_.resize(slot + 1, 0);
  const uint64_t version = victims_version_[slot]++;
  if (static_cast<size_t>(slot) >= node_victims_.size()) return;
  NodeVictims& list = node_victims_[slot];
  if (!list.built || list.version != version || (!started && !ended)) return;
  // Up to date until now: the job's record goes in (it has the highest seq: last) or out.
  if (started) add_victim_record(list.jobs, *started, slot);
  if (ended) std::erase_if(list.jobs, [&](const NodeVictim& v) { return v.seq == ended->seq; });
  list.version = victims_version_[slot];
}

const std::vector<ClusterScheduler::NodeVictim>& ClusterScheduler::node_victim_list(int slot) {
  if (node_victims_.size() < nodes_.size()) node_victims_.resize(nodes_.size());
  if (victims_version_.size() < nodes_.size()) victims_version_.resize(nodes_.size(), 0);
  NodeVictims& built = node_victims_[slot];
  if (built.built && built.version == victims_version_[slot]) return built.jobs;
  built.built = true;
  built.version = victims_version_[slot];
  built.jobs.clear();
  for (const auto& [seq, r] : nodes_[slot].jobs) add_victim_record(built.jobs, *r, slot);
  return built.jobs;
}

bool ClusterScheduler::possible_victim(const VictimKey& key, int cohort,
                                       const NodeVictim& v) const {
  const auto& [priority, spot, cohort_name] = key;
  return victim_for_key(priority, spot, v.priority, v.spot, v.preempting || v.placed_pass == pass_,
                        [&] { return v.borrowed && cohort >= 0 && v.cohort == cohort; });
}

bool ClusterScheduler::possible_victim(const VictimKey& key, const RunningJob& r) const {
  const auto& [priority, spot, cohort] = key;
  return victim_for_key(
      priority, spot, r.req.priority, r.req.preemptible(), r.preempting || r.placed_pass == pass_,
      [&] { return r.borrowed && !cohort.empty() && tenants_.cohort_of(r.req.tenant) == cohort; });
}

bool ClusterScheduler::bound_candidate(const VictimKey& key, VictimCandidates& c, int slot) {
  const std::vector<NodeVictim>& victims = node_victim_list(slot);
  if (std::none_of(victims.begin(), victims.end(),
                   [&](const NodeVictim& v) { return possible_victim(key, c.cohort, v); }))
    return false;
  const NodeState& n = nodes_[slot].state;
  int64_t cpu = n.cpu_milli - n.cpu_used_milli, memory = n.memory_mib - n.memory_used_mib;
  int64_t least_victim = std::numeric_limits<int64_t>::max();
  size_t offset = c.gpu_offset[slot];
  int32_t single_free = 0;
  int64_t single_whole = kNoVictim;
  // Per possible victim holding GPUs: the most one GPU would have free were it alone gone, and
  // its GPU milli (for the single steps of shares).
  boost::container::small_vector<std::pair<int32_t, int64_t>, 32> alone_sizes;
  for (size_t p = 0; p < n.gpus.size(); ++p) {
    c.gpu_free[offset + p] = static_cast<int32_t>(n.gpus[p].free_milli());
    single_free = std::max(single_free, c.gpu_free[offset + p]);
  }
  for (const NodeVictim& v : victims) {
    if (!possible_victim(key, c.cohort, v)) continue;
    least_victim = std::min(least_victim, v.job_gpu_milli);
    cpu += v.cpu_milli;
    memory += v.memory_mib;
    for (const auto& [p, milli] : v.gpus) c.gpu_free[offset + p] += milli;
    // Were it the only one gone: what its replicas here (which may share a GPU) hold per GPU.
    int32_t most_alone = 0;
    for (const auto& [p, milli] : v.gpus) {
      int32_t alone = n.gpus[p].free_milli();
      for (const auto& [q, held] : v.gpus)
        if (q == p) alone += held;
      single_free = std::max(single_free, alone);
      most_alone = std::max(most_alone, alone);
      if (alone >= 1000) single_whole = std::min(single_whole, v.job_gpu_milli);
    }
    if (!v.gpus.empty()) alone_sizes.push_back({most_alone, v.job_gpu_milli});
  }
  // The single steps: victims by what they free alone, most first (the smaller of equals
  // first); a victim no smaller than one that frees more adds nothing; past the last step the
  // smaller sizes go into it.
  std::sort(alone_sizes.begin(), alone_sizes.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  auto& steps = c.single_steps[slot];
  size_t count = 0;
  for (const auto& [alone, size] : alone_sizes) {
    if (count > 0 && size >= steps[count - 1].victim_milli) continue;
    if (count == steps.size())
      steps[count - 1].victim_milli = size;
    else
      steps[count++] = {alone, size};
  }
  c.single_step_count[slot] = static_cast<uint8_t>(count);
  c.cpu_free[slot] = cpu;
  c.memory_free[slot] = memory;
  c.least_victim[slot] = least_victim;
  c.single_free[slot] = single_free;
  c.single_whole[slot] = single_whole;
  return true;
}

int64_t ClusterScheduler::least_single_share(const VictimCandidates& c, int slot, int64_t milli) {
  int64_t least = 0;
  const auto& steps = c.single_steps[slot];
  for (size_t i = 0; i < c.single_step_count[slot] && steps[i].alone_milli >= milli; ++i)
    least = steps[i].victim_milli;
  return least;
}

void ClusterScheduler::refresh_candidate(const VictimKey& key, VictimCandidates& c, int slot) {
  bool candidate = nodes_[slot].present && bound_candidate(key, c, slot);
  if (!candidate) {
    if (c.member[slot]) c.member[slot] = 0, ++c.not_members;
    return;
  }
  if (!c.member[slot]) {
    c.member[slot] = 1;
    if (c.listed[slot]) {
      --c.not_members;
    } else {
      c.listed[slot] = 1;
      ++c.listed_count;
      c.group_slots[classes_.group_of_slot(slot)].push_back(slot);
    }
  }
}

std::optional<int64_t> ClusterScheduler::least_single_victim(const VictimCandidates& c,
                                                             const JobRequest& one, int shape,
                                                             int slot) {
  const NodeState& n = nodes_[slot].state;
  const int64_t cpu = n.cpu_milli - n.cpu_used_milli, memory = n.memory_mib - n.memory_used_mib;
  const uint64_t match = gpu_match_mask(shapes_[shape], classes_.group_of_slot(slot));
  const int64_t need = one.gpu_milli > 0 ? one.gpu_milli : 1000;
  const int want = one.gpu_milli > 0 ? 1 : one.gpus;
  std::optional<int64_t> least;
  // What each GPU has free (read once: the node's GPU states are large and often uncached), and
  // how many of the matching ones have enough already.
  boost::container::small_vector<int64_t, 16> free_now;
  int enough_now = 0;
  if (one.gpus > 0)
    for (size_t p = 0; p < n.gpus.size(); ++p) {
      free_now.push_back(n.gpus[p].free_milli());
      enough_now += p < 64 && (match >> p & 1) && free_now[p] >= need;
    }
  for (const NodeVictim& v : node_victim_list(slot)) {
    if (!possible_victim(c.key, c.cohort, v)) continue;
    if (cpu + v.cpu_milli < one.cpu_milli || memory + v.memory_mib < one.memory_mib) continue;
    if (one.gpus > 0 && enough_now < want) {
      // Add the matching GPUs its going brings to enough (its replicas here may share one: a
      // GPU is counted at its first entry, with all of them).
      int enough = enough_now;
      for (size_t i = 0; i < v.gpus.size() && enough < want; ++i) {
        const size_t p = v.gpus[i].first;
        if (p >= 64 || !(match >> p & 1) || free_now[p] >= need) continue;
        int64_t freed = 0;
        bool first = true;
        for (size_t j = 0; j < v.gpus.size() && first; ++j)
          if (v.gpus[j].first == p) {
            first = j >= i;
            freed += v.gpus[j].second;
          }
        if (first && free_now[p] + freed >= need) ++enough;
      }
      if (enough < want) continue;
    }
    if (!least || v.job_gpu_milli < *least) least = v.job_gpu_milli;
  }
  return least;
}

void ClusterScheduler::victim_chosen(const RunningJob& victim) {
  ++wake_version_;  // what preempting would free there shrank
  ++victims_chosen_;
  for (const auto& [slot, rp] : victim.replicas) {
    slot_changed(slot);  // victims_on
    victims_changed(slot);
  }
  // Candidates found in this victim epoch stay candidates until the next one (as if found now);
  // their bounds shrink at once.
  for (auto& [key, c] : victim_slots_)
    for (const auto& [slot, rp] : victim.replicas)
      if (static_cast<size_t>(slot) < c.member.size() && c.member[slot])
        bound_candidate(key, c, slot);
  for (const auto& [slot, rp] : victim.replicas) log_victim_change(slot);
}

ClusterScheduler::VictimCandidates& ClusterScheduler::victim_slots(const PendingJob& job) {
  // Borrowers are candidates only for a lender that may reclaim: within its nominal quota of
  // one of the models the job could run on (else every node with a borrower would be one).
  std::string cohort = tenants_.cohort_of(job.req.tenant);
  if (!cohort.empty()) {
    int64_t milli = gpu_milli_of(job.req);
    const auto& models = shape_models(shapes_[job.shape]);
    if (milli == 0 || std::none_of(models.begin(), models.end(), [&](const std::string& model) {
          return tenants_.within_nominal(job.req.tenant, model, milli);
        }))
      cohort.clear();
  }
  VictimKey key{job.req.priority, job.req.preemptible(), std::move(cohort)};
  auto [it, fresh] = victim_slots_.try_emplace(key);
  VictimCandidates& c = it->second;
  c.key = key;
  if (!fresh && c.epoch == victim_epoch_) return c;
  c.epoch = victim_epoch_;
  c.nothing_freeable.clear();
  // Catching up refreshes each logged node once; finding them afresh walks every running job
  // they may preempt and refreshes every node of those: only a backlog longer than
  // kVictimBacklog times the nodes (a key unused for long) is found afresh.
  if (fresh || victim_log_.size() - c.log_cursor > kVictimBacklog * nodes_.size()) {
    find_candidates(key, c);
  } else {
    grow_candidates(c);  // nodes that joined since are in the log
    catch_up_candidates(key, c);
  }
  trim_victim_log();
  return c;
}

void ClusterScheduler::find_candidates(const VictimKey& key, VictimCandidates& c) {
  // Emptied, then grown to every node.
  for (auto* v : {&c.listed, &c.member}) v->clear();
  for (auto* v : {&c.cpu_free, &c.memory_free, &c.least_victim, &c.single_whole}) v->clear();
  c.single_free.clear();
  c.single_steps.clear();
  c.single_step_count.clear();
  c.gpu_offset.assign(1, 0);
  c.gpu_free.clear();
  c.group_slots.clear();
  grow_candidates(c);
  const size_t n = nodes_.size();
  c.listed_count = c.not_members = 0;
  c.log_cursor = victim_log_.size();
  c.cohort = cohort_id(std::get<2>(key));
  // The nodes of the running jobs that may be victims for the key (the indexes hold them all).
  const auto& [priority, spot, cohort] = key;
  SlotFlags& seen = victim_seen_;
  seen.start(n);
  std::vector<int> touched;
  auto consider = [&](const RunningJob& r) {
    if (possible_victim(key, r))
      for (const auto& [slot, rp] : r.replicas)
        if (!seen.test(slot)) seen.set(slot), touched.push_back(slot);
  };
  for (const auto& [by, r] : by_priority_) {
    if (by.first >= priority) break;
    consider(*r);
  }
  if (!spot)
    for (const auto& [seq, r] : spot_running_) consider(*r);
  if (!cohort.empty())
    for (const auto& [seq, r] : borrowed_running_) consider(*r);
  for (int slot : touched) refresh_candidate(key, c, slot);
}

void ClusterScheduler::grow_candidates(VictimCandidates& c) {
  size_t old = c.member.size(), n = nodes_.size();
  if (old < n) {
    c.listed.resize(n, 0);
    c.member.resize(n, 0);
    c.cpu_free.resize(n, 0);
    c.memory_free.resize(n, 0);
    c.least_victim.resize(n, 0);
    c.single_free.resize(n, 0);
    c.single_whole.resize(n, 0);
    c.single_steps.resize(n);
    c.single_step_count.resize(n, 0);
    c.gpu_offset.resize(n + 1, 0);
    for (size_t slot = old; slot < n; ++slot)
      c.gpu_offset[slot + 1] = c.gpu_offset[slot] + nodes_[slot].state.gpus.size();
    c.gpu_free.resize(c.gpu_offset[n], 0);
  }
  if (c.group_slots.size() < classes_.static_groups())
    c.group_slots.resize(classes_.static_groups());
}

void ClusterScheduler::catch_up_candidates(const VictimKey& key, VictimCandidates& c) {
  SlotFlags& seen = victim_seen_;
  seen.start(nodes_.size());
  for (; c.log_cursor < victim_log_.size(); ++c.log_cursor) {
    int slot = victim_log_[c.log_cursor];
    if (seen.test(slot)) continue;
    seen.set(slot);
    refresh_candidate(key, c, slot);
  }
  if (c.not_members > c.listed_count / 2) {
    for (auto& slots : c.group_slots)
      std::erase_if(slots, [&](int slot) {
        if (c.member[slot]) return false;
        c.listed[slot] = 0;
        return true;
      });
    c.listed_count -= c.not_members;
    c.not_members = 0;
  }
}

void ClusterScheduler::trim_victim_log() {
  if (victim_log_.size() < kVictimBacklog * nodes_.size()) return;
  // Keys far behind would be found afresh anyway: drop them (not those brought up to date in
  // this victim epoch, which stay as they are until it ends), then the part all others read.
  std::erase_if(victim_slots_, [&](const auto& kv) {
    return kv.second.epoch != victim_epoch_ &&
           victim_log_.size() - kv.second.log_cursor > kVictimBacklog * nodes_.size();
  });
  size_t read = victim_log_.size();
  for (const auto& [key, c] : victim_slots_) read = std::min(read, c.log_cursor);
  victim_log_.erase(victim_log_.begin(), victim_log_.begin() + static_cast<long>(read));
  for (auto& [key, c] : victim_slots_) c.log_cursor -= read;
}

bool ClusterScheduler::could_free_enough(const VictimCandidates& c, int slot, Shape& shape) {
  const JobRequest& req = shape.req;
  if (c.cpu_free[slot] < req.cpu_milli || c.memory_free[slot] < req.memory_mib) return false;
  if (req.gpus == 0) return true;
  int32_t need = req.gpu_milli > 0 ? req.gpu_milli : 1000;
  int found = 0, want = req.gpu_milli > 0 ? 1 : req.gpus;
  uint64_t mask = gpu_match_mask(shape, classes_.group_of_slot(slot));
  size_t offset = c.gpu_offset[slot], gpus = c.gpu_offset[slot + 1] - offset;
  for (size_t p = 0; p < gpus && p < 64; ++p)
    if (c.gpu_free[offset + p] >= need && (mask >> p & 1) && ++found >= want) return true;
  return false;
}

std::optional<std::vector<std::string>> ClusterScheduler::choose_victims(
    const PendingJob& job, bool ends_before_reservation, std::set<int>* nodes, bool* fits_freely) {
  JobRequest one = job.req;
  one.replicas = 1;
  // A gang may also fit on one node as a whole.
  JobRequest whole = one;
  whole.gpus = one.gpus * job.req.replicas;
  whole.cpu_milli = one.cpu_milli * job.req.replicas;
  whole.memory_mib = one.memory_mib * job.req.replicas;
  bool try_whole = job.req.replicas > 1 && one.gpu_milli == 0;
  int whole_shape = try_whole ? intern_shape(whole) : -1;  // may grow shapes_: before any Shape&
  if (try_whole) {  // only where some kind of node could hold the whole gang
    bool somewhere = false;
    for (int g = 0; g < static_cast<int>(classes_.static_groups()) && !somewhere; ++g)
      somewhere = classes_.group_members(g) > 0 && could_fit(shapes_[whole_shape], g);
    try_whole = somewhere;
  }
  int64_t milli = one.gpu_milli > 0 ? one.gpu_milli : int64_t{one.gpus} * 1000;
  std::map<std::string, bool> model_allowed;  // the tenant may take the GPUs of this model
  auto allowed = [&](const std::string& model) {
    auto [it, fresh] = model_allowed.try_emplace(model, false);
    if (fresh)
      it->second = tenants_.allows(job.req.tenant, model, milli * job.req.replicas) ||
                   tenants_.within_nominal(job.req.tenant, model, milli * job.req.replicas);
    return it->second;
  };
  // The quota allows none of the models the job could run on: no node is worth a look.
  if (one.gpus > 0) {
    const auto& models = shape_models(shapes_[job.shape]);
    if (std::none_of(models.begin(), models.end(), allowed)) return std::nullopt;
  }
  // Only nodes that could run a replica where something may be preempted, and for gangs also
  // nodes a replica fits now (visited in the order below).
  std::vector<int> slots;
  std::vector<char> slot_candidate;  // per slots entry: it is one of the victim candidates
  SlotFlags& marked = victim_marked_;
  marked.start(nodes_.size());
  auto add_slot = [&](int slot, bool candidate) {
    // (A node is in a class while it is present: its class is read, not the node.)
    if (marked.test(slot) || classes_.class_of(slot) < 0) return;
    marked.set(slot);
    if (!slot_could_fit(shapes_[job.shape], slot) || held_against(job, slot)) return;
    if (reservation_ && !ends_before_reservation && reservation_->job_id != job.req.job_id &&
        slot < static_cast<int>(reserved_slot_.size()) && reserved_slot_[slot])
      return;
    slots.push_back(slot);
    slot_candidate.push_back(candidate);
  };
  VictimCandidates& candidates = victim_slots(job);
  // What could_free_enough compares: milli needed on a GPU, GPUs, CPUs, memory.
  int64_t per_gpu = one.gpus == 0 ? 0 : one.gpu_milli > 0 ? one.gpu_milli : 1000;
  int64_t gpus = one.gpus == 0 ? 0 : one.gpu_milli > 0 ? 1 : one.gpus;
  std::array<int64_t, 4> size{per_gpu, gpus, one.cpu_milli, one.memory_mib};
  auto& nothing =
      candidates
          .nothing_freeable[{fit_signature(shapes_[job.shape]), one.gpu_model, one.gpu_memory_mib}];
  for (const auto& smaller : nothing)
    if (smaller[0] <= size[0] && smaller[1] <= size[1] && smaller[2] <= size[2] &&
        smaller[3] <= size[3])
      return std::nullopt;
  for (int g = 0; g < static_cast<int>(candidates.group_slots.size()); ++g) {
    if (candidates.group_slots[g].empty() || !could_fit(shapes_[job.shape], g)) continue;
    for (int slot : candidates.group_slots[g])
      if (candidates.member[slot] && could_free_enough(candidates, slot, shapes_[job.shape]))
        add_slot(slot, true);
  }
  if (slots.empty()) {
    nothing.push_back(size);
    return std::nullopt;
  }
  if (job.req.replicas > 1) {
    for (const auto& entry : refresh_ranking(job.shape).ranked)
      if (memory_fits(shapes_[job.shape], entry.second))
        for (int slot : classes_.get(entry.second).members) add_slot(slot, false);
  }
  std::vector<VictimOption> per_replica, per_gang;
  auto by_cost = [](const VictimOption& a, const VictimOption& b) {
    if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
    if (a.victim_gpu_milli != b.victim_gpu_milli) return a.victim_gpu_milli < b.victim_gpu_milli;
    if (a.node_jobs != b.node_jobs) return a.node_jobs < b.node_jobs;
    return a.slot < b.slot;
  };
  // One replica: nodes in order of the least GPU milli their victims would hold, then of their
  // running jobs, so that the cheapest option comes early. One victim is the fewest there can
  // be, so once the best option is a single victim and the next node's (least, jobs, slot)
  // is above the option's (GPU milli, jobs, slot), no later node can beat it (by_cost).
  // Only GPUs that its possible victims could free count towards a node's least.
  // Per node, a bound on its options' cost (by_cost): (fewest victims, least victim milli, jobs,
  // slot). The fewest victims is 0 where it may fit as it is, else 1 until the node is popped:
  // then whether a single possible victim could free enough is looked up (fewest 1, and the
  // least milli such a victim holds) or not (fewest 2), and the node goes back with that bound.
  using Bound = std::tuple<int64_t, int64_t, int, int>;
  const int32_t need = one.gpu_milli > 0 ? one.gpu_milli : 1000;
  auto bound_of = [&](int slot, bool candidate) -> Bound {
    uint64_t mask = gpu_match_mask(shapes_[job.shape], classes_.group_of_slot(slot));
    int64_t least_victim = 0;  // every option here has a victim at least this large
    if (candidate) {
      for (size_t p = 0; p < nodes_[slot].state.gpus.size() && p < 64; ++p)
        if (candidates.gpu_free[candidates.gpu_offset[slot] + p] < need)
          mask &= ~(uint64_t{1} << p);
      least_victim = candidates.least_victim[slot];
    }
    // A node that needs no GPU freed may fit as it is; one that needs CPU or memory freed has a
    // victim at least as large as the smallest there.
    const NodeState& state = nodes_[slot].state;
    int64_t least = least_victim_milli(one, state, mask);
    bool fits_as_is = state.cpu_milli - state.cpu_used_milli >= one.cpu_milli &&
                      state.memory_mib - state.memory_used_mib >= one.memory_mib;
    const bool may_fit = least == 0 && fits_as_is;
    if (least == 0 && !fits_as_is) least = least_victim;
    return {may_fit ? 0 : 1, least == 0 ? 0 : std::max(least, least_victim),
            static_cast<int>(nodes_[slot].jobs.size()), slot};
  };
  // Reading a node's GPUs is most of what its bound costs (they miss the cache): a candidate
  // starts with a bound at most its own, from its class's summary (the node's free GPUs, the
  // most free on one, CPUs and memory) and its smallest possible victim, made exact when it
  // comes up (not yet `refined`).
  auto lower_bound_of = [&](int slot) -> Bound {
    const int jobs = slot_jobs_[slot];
    const int id = classes_.class_of(slot);
    if (id < 0) return {0, 0, jobs, slot};
    const ClassSummary& free = classes_.summary(id);
    // At most least_victim_milli over all its GPUs (the matching ones are some of them): a
    // share needs its shortfall on the freest GPU; whole GPUs, where none is free, each hold at
    // least what the freest one does.
    int64_t least = 0;
    if (one.gpus > 0 && one.gpu_milli > 0) {
      least = std::max<int64_t>(0, one.gpu_milli - free.max_free_milli);
    } else if (one.gpus > 0 && free.free_gpus < one.gpus) {
      least = free.free_gpus > 0 ? one.gpus - free.free_gpus
                                 : int64_t{one.gpus} * (1000 - free.max_free_milli);
    }
    const bool fits_as_is =
        free.cpu_free_milli >= one.cpu_milli && free.memory_free_mib >= one.memory_mib;
    if (least == 0 && fits_as_is) return {0, 0, jobs, slot};
    int64_t fewest = 1, milli = std::max(least, candidates.least_victim[slot]);
    if (one.gpus > 0 && least > 0) {
      // Too little free on its GPUs as they are: one victim alone must make a GPU free enough
      // (as least_single_victim would find), else two at least. Whole GPUs: too few are free,
      // so that victim must leave a whole GPU free.
      if (one.gpu_milli > 0 ? candidates.single_free[slot] < one.gpu_milli
                            : candidates.single_whole[slot] == kNoVictim)
        fewest = 2;
      else if (one.gpu_milli == 0)
        milli = std::max(milli, candidates.single_whole[slot]);
      else  // a share: the smallest victim that frees enough on one GPU alone, or larger
        milli = std::max(milli, least_single_share(candidates, slot, one.gpu_milli));
    }
    return {fewest, milli, jobs, slot};
  };
  std::vector<Bound> order;
  // Per node: not set, its bound is a lower one (a candidate); set, final (exact and, where it
  // was one victim, whether a single victim could do looked up: least_single_victim).
  SlotFlags& refined = victim_refined_;
  refined.start(nodes_.size());
  for (size_t k = 0; k < slots.size(); ++k) {
    const int slot = slots[k];
    if (slot_candidate[k]) {
      order.push_back(lower_bound_of(slot));
    } else {
      refined.set(slot);  // nothing to look up: its bound stays
      order.push_back(bound_of(slot, false));
    }
  }
  // A heap, not a sort: the search usually stops after a few nodes.
  std::make_heap(order.begin(), order.end(), std::greater<>());
  VictimMemos& one_memos = victim_memos(job, job.shape);
  VictimMemos* whole_memos = try_whole ? &victim_memos(job, whole_shape) : nullptr;
  // A gang takes its `replicas` cheapest options (spread below): once that many are kept, a node
  // whose bound is above the costliest of them cannot displace it, nor can any later one. (Not
  // while a whole-gang option on one node may still be found.)
  const size_t want = static_cast<size_t>(job.req.replicas);
  const bool may_stop = !try_whole;
  std::vector<size_t>
      kept;  // into per_replica: the cheapest so far, a heap with the costliest on top
  auto costlier = [&](size_t a, size_t b) { return by_cost(per_replica[a], per_replica[b]); };
  // The node that comes first, with a first bound only, gets its final one (its exact bound and,
  // where that is one victim, whether one may do: the first bound may count the smallest single
  // victim already, above the exact bound alone); it goes back in line if another node now
  // comes first, else it is searched at once (it would come out again first).
  bool stop = false;
  while (!order.empty() && !stop) {
    std::pop_heap(order.begin(), order.end(), std::greater<>());
    Bound bound = order.back();
    order.pop_back();
    const int slot = std::get<3>(bound);
    bool back_in_line = false;
    for (;;) {
      if (may_stop && kept.size() == want) {
        const VictimOption& worst = per_replica[kept.front()];
        if (bound > Bound{static_cast<int64_t>(worst.victims.size()), worst.victim_gpu_milli,
                          worst.node_jobs, worst.slot}) {
          stop = true;
          break;
        }
      }
      Bound refined_bound = bound;
      if (!refined.test(slot)) {
        refined.set(slot);
        refined_bound = bound_of(slot, true);
        if (const auto [exact_fewest, exact_least, exact_jobs, at_] = refined_bound;
            exact_fewest == 1) {
          if (std::optional<int64_t> single = least_single_victim(candidates, one, job.shape, slot))
            refined_bound = {1, std::max(exact_least, *single), exact_jobs, slot};
          else
            refined_bound = {2, exact_least, exact_jobs, slot};
        }
      } else {
        break;  // final
      }
      if (!order.empty() && order.front() < refined_bound) {
        order.push_back(refined_bound);
        std::push_heap(order.begin(), order.end(), std::greater<>());
        back_in_line = true;
        break;
      }
      bound = refined_bound;
    }
    if (stop || back_in_line) continue;
    const Node& n = nodes_[slot];
    if (one.gpus > 0 && !n.state.gpus.empty() && !allowed(n.state.gpus[0].model)) continue;
    if (const auto& o = victims_on(job, one, one_memos, slot)) {
      if (o->victims.empty() && fits_freely) *fits_freely = true;
      if (job.req.replicas == 1 && o->victims.empty()) continue;  // fits: not a preemption
      per_replica.push_back(*o);
      size_t added = per_replica.size() - 1;
      if (kept.size() < want) {
        kept.push_back(added);
        std::push_heap(kept.begin(), kept.end(), costlier);
      } else if (by_cost(per_replica[added], per_replica[kept.front()])) {
        std::pop_heap(kept.begin(), kept.end(), costlier);
        kept.back() = added;
        std::push_heap(kept.begin(), kept.end(), costlier);
      }
    }
    if (try_whole && slot_could_fit(shapes_[whole_shape], slot))
      if (const auto& o = victims_on(job, whole, *whole_memos, slot)) per_gang.push_back(*o);
  }
  std::sort(per_replica.begin(), per_replica.end(), by_cost);
  std::sort(per_gang.begin(), per_gang.end(), by_cost);
  // One replica per node, cheapest nodes first; a gang's victims are the union.
  std::optional<std::set<std::string>> spread;
  if (static_cast<int>(per_replica.size()) >= job.req.replicas) {
    spread.emplace();
    for (int i = 0; i < job.req.replicas; ++i)
      spread->insert(per_replica[i].victims.begin(), per_replica[i].victims.end());
  }
  std::optional<std::set<std::string>> together;
  if (!per_gang.empty()) together.emplace(per_gang[0].victims.begin(), per_gang[0].victims.end());
  const std::set<std::string>* best = nullptr;
  if (spread && !spread->empty()) {
    best = &*spread;
    nodes->clear();
    for (int i = 0; i < job.req.replicas; ++i) nodes->insert(per_replica[i].slot);
  }
  if (together && !together->empty() && (!best || together->size() <= best->size())) {
    best = &*together;
    *nodes = {per_gang[0].slot};
  }
  if (!best) return std::nullopt;
  return std::vector<std::string>(best->begin(), best->end());
}

const std::vector<const ClusterScheduler::RunningJob*>& ClusterScheduler::cohort_borrowers(
    const std::string& cohort, const std::string& model) {
  auto [list, fresh] = borrowers_.try_emplace({cohort, model});
  if (fresh) {
    for (const auto& [seq, r] : borrowed_running_)
      if (!r->models.empty() && r->models[0] == model && r->placed_pass != pass_ &&
          cohort_of_tenant(r->tenant) == cohort)
        list->second.push_back(r);
    std::sort(list->second.begin(), list->second.end(),
              [](const RunningJob* a, const RunningJob* b) {
                return cheaper_victim(a->req, false, a->started_at, b->req, false, b->started_at);
              });
  }
  return list->second;
}

std::optional<std::vector<std::string>> ClusterScheduler::choose_reclaim_victims(
    const PendingJob& job, std::string* reclaimed_model) {
  // The job is within its tenant's nominal quota of some model, but cohort members borrowed
  // it: free enough of their borrowed use of that model, cheapest first.
  int64_t milli = gpu_milli_of(job.req);
  if (milli == 0) return std::nullopt;
  const std::string& cohort = tenants_.cohort_of(job.req.tenant);
  if (cohort.empty()) return std::nullopt;
  if (reclaim_known_to_fail(job)) return std::nullopt;
  std::set<std::string> models;  // of the nodes that could run it
  for (int g = 0; g < static_cast<int>(classes_.static_groups()); ++g)
    if (classes_.group_members(g) > 0 && could_fit(shapes_[job.shape], classes_.group_example(g)))
      models.insert(classes_.group_example(g).gpu_model);
  for (const auto& model : models) {
    if (!tenants_.within_nominal(job.req.tenant, model, milli)) continue;
    int64_t need = tenants_.cohort_excess(job.req.tenant, model, milli);
    if (need == 0) continue;
    std::vector<std::string> victims;
    int64_t freed = 0;
    for (const RunningJob* r : cohort_borrowers(cohort, model)) {
      if (freed >= need) break;
      if (r->preempting || !may_reclaim(job, *r)) continue;
      victims.push_back(r->req.job_id);
      freed += gpu_milli_of(r->req);
    }
    if (freed >= need) {
      *reclaimed_model = model;
      return victims;
    }
  }
  failed_reclaims_[cohort].keys.insert(failed_reclaim_key(job));
  return std::nullopt;
}

std::tuple<int, int, int, bool, int64_t> ClusterScheduler::failed_reclaim_key(
    const PendingJob& job) {
  return {job.tenant, fit_signature(shapes_[job.shape]), job.req.priority, job.req.preemptible(),
          gpu_milli_of(job.req)};
}

bool ClusterScheduler::reclaim_known_to_fail(const PendingJob& job) {
  const std::string& cohort = cohort_of_tenant(job.tenant);
  const auto state = std::make_tuple(pass_, tenants_.cohort_changes(cohort), borrowed_added_.size(),
                                     borrowed_removals_);
  FailedReclaims& failed = failed_reclaims_[cohort];
  if (failed.state != state) {
    failed.keys.clear();
    failed.state = state;
    return false;
  }
  return failed.keys.count(failed_reclaim_key(job)) > 0;
}

}  // namespace gpucloud::sched
