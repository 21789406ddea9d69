#include "sched/cluster_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <queue>

#include "sched/fit.h"

namespace gpucloud::sched {
namespace {

Status invalid_request(const std::string& text) {
  return Error{ErrorCode::kInvalidArgument, text};
}

Status validate(const JobRequest& r) {
  if (r.job_id.empty()) return invalid_request("job_id: must not be empty");
  if (r.replicas < 1) return invalid_request(fmt::format("replicas: {} is below 1", r.replicas));
  if (r.gpus < 0) return invalid_request(fmt::format("gpus: {} is negative", r.gpus));
  if (r.gpu_milli < 0 || r.gpu_milli > 999)
    return invalid_request(fmt::format("gpu_milli: {} is outside 0..999", r.gpu_milli));
  if (r.gpu_milli > 0 && r.gpus != 1)
    return invalid_request("gpu_milli: a GPU share asks for exactly one GPU (gpus = 1)");
  // Preemption levels compare priorities one below a job's own: keep that in range.
  constexpr int kMaxPriority = 1'000'000'000;
  if (r.priority < -kMaxPriority || r.priority > kMaxPriority)
    return invalid_request(fmt::format("priority: {} is outside ±{}", r.priority, kMaxPriority));
  if (r.cpu_milli < 0 || r.memory_mib < 0 || r.gpu_memory_mib < 0 || r.max_runtime_ms < 0 ||
      r.expected_runtime_ms < 0 || r.attained_gpu_ms < 0)
    return invalid_request(
        "cpu_milli, memory_mib, gpu_memory_mib, max_runtime_ms, expected_runtime_ms, "
        "attained_gpu_ms: negative");
  return {};
}

std::string shape_key(const JobRequest& r) {
  std::string key =
      fmt::format("{}/{}/{}/{}/{}/{}/{}/{}/", r.gpus, r.gpu_milli, r.gpu_memory_mib, r.gpu_model,
                  r.cpu_milli, r.memory_mib, static_cast<int>(r.capacity_class), r.max_price);
  if (r.price_cap_from_cost) key += "c/";
  for (const auto& [k, v] : r.node_selector) key += k + "=" + v + ",";
  return key;
}

}  // namespace

ClusterScheduler::ClusterScheduler(PlacementPolicy policy, PolicySettings settings)
    : policy_(policy),
      settings_(std::move(settings)),
      scorer_(policy, ScoreNormalizers{}),
      rng_(settings_.seed) {
  las_ = settings_.queue_policy == "las";
  if (las_)
    for (double t : settings_.las_thresholds_gpu_s)
      las_thresholds_.push_back(static_cast<int64_t>(t * 1000));
  if (!settings_.profile.empty()) {
    WorkloadProfile profile;
    for (const auto& p : settings_.profile)
      profile.types.push_back({p.cpu_milli, p.gpus,
                               p.gpus == 0       ? 0
                               : p.gpu_milli > 0 ? p.gpu_milli
                                                 : 1000,
                               0, p.freq, 0});
    scorer_.set_profile(std::move(profile));
  }
}

int ClusterScheduler::slot_of(const std::string& node_id) const {
  return slot_by_id_.find(node_id,
                          [&](int slot) -> const std::string& { return nodes_[slot].state.id; });
}

void ClusterScheduler::reindex(int slot) {
  slot_changed(slot);
  ++wake_version_;
  mark_source_dirty(slot);
  bump_group_version(slot);  // the group it leaves
  count_blocked(slot, -1);
  const Node& n = nodes_[slot];
  if (n.present)
    classes_.assign(slot, n.state, n.share_jobs, n.whole_jobs);
  else
    classes_.remove(slot);
  count_blocked(slot, +1);
  bump_group_version(slot);  // the group it joins
  refile_ends(slot);
}

ClusterScheduler::Ends& ClusterScheduler::ends_of(const RunningJob& job) {
  if (job.replicas.size() != 1) return spanning_ends_;
  const int slot = job.replicas[0].first;
  const int group = static_cast<size_t>(slot) < ends_group_.size() ? ends_group_[slot] : -1;
  return group < 0 ? spanning_ends_ : ends_by_group_[group];
}

void ClusterScheduler::refile_ends(int slot) {
  // A node that left keeps its group's (walks skip nodes in no class).
  const int group = classes_.group_of_slot(slot);
  if (group < 0) return;
  if (ends_group_.size() <= static_cast<size_t>(slot)) ends_group_.resize(slot + 1, -1);
  if (ends_group_[slot] == group) return;
  if (ends_by_group_.size() <= static_cast<size_t>(group)) ends_by_group_.resize(group + 1);
  for (const auto& [seq, job] : nodes_[slot].jobs) {
    if (job->expected_end == kNever || job->replicas.size() != 1) continue;  // (gangs: spanning)
    ends_by_group_[group].insert(ends_of(*job).extract({job->expected_end, job->req.job_id}));
  }
  ends_group_[slot] = group;
}

void ClusterScheduler::count_blocked(int slot, int sign) {
  int c = classes_.class_of(slot);
  if (c < 0 || slot >= static_cast<int>(slot_blocked_.size()) || !slot_blocked_[slot]) return;
  if ((class_blocked_[c] += sign) == 0) class_blocked_.erase(c);
}

void ClusterScheduler::slot_changed(int slot) {
  if (slot_version_.size() <= static_cast<size_t>(slot)) slot_version_.resize(nodes_.size());
  ++slot_version_[slot];
  if (changed_slots_.size() > 4 * nodes_.size() + 4096) {  // many changes between two passes
    changed_slots_.clear();
    ++changed_slots_epoch_;
  }
  changed_slots_.push_back(slot);
}

void ClusterScheduler::bump_group_version(int slot) {
  int c = classes_.class_of(slot);
  if (c < 0) return;
  size_t group = classes_.summary(c).static_group;
  if (group_version_.size() <= group) group_version_.resize(group + 1, 0);
  ++group_version_[group];
}

void ClusterScheduler::hold_changed(int slot) {
  mark_source_dirty(slot);
  const bool blocked =
      (slot < static_cast<int>(reserved_slot_.size()) && reserved_slot_[slot]) ||
      (slot < static_cast<int>(nominees_by_slot_.size()) && !nominees_by_slot_[slot].empty());
  if (slot_blocked_.size() <= static_cast<size_t>(slot)) slot_blocked_.resize(nodes_.size(), 0);
  if (slot_blocked_[slot] != blocked) {
    count_blocked(slot, -1);
    slot_blocked_[slot] = blocked;
    count_blocked(slot, +1);
  }
  int c = classes_.class_of(slot);
  if (c < 0) return;
  size_t group = classes_.summary(c).static_group;
  if (group_holds_version_.size() <= group) group_holds_version_.resize(group + 1, 0);
  ++group_holds_version_[group];
}

void ClusterScheduler::update_capacity() {
  // Only the nodes that changed since: their counted share is taken out and put in again.
  auto count = [&](const Counted& c, int sign) {
    if (!c.present) return;
    capacity_.gpu += sign * c.gpu_milli;
    capacity_.cpu += sign * c.cpu_milli;
    capacity_.memory += sign * c.memory_mib;
    auto bump = [&](auto& counts, const auto& key) {
      if ((counts[key] += sign) == 0) counts.erase(key);
    };
    bump(capacity_.cpu_counts, c.cpu_milli);
    bump(capacity_.gpu_counts, c.gpus);
    if (c.has_class) bump(capacity_.zone_counts, c.zone);
  };
  if (counted_.size() < nodes_.size()) counted_.resize(nodes_.size());
  for (int slot : capacity_changed_) {
    Counted& c = counted_[slot];
    count(c, -1);
    const Node& n = nodes_[slot];
    c = Counted{};
    c.present = n.present;
    if (n.present) {
      c.gpus = static_cast<int>(n.state.gpus.size());
      c.gpu_milli = int64_t{c.gpus} * 1000;
      c.cpu_milli = n.state.cpu_milli;
      c.memory_mib = n.state.memory_mib;
      c.has_class = classes_.class_of(slot) >= 0;
      if (c.has_class) c.zone = classes_.of_slot(slot).zone;
    }
    count(c, +1);
  }
  capacity_changed_.clear();
  zones_.clear();
  for (const auto& [zone, n] : capacity_.zone_counts) zones_.insert(zone);
  const int64_t gpu = capacity_.gpu, cpu = capacity_.cpu, memory = capacity_.memory;
  const int64_t max_cpu = capacity_.cpu_counts.empty() ? 0 : capacity_.cpu_counts.rbegin()->first;
  const int max_gpus = capacity_.gpu_counts.empty() ? 0 : capacity_.gpu_counts.rbegin()->first;
  tenants_.set_capacity(gpu, cpu, memory);
  ScoreNormalizers norm;
  norm.max_cpu_milli = settings_.max_node_cpu_milli > 0 ? settings_.max_node_cpu_milli
                                                        : std::max<int64_t>(max_cpu, 1);
  norm.max_gpu_milli =
      int64_t{settings_.max_node_gpus > 0 ? settings_.max_node_gpus : std::max(max_gpus, 1)} * 1000;
  if (norm.max_cpu_milli != scorer_.normalizers().max_cpu_milli ||
      norm.max_gpu_milli != scorer_.normalizers().max_gpu_milli) {
    scorer_.set_normalizers(norm);
    reset_rankings();  // every score changes; they are recomputed lazily
  }
}

void ClusterScheduler::reset_rankings() {
  for (auto& ranking : rankings_) {
    ranking.ranked.clear();
    ranking.started = false;
    ranking.cursors.fill(0);
  }
}

void ClusterScheduler::trim_activation_logs() {
  const size_t at_least = settings_.activations_kept_at_least;
  if (at_least == 0 || classes_.activation_count() < std::max(trim_activations_at_, at_least))
    return;
  const uint64_t alive = classes_.active().size();
  std::array<uint64_t, NodeClassIndex::kCapacityLevels> keep_from;
  for (int level = 0; level < NodeClassIndex::kCapacityLevels; ++level)
    keep_from[level] = classes_.activation_end(level);
  for (auto& ranking : rankings_) {
    if (!ranking.started) continue;
    const JobRequest& r = shapes_[ranking.shape].req;
    const int least = NodeClassIndex::least_capacity_level(r.gpus, r.gpu_milli);
    uint64_t lag = 0;
    for (int level = least; level < NodeClassIndex::kCapacityLevels; ++level)
      lag += classes_.activation_end(level) - ranking.cursors[level];
    if (lag > kLagMadeAgain * alive) {
      ranking.ranked.clear();
      ranking.started = false;
      ranking.kept = 0;
      continue;
    }
    for (int level = least; level < NodeClassIndex::kCapacityLevels; ++level)
      keep_from[level] = std::min(keep_from[level], ranking.cursors[level]);
  }
  for (int level = 0; level < NodeClassIndex::kCapacityLevels; ++level)
    classes_.trim_activations(level, keep_from[level]);
  trim_activations_at_ = 2 * std::max<size_t>(classes_.activation_count(), alive);
}

void ClusterScheduler::upsert_node(const NodeState& incoming) {
  int slot = slot_of(incoming.id);
  // Its kind and GPU count before, for the victim candidates (-1: new, or not in a class).
  const int old_group =
      slot >= 0 && classes_.class_of(slot) >= 0 ? classes_.group_of_slot(slot) : -1;
  const size_t old_gpus = slot >= 0 ? nodes_[slot].state.gpus.size() : 0;
  const bool known = slot >= 0;
  if (slot < 0) {
    slot = static_cast<int>(nodes_.size());
    nodes_.push_back({});
    slot_jobs_.push_back(0);
    slot_by_id_.add(incoming.id, slot);
  }
  Node& n = nodes_[slot];
  NodeState state = incoming;
  state.cpu_used_milli = n.state.cpu_used_milli;
  state.memory_used_mib = n.state.memory_used_mib;
  for (auto& g : state.gpus) {
    g.used_milli = 0;
    g.used_memory_mib = 0;
    for (const auto& old : n.state.gpus)
      if (old.index == g.index)
        g.used_milli = old.used_milli, g.used_memory_mib = old.used_memory_mib;
  }
  n.state = std::move(state);
  n.present = true;
  reindex(slot);
  victims_changed(slot);  // (its GPUs may have changed)
  note_freed(slot);
  drop_reservation_on(slot);
  ++unending_freed_;
  // A new node, or one of the same kind and GPU count, is brought up to date in the victim
  // candidates like a node whose jobs changed; any other change finds them afresh (their
  // per-kind lists and per-GPU bounds would no longer hold).
  if (known && (old_group < 0 || old_group != classes_.group_of_slot(slot) ||
                old_gpus != nodes_[slot].state.gpus.size()))
    drop_victim_candidates();
  else
    log_victim_change(slot);
  capacity_dirty_ = true;  // totals, normalisers and zones: once, before the next pass
  capacity_changed_.push_back(slot);
  ++release_epoch_;
}

void ClusterScheduler::remove_node(const std::string& node_id) {
  int slot = slot_of(node_id);
  if (slot < 0 || !nodes_[slot].present) return;
  nodes_[slot].present = false;
  reindex(slot);
  victims_changed(slot);
  drop_reservation_on(slot);
  ++unending_freed_;
  log_victim_change(slot);  // no longer a candidate
  capacity_dirty_ = true;
  capacity_changed_.push_back(slot);
  ++release_epoch_;
}

void ClusterScheduler::set_tenants(const std::vector<TenantSpec>& tenants) {
  tenants_.configure(tenants);
  headroom_.clear();  // (cohorts may have changed)
  tenants_changed_ = true;
  decide_all_ = true;  // every quota may have changed
  drop_victim_candidates();
  node_victims_.clear();  // cohorts may have changed
  slot_reclaim_.clear();
  reclaim_envelopes_.clear();
  released_borrowed_slots_.clear();
  ++release_epoch_;
}

int ClusterScheduler::intern_shape(const JobRequest& req) {
  std::string key = shape_key(req);
  if (auto it = shape_by_key_.find(key); it != shape_by_key_.end()) return it->second;
  Shape s;
  s.req = req;
  s.req.replicas = 1;
  s.req.job_id.clear();
  s.pod = NodeScorer::pod_of(s.req);
  shapes_.push_back(std::move(s));
  int id = static_cast<int>(shapes_.size()) - 1;
  shape_by_key_.emplace(std::move(key), id);
  return id;
}

ClusterScheduler::Ranking& ClusterScheduler::refresh_ranking(int shape_id) {
  if (ranking_groups_ != classes_.static_groups()) {
    // New static groups: fit signatures, and so which shapes share a ranking, may change.
    rankings_.clear();
    ranking_by_key_.clear();
    for (auto& shape : shapes_) shape.ranking = -1;
    ranking_groups_ = classes_.static_groups();
  }
  Shape& shape = shapes_[shape_id];
  if (shape.ranking < 0) {
    const JobRequest& r = shape.req;
    std::string key = fmt::format("{}/{}/{}/{}/{}/{}", r.gpus, r.gpu_milli, r.cpu_milli,
                                  r.gpu_model, r.gpu_memory_mib, fit_signature(shape));
    auto [it, fresh] = ranking_by_key_.try_emplace(key, static_cast<int>(rankings_.size()));
    if (fresh) rankings_.push_back({.shape = shape_id});
    shape.ranking = it->second;
  }
  Ranking& ranking = rankings_[shape.ranking];
  const Shape& s = shapes_[ranking.shape];
  if (!ranking.started) {
    // A new (or reset) ranking: the classes with members now that may fit, found per static
    // group from those with the most GPUs (or milli) free down to the first with too few, so
    // that a cluster with little free ranks little; later activations come from the logs.
    ranking.started = true;
    const bool share = s.req.gpu_milli > 0;
    const int need = s.req.gpus == 0 ? 0 : share ? s.req.gpu_milli : s.req.gpus;
    for (int g = 0; g < static_cast<int>(classes_.static_groups()); ++g) {
      if (classes_.group_members(g) == 0 || !could_fit(shapes_[ranking.shape], g)) continue;
      for (const auto& [neg_free, c] :
           share ? classes_.group_by_free_milli(g) : classes_.group_by_free_gpus(g)) {
        if (-neg_free < need) break;  // fewer from here on
        if (may_fit(s, classes_.summary(c))) rank_class(ranking, c);
      }
    }
    for (int level = 0; level < NodeClassIndex::kCapacityLevels; ++level)
      ranking.cursors[level] = classes_.activation_end(level);
    return ranking;
  }
  // Most activations on a busy cluster cannot fit the shape: those at levels below what it
  // needs are not read, the others' summaries say so.
  for (int level = NodeClassIndex::least_capacity_level(s.req.gpus, s.req.gpu_milli);
       level < NodeClassIndex::kCapacityLevels; ++level) {
    const auto& log = classes_.activations(level);
    const uint64_t base = classes_.activation_base(level), end = base + log.size();
    // (A local cursor: rank_class takes the ranking, so one inside it would be read again
    // from memory at every entry.)
    uint64_t at = ranking.cursors[level];
    for (; at < end; ++at)
      if (const ClassSummary& a = log[at - base];
          !NodeClassIndex::emptied_since(a) && may_fit(s, a))
        rank_class(ranking, a.class_id);
    ranking.cursors[level] = at;
  }
  // Classes that emptied leave when a pick walks past them; once the set has doubled since they
  // were last dropped, drop them all, so that inserts search a set about the size of the fitting
  // classes alive (a class that gains a member again is ranked again from its activation).
  if (ranking.ranked.size() > 2 * ranking.kept + 16) {
    std::erase_if(ranking.ranked,
                  [&](const auto& e) { return classes_.member_count(e.second) == 0; });
    ranking.kept = ranking.ranked.size();
  }
  return ranking;
}

bool ClusterScheduler::may_fit(const Shape& s, const ClassSummary& a) const {
  if (static_cast<size_t>(a.static_group) < s.static_fit.size() &&
      s.static_fit[a.static_group] == 2)
    return false;
  const JobRequest& req = s.req;
  if (req.cpu_milli > a.cpu_free_milli) return false;
  if (req.gpus == 0) return true;
  return req.gpu_milli > 0 ? a.max_free_milli >= req.gpu_milli : a.free_gpus >= req.gpus;
}

bool ClusterScheduler::could_fit(Shape& s, int group) {
  if (s.static_fit.size() <= static_cast<size_t>(group)) {
    s.static_fit.resize(classes_.static_groups(), 0);
    s.all_match.resize(classes_.static_groups(), 0);
    s.match_mask.resize(classes_.static_groups(), 0);
  }
  int8_t& known = s.static_fit[group];
  if (known == 0) {
    const NodeClass& c = classes_.group_example(group);
    known = node_could_fit(s.req, c.state) ? 1 : 2;
    const uint64_t mask = sched::gpu_match_mask(s.req, c.state);
    s.match_mask[group] = mask;
    s.all_match[group] =
        c.state.gpus.size() <= 64 && std::popcount(mask) == static_cast<int>(c.state.gpus.size());
  }
  return known == 1;
}

bool ClusterScheduler::gpus_free_somewhere(Shape& s) {
  const JobRequest& req = s.req;
  if (req.gpus == 0) return true;
  for (int g = 0; g < static_cast<int>(classes_.static_groups()); ++g) {
    if (classes_.group_members(g) == 0 || !could_fit(s, classes_.group_example(g))) continue;
    if (!s.all_match[g]) return true;  // some GPUs do not match: the counts cannot tell
    const auto& by_free =
        req.gpu_milli > 0 ? classes_.group_by_free_milli(g) : classes_.group_by_free_gpus(g);
    int need = req.gpu_milli > 0 ? req.gpu_milli : req.gpus;
    if (!by_free.empty() && -by_free.begin()->first >= need) return true;
  }
  return false;
}

const std::vector<std::string>& ClusterScheduler::shape_models(Shape& s) {
  if (s.models_groups != classes_.static_groups()) {
    std::set<std::string> models;
    for (int g = 0; g < static_cast<int>(classes_.static_groups()); ++g)
      if (could_fit(s, classes_.group_example(g)))
        models.insert(classes_.group_example(g).gpu_model);
    s.models.assign(models.begin(), models.end());
    s.models_groups = classes_.static_groups();
  }
  return s.models;
}

uint64_t ClusterScheduler::gpu_match_mask(Shape& s, int group) {
  could_fit(s, group);
  return s.match_mask[group];
}

int ClusterScheduler::fit_signature(Shape& s) {
  if (s.signature_groups != classes_.static_groups()) {
    std::string bits;
    for (int g = 0; g < static_cast<int>(classes_.static_groups()); ++g)
      bits += could_fit(s, classes_.group_example(g)) ? '1' : '0';
    auto [it, fresh] = fit_signatures_.try_emplace(bits, static_cast<int>(fit_signatures_.size()));
    if (fresh) signature_bits_.push_back(bits);
    s.fit_signature = it->second;
    s.signature_groups = classes_.static_groups();
  }
  return s.fit_signature;
}

void ClusterScheduler::rank_class(Ranking& ranking, int c) {
  if (classes_.member_count(c) == 0) return;  // logged again when it gains a member
  Shape& s = shapes_[ranking.shape];
  const NodeClass& nc = classes_.get(c);
  if (!could_fit(s, nc) || s.req.cpu_milli > nc.state.cpu_milli - nc.state.cpu_used_milli) return;
  const uint64_t match_mask = gpu_match_mask(s, nc);
  if (!gpus_fit(s.req, nc.state, match_mask)) return;
  // A class ranked before scores the same again: the set keeps it once.
  ranking.ranked.insert({scorer_.score(nc, s.req, s.pod, match_mask), c});
}

int ClusterScheduler::intern_tenant(const std::string& name) {
  auto [it, fresh] = tenant_ids_.try_emplace(name, static_cast<int>(tenant_ids_.size()));
  if (fresh) tenant_names_.push_back(name);
  return it->second;
}

ClusterScheduler::RunningJob& ClusterScheduler::add_running(RunningJob job) {
  job.seq = next_running_seq_++;
  job.tenant = intern_tenant(job.req.tenant);
  std::string id = job.req.job_id;
  RunningJob& r = running_.emplace(std::move(id), std::move(job)).first->second;
  if (r.expected_end != kNever) {
    ends_of(r).emplace(std::pair{r.expected_end, r.req.job_id},
                       RunningEnd{&r, r.replicas.size() == 1 ? r.replicas[0].first : -1});
    ++ends_count_;
  }
  for (const auto& [slot, rp] : r.replicas) {
    if (nodes_[slot].jobs.emplace(r.seq, &r).second) {
      ++slot_jobs_[slot];
      victims_changed(slot, &r);
    }
    slot_changed(slot);  // its running jobs changed (victims_on)
    // A job placed in this pass may not be preempted in it, and within the pass the victim
    // candidates' bounds may be higher than what is free: its nodes are logged at the next
    // pass. A job the caller started may be a victim at once.
    if (r.placed_pass == pass_ && pass_ > 0)
      placed_slots_.push_back(slot);
    else
      log_victim_change(slot);
  }
  index_running(r, true);
  new_running_.push_back({r.req.priority, r.seq});
  return r;
}

void ClusterScheduler::index_running(const RunningJob& r, bool add) {
  auto key = std::make_pair(r.req.priority, r.seq);
  if (add) {
    by_priority_.emplace(key, &r);
    if (r.req.preemptible()) spot_running_.emplace(r.seq, &r);
    if (r.borrowed && borrowed_running_.emplace(r.seq, &r).second) {
      borrowed_added_.push_back(&r);
      count_borrowed(r, +1);
    }
  } else {
    by_priority_.erase(key);
    spot_running_.erase(r.seq);
    if (borrowed_running_.erase(r.seq)) {
      count_borrowed(r, -1);
      ++borrowed_removals_;
      borrowed_added_.clear();
    }
  }
}

void ClusterScheduler::count_borrowed(const RunningJob& r, int sign) {
  for (size_t i = 0; i < r.replicas.size() && i < r.models.size(); ++i) {
    auto by_model = borrowed_slots_.try_emplace({r.req.tenant, r.models[i]}).first;
    auto& slots = by_model->second;
    if ((slots[r.replicas[i].first] += sign) <= 0) slots.erase(r.replicas[i].first);
    if (slots.empty()) borrowed_slots_.erase(by_model);
  }
}

void ClusterScheduler::maybe_refresh_profile() {
  if (!settings_.profile.empty()) return;
  if (policy_ != PlacementPolicy::kFgd && policy_ != PlacementPolicy::kDefault) return;
  if (profile_submissions_ < profile_built_at_ + profile_built_at_ / 4 + 16) return;
  profile_built_at_ = profile_submissions_;
  std::vector<std::pair<int, std::tuple<int, int, int64_t>>> by_count;
  for (const auto& [shape, count] : shape_counts_) by_count.push_back({-count, shape});
  std::sort(by_count.begin(), by_count.end());
  WorkloadProfile profile;
  double covered = 0, total = static_cast<double>(profile_submissions_);
  for (const auto& [neg, shape] : by_count) {
    if (covered >= 0.95 * total) break;
    auto [gpus, milli, cpu] = shape;
    profile.types.push_back({cpu, gpus, milli, 0, -neg / total, -neg});
    covered += -neg;
  }
  for (auto& t : profile.types) t.freq = t.freq * total / covered;
  scorer_.set_profile(std::move(profile));
  reset_rankings();
}

Status ClusterScheduler::submit(const JobRequest& job) {
  if (auto st = validate(job); !st.ok()) return st;
  if (las_ && std::abs(job.priority) > kMaxLasPriority)
    return invalid_request(fmt::format("priority: {} is outside ±{}, which queue policy las needs",
                                       job.priority, kMaxLasPriority));
  if (pending_.count(job.job_id) || running_.count(job.job_id))
    return invalid_request(fmt::format("job {} is already known to the scheduler", job.job_id));
  PendingJob p;
  p.req = job;
  p.shape = intern_shape(job);
  p.tenant = intern_tenant(job.tenant);
  p.seq = next_seq_++;
  {
    QueueKey prefix;
    prefix.set_id_prefix(job.job_id);
    p.id_high = prefix.id_high;
    p.id_low = prefix.id_low;
  }
  p.base_priority = job.priority;
  // sjf: shortest declared runtime first; jobs that declare none after every job that does.
  if (settings_.queue_policy == "sjf")
    p.rank = job.expected_runtime_ms > 0 ? job.expected_runtime_ms
             : job.max_runtime_ms > 0    ? job.max_runtime_ms
                                         : std::numeric_limits<int64_t>::max();
  if (las_) las_enqueue(p);
  PendingJob& added = pending_.emplace(job.job_id, std::move(p)).first->second;
  undecided_.emplace(added.seq, &added);
  pending_by_seq_.emplace(added.seq, &added);
  index_waiting(added);
  ++shape_counts_[{job.gpus,
                   job.gpus == 0       ? 0
                   : job.gpu_milli > 0 ? job.gpu_milli
                                       : 1000,
                   job.cpu_milli}];
  ++profile_submissions_;
  return {};
}

void ClusterScheduler::apply_replica(int slot, const JobRequest& req, const ReplicaPlacement& rp,
                                     int sign) {
  Node& n = nodes_[slot];
  int64_t milli = 0;
  std::string model;
  for (const auto& share : rp.gpus) {
    milli += share.milli;
    for (const auto& g : n.state.gpus)
      if (g.index == share.index && model.empty()) model = g.model;
  }
  apply_replica_use(n.state, req, rp, sign);
  if (!rp.gpus.empty()) (req.gpu_milli > 0 ? n.share_jobs : n.whole_jobs) += sign;
  tenants_.charge(req.tenant, model, milli, rp.cpu_milli, rp.memory_mib, sign);
  reindex(slot);
}

Status ClusterScheduler::start(const JobRequest& job, const Placement& where, TimeMs started_at) {
  if (auto st = validate(job); !st.ok()) return st;
  if (las_ && std::abs(job.priority) > kMaxLasPriority)
    return invalid_request(fmt::format("priority: {} is outside ±{}, which queue policy las needs",
                                       job.priority, kMaxLasPriority));
  if (running_.count(job.job_id))
    return invalid_request(fmt::format("job {} is already running", job.job_id));
  for (const auto& rp : where.replicas)
    if (slot_of(rp.node_id) < 0)
      return invalid_request(
          fmt::format("job {}: replica {} is on unknown node {}", job.job_id, rp.rank, rp.node_id));
  erase_pending(job.job_id);
  clear_nomination(job.job_id);
  RunningJob r;
  r.req = job;
  r.base_priority = job.priority;
  r.started_at = started_at;
  if (las_) {
    auto d = las_discount_.find(job.job_id);
    r.las_level = las_level_of(job.attained_gpu_ms - (d == las_discount_.end() ? 0 : d->second));
    r.req.priority = las_priority(job.priority, r.las_level);
  }
  for (const auto& rp : where.replicas) {
    int slot = slot_of(rp.node_id);
    const auto& gpus = nodes_[slot].state.gpus;
    std::string model;
    for (const auto& g : gpus)
      if (!rp.gpus.empty() && g.index == rp.gpus[0].index) model = g.model;
    int64_t milli = 0;
    for (const auto& s : rp.gpus) milli += s.milli;
    if (milli > 0 && !tenants_.within_nominal(job.tenant, model, milli)) r.borrowed = true;
    apply_replica(slot, job, rp, +1);
    r.replicas.push_back({slot, rp});
    r.models.push_back(model);
  }
  if (job.max_runtime_ms > 0) r.expected_end = started_at + job.max_runtime_ms;
  las_track_running(add_running(std::move(r)));
  placed_last_pass_ = true;  // a new possible victim
  return {};
}

void ClusterScheduler::finish(const std::string& job_id) {
  if (erase_pending(job_id)) {
    las_discount_.erase(job_id);
    // The nodes it reserved or held for its preemption are free for others again.
    if (nominated_slots_.count(job_id) || (reservation_ && reservation_->job_id == job_id))
      ++release_epoch_;
    clear_nomination(job_id);
    return;
  }
  auto it = running_.find(job_id);
  if (it == running_.end()) return;
  RunningJob& r = it->second;
  for (size_t i = 0; i < r.replicas.size(); ++i) {
    const auto& [slot, rp] = r.replicas[i];
    int64_t milli = 0;
    for (const auto& share : rp.gpus) milli += share.milli;
    if (milli > 0 && i < r.models.size())
      note_quota_released(r.req.tenant, r.models[i], milli, true);
    apply_replica(slot, r.req, rp, -1);
    if (nodes_[slot].jobs.erase(r.seq) > 0) {
      --slot_jobs_[slot];
      victims_changed(slot, nullptr, &r);
    }
    slot_changed(slot);  // its running jobs changed (victims_on)
    log_victim_change(slot);
    note_freed(slot);
  }
  // Its tenant's quota, and what its cohort may lend, grew.
  if (tenants_.limited(r.req.tenant)) quota_freed_.insert(r.tenant);
  wake_cohort_quota(r.req.tenant);
  if (r.expected_end != kNever)
    ends_count_ -= ends_of(r).erase({r.expected_end, job_id});
  else
    ++unending_freed_;  // what no reservation could count on grew
  las_untrack_running(r);
  if (!r.preempting) las_discount_.erase(job_id);  // it leaves for good
  index_running(r, false);
  running_.erase(it);
  ++release_epoch_;
}

bool ClusterScheduler::erase_pending(const std::string& job_id) {
  auto it = pending_.find(job_id);
  if (it == pending_.end()) return false;
  if (reservation_ && reservation_->job_id == job_id) {
    // Its nodes are free for others again.
    for (int slot : reservation_->slots) note_freed(slot);
    clear_reservation();
  }
  undecided_.erase(it->second.seq);
  pending_by_seq_.erase(it->second.seq);
  if (it->second.starve_at != kNever) las_starving_.erase({it->second.starve_at, it->second.seq});
  unindex_waiting(it->second);
  pending_.erase(it);
  return true;
}

void ClusterScheduler::set_reason(PendingJob& job, const std::string& reason, Plan& plan) {
  if (reason == job.last_reason) return;  // (copied only when it changed)
  job.last_reason = reason;
  plan.pending.push_back({job.req.job_id, reason});
}

void ClusterScheduler::commit_placement(PendingJob& job, Placement placement, TimeMs now) {
  // The replicas are applied already (place() tries them on the live state); record the job.
  RunningJob r;
  r.req = job.req;
  r.base_priority = job.base_priority;
  r.las_level = job.las_level;
  r.started_at = now;
  r.placed_pass = pass_;
  for (auto& rp : placement.replicas) {
    int slot = slot_of(rp.node_id);
    std::string model;
    for (const auto& g : nodes_[slot].state.gpus)
      if (!rp.gpus.empty() && g.index == rp.gpus[0].index) model = g.model;
    if (!rp.gpus.empty() && tenants_.borrowing(job.req.tenant, model)) r.borrowed = true;
    r.models.push_back(model);
    r.replicas.push_back({slot, rp});
    if (slot_placed_pass_.size() < nodes_.size()) slot_placed_pass_.resize(nodes_.size(), 0);
    slot_placed_pass_[slot] = pass_;  // victim memos found in this pass leave the job out
  }
  if (job.req.max_runtime_ms > 0) r.expected_end = now + job.req.max_runtime_ms;
  clear_nomination(job.req.job_id);
  placed_last_pass_ = true;
  std::string id = job.req.job_id;
  las_track_running(add_running(std::move(r)));
  erase_pending(id);  // `job` is gone from here on
}

void ClusterScheduler::set_reservation(Reservation r) {
  ++wake_version_;
  if (reservation_)  // (replaced)
    for (int slot : reservation_->slots) {
      reserved_slot_[slot] = 0;
      hold_changed(slot);
    }
  reserved_slot_.assign(nodes_.size(), 0);
  for (int slot : r.slots) {
    reserved_slot_[slot] = 1;
    hold_changed(slot);
  }
  reservation_ = std::move(r);
  reset_wait_marks();  // waits are found for one reservation
}

void ClusterScheduler::drop_reservation_on(int slot) {
  if (!reservation_ || slot >= static_cast<int>(reserved_slot_.size()) || !reserved_slot_[slot])
    return;
  for (int s : reservation_->slots) note_freed(s);
  clear_reservation();
}

void ClusterScheduler::clear_reservation() {
  ++wake_version_;
  if (reservation_)
    for (int slot : reservation_->slots) {
      reserved_slot_[slot] = 0;
      hold_changed(slot);
    }
  reservation_.reset();
  reset_wait_marks();
}

void ClusterScheduler::nominate(const std::string& job_id, int priority,
                                const std::set<int>& slots) {
  ++wake_version_;
  if (nominees_by_slot_.size() < nodes_.size()) nominees_by_slot_.resize(nodes_.size());
  // The nodes of the option chosen now replace those held before: a gang's option includes the
  // nodes its earlier victims freed when it still needs them (they fit a replica without
  // victims), so others do not take them back; nodes it no longer needs are given back.
  clear_nomination(job_id);
  for (int slot : slots) {
    nominees_by_slot_[slot].push_back({priority, job_id});
    hold_changed(slot);
  }
  nominated_slots_[job_id].assign(slots.begin(), slots.end());
}

void ClusterScheduler::hold_reclaim(const PendingJob& job, const std::string& model) {
  int64_t per_replica = job.req.gpu_milli > 0 ? job.req.gpu_milli : int64_t{job.req.gpus} * 1000;
  int64_t milli = per_replica * job.req.replicas;
  release_reclaim_hold(job.req.job_id);
  tenants_.hold_reclaim(job.req.tenant, model, milli, +1);
  reclaim_holds_[job.req.job_id] = {job.req.tenant, model, milli};
}

void ClusterScheduler::wake_cohort_quota(const std::string& tenant) {
  if (const std::string& cohort = tenants_.cohort_of(tenant); !cohort.empty())
    for (const auto& [name, id] : tenant_ids_)
      if (tenants_.cohort_of(name) == cohort) quota_freed_.insert(id);
}

void ClusterScheduler::note_quota_released(const std::string& tenant, const std::string& model,
                                           int64_t milli, bool own_use) {
  const std::string& cohort = tenants_.cohort_of(tenant);
  if (!cohort.empty()) quota_released_[{cohort, model}] += milli;
  if (cohort.empty() || own_use) quota_released_[{"/" + tenant, model}] += milli;
}

void ClusterScheduler::release_reclaim_hold(const std::string& job_id) {
  auto hold = reclaim_holds_.find(job_id);
  if (hold == reclaim_holds_.end()) return;
  const auto& [tenant, model, milli] = hold->second;
  tenants_.hold_reclaim(tenant, model, milli, -1);
  note_quota_released(tenant, model, milli, false);
  wake_cohort_quota(tenant);  // its members' jobs that wait to borrow may start
  reclaim_holds_.erase(hold);
}

void ClusterScheduler::clear_nomination(const std::string& job_id) {
  release_reclaim_hold(job_id);
  auto it = nominated_slots_.find(job_id);
  if (it == nominated_slots_.end()) return;
  ++wake_version_;
  for (int slot : it->second) {
    std::erase_if(nominees_by_slot_[slot], [&](const auto& n) { return n.second == job_id; });
    hold_changed(slot);
    note_freed(slot);
    wake_in_pass(slot);  // jobs after it in queue order may use the node in this pass
  }
  nominated_slots_.erase(it);
}

Plan ClusterScheduler::schedule(TimeMs now) {
  stats_ = {};
  StatTimer total(stats_.total_ns);
  if (capacity_dirty_) {
    update_capacity();
    capacity_dirty_ = false;
  }
  maybe_refresh_profile();
  ++pass_;
  pass_now_ = now;
  trim_activation_logs();
  reset_wait_marks();       // marked again as jobs wait in this pass
  changed_slots_.clear();   // reclaim envelopes begin again in each pass
  borrowed_added_.clear();  // and so the released borrowed slots
  ++changed_slots_epoch_;
  Plan plan;
  if (las_) las_step(now);
  if (waiting_groups_ != classes_.static_groups()) rebuild_waiting();
  // What wakes jobs in this pass; what this pass frees or starts wakes jobs in the next.
  wake_slots_.swap(freed_slots_);
  freed_slots_.clear();
  for (int slot : wake_slots_) slot_freed_[slot] = 0;
  wake_quota_.swap(quota_freed_);
  quota_freed_.clear();
  wake_released_.swap(quota_released_);
  quota_released_.clear();
  wake_victims_.swap(new_running_);
  new_running_.clear();
  for (auto& [tenant, caps] : wake_caps_) caps.valid = caps.queries_valid = false;  // (kept room)
  sources_started_ = false;  // found at the first wake-up query of the pass
  shared_valid_ = false;
  // Jobs placed in the last pass (or started since) may be preempted from now on: the jobs
  // that may preempt them are decided again.
  bool full = release_epoch_ != pass_epoch_ || placed_last_pass_;
  std::vector<PendingJob*> reconsider;
  if (full) {
    pass_epoch_ = release_epoch_;
    if (!settings_.wake_ups || decide_all_) {
      clear_reservation();  // made again in this pass, by the first job that waits
    } else if (reservation_ && reservation_->start <= now) {
      // Its start has come: the holder competes for its nodes in queue order like any job.
      for (int slot : reservation_->slots)
        if (!std::count(wake_slots_.begin(), wake_slots_.end(), slot)) wake_slots_.push_back(slot);
      clear_reservation();
    } else if (reservation_) {
      // Kept until its holder starts or leaves the queue, or one of its nodes changes. The
      // holder is decided again when one of its nodes freed something (it is woken like any
      // other job where it fits elsewhere).
      bool freed = std::any_of(
          reservation_->slots.begin(), reservation_->slots.end(),
          [&](int slot) { return std::count(wake_slots_.begin(), wake_slots_.end(), slot); });
      // Or a job started on one of them that it may preempt (the preemption wake-ups of a
      // reserved node admit only jobs that end before the reservation).
      for (const auto& [priority, seq] : wake_victims_)
        if (auto v = by_priority_.find({priority, seq}); v != by_priority_.end())
          for (const auto& [slot, rp] : v->second->replicas)
            freed |= slot < static_cast<int>(reserved_slot_.size()) && reserved_slot_[slot];
      if (auto it = pending_.find(reservation_->job_id); it != pending_.end() && freed)
        reconsider.push_back(&it->second);
    }
    failed_shapes_.clear();
    failed_reserves_.clear();
    resource_reasons_.clear();
    // Searches that found no victims, the waits that followed, and the victim candidates are
    // stale.
    waits_.clear();
    failed_preemptions_.clear();
    failed_preemption_sizes_.clear();
    ++victim_epoch_;
    borrowers_.clear();
    reclaimable_.clear();
    // Victim memos are kept while their nodes are as they were (victims_on), within bounds.
    if (victim_memo_entries_ > kMaxVictimMemos) {
      victim_memo_.clear();
      victim_memo_entries_ = 0;
    }
  }
  placed_last_pass_ = false;
  // Jobs placed in the last pass may be victims from now on.
  for (int slot : placed_slots_) log_victim_change(slot);
  placed_slots_.clear();
  trim_victim_log();  // also when no search has read the log for a while
  if (tenants_changed_) {
    tenants_changed_ = false;
    rederive_borrowed();
    if (settings_.preemption) reclaim_over_limit(plan);
  }
  // Preemptors first: the nodes held for them are theirs, and once their victims are gone
  // they start on them at once (instead of every job before them in the queue walking over
  // the held nodes). Priority, then age.
  std::vector<PendingJob*> preemptors;
  if (full)
    for (const auto& [id, slots] : nominated_slots_)
      if (auto it = pending_.find(id); it != pending_.end()) preemptors.push_back(&it->second);
  std::sort(preemptors.begin(), preemptors.end(),
            [](const PendingJob* a, const PendingJob* b) { return a->key() < b->key(); });
  std::set<std::string> decided;  // preemptors decided above and still pending
  for (PendingJob* job : preemptors) {
    std::string id = job->req.job_id;
    decide(*job, now, plan, full);  // `job` is gone if it was placed
    if (pending_.count(id)) decided.insert(id);
  }
  if (settings_.wake_ups && !decide_all_) {
    std::erase_if(reconsider, [&](PendingJob* job) { return decided.count(job->req.job_id) > 0; });
    decide_woken(now, plan, full, std::move(reconsider));
  } else if (full || decide_all_) {
    decide_all(now, plan, decided);
  } else {
    decide_woken(now, plan, false, {});  // new jobs only
  }
  decide_all_ = false;
  undecided_.clear();
  stats_.activations_kept = static_cast<int64_t>(classes_.activation_count());
  return plan;
}

void ClusterScheduler::decide_all(TimeMs now, Plan& plan, const std::set<std::string>& decided) {
  // Each tenant's jobs by priority then age; tenants by weighted dominant share.
  std::map<std::string, std::vector<PendingJob*>> queues;
  for (auto& [id, job] : pending_)
    if (!decided.count(id)) queues[job.req.tenant].push_back(&job);
  using Entry = std::tuple<double, std::string, size_t>;  // share, tenant, next index
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> tenants;
  for (auto& [tenant, jobs] : queues) {
    std::sort(jobs.begin(), jobs.end(),
              [](const PendingJob* a, const PendingJob* b) { return a->key() < b->key(); });
    tenants.push({tenants_.dominant_share(tenant), tenant, 0});
  }
  while (!tenants.empty()) {
    auto [share, tenant, index] = tenants.top();
    tenants.pop();
    auto& jobs = queues[tenant];
    decide(*jobs[index], now, plan, true);
    if (index + 1 < jobs.size()) tenants.push({tenants_.dominant_share(tenant), tenant, index + 1});
  }
}

}  // namespace gpucloud::sched
