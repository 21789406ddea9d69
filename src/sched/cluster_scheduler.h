// ClusterScheduler: the production Scheduler. It keeps nodes in state classes (node_classes.h),
// ranked lists of fitting classes shared by request shapes that differ only in memory, tenants'
// quota and use (tenant_book.h), running jobs by expected end, and the pending queue per
// tenant. A pass orders tenants by weighted dominant share (then each tenant's jobs by priority,
// then age), places jobs, gangs all or nothing (one node, then one zone, then anywhere),
// reserves the earliest start for the first job that cannot start and backfills around it
// (EASY), and preempts the smallest set of lower-priority, spot or borrowing jobs when that lets
// a job start. Passes after which nothing was freed, placed or started decide only the jobs
// submitted since.
#pragma once

#include <array>
#include <boost/container/small_vector.hpp>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "sched/fit.h"
#include "sched/node_classes.h"
#include "sched/node_scoring.h"
#include "sched/node_slots.h"
#include "sched/policies/seeded_rng.h"
#include "sched/scheduler.h"
#include "sched/tenant_book.h"
#include "sched/wait_index.h"

namespace gpucloud::sched {

/// Adds the wall-clock time of its scope to a PassStats field.
class StatTimer {
 public:
  explicit StatTimer(int64_t& ns) : ns_(ns), start_(std::chrono::steady_clock::now()) {}
  ~StatTimer() {
    ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start_)
               .count();
  }
  StatTimer(const StatTimer&) = delete;
  StatTimer& operator=(const StatTimer&) = delete;

 private:
  int64_t& ns_;
  std::chrono::steady_clock::time_point start_;
};

/// "~40 min", "~2.5 h", "~30 s": a wait, for pending reasons.
std::string format_wait(TimeMs ms);

/// The production scheduler (see the top of this file).
class ClusterScheduler final : public Scheduler {
 public:
  ClusterScheduler(PlacementPolicy policy, PolicySettings settings);

  std::string name() const override { return settings_.policy; }
  void upsert_node(const NodeState& node) override;
  void remove_node(const std::string& node_id) override;
  void set_tenants(const std::vector<TenantSpec>& tenants) override;
  Status submit(const JobRequest& job) override;
  Status start(const JobRequest& job, const Placement& where, TimeMs started_at) override;
  void finish(const std::string& job_id) override;
  Plan schedule(TimeMs now) override;
  std::optional<TimeMs> next_timed_decision() const override;
  PassStats last_pass() const override { return stats_; }
  size_t pending_count() const override { return pending_.size(); }
  size_t running_count() const override { return running_.size(); }
  std::vector<TenantUsage> tenant_usage() const override { return tenants_.usage(); }

 private:
  static constexpr TimeMs kNever = std::numeric_limits<TimeMs>::max();

  struct RunningJob;
  struct Node {
    NodeState state;  // with current use
    bool present = true;
    int share_jobs = 0, whole_jobs = 0;
    std::map<uint64_t, const RunningJob*> jobs;  // running jobs with a replica here, by seq
  };
  struct Shape {
    JobRequest req;  // one replica
    PodRequest pod;
    int ranking = -1;                  // into rankings_ (-1: not found yet)
    std::vector<int8_t> static_fit;    // per static group: 0 unknown, 1 node_could_fit, 2 not
    std::vector<int8_t> all_match;     // per static group (when it fits): every GPU matches
    std::vector<uint64_t> match_mask;  // per static group: the GPU positions that match
    std::vector<std::string> models;   // GPU models of the static groups it could run on
    size_t models_groups = 0;          // static groups when `models` was found
    int fit_signature = -1;            // the set of static groups it could fit, interned
    size_t signature_groups = 0;       // static groups when fit_signature was found
  };
  // The classes that fit the shapes of one (GPUs, GPU milli, CPUs, GPU models, GPU memory, fit
  // signature), ranked by score. Their shapes differ only in memory (which no score reads) and
  // in what decides nothing here (replicas); each skips the classes with too little memory
  // free for it. Static fit, matching GPUs and scores are those of any of them.
  struct Ranking {
    int shape = 0;  // the first of its shapes
    // Classes that fit, best first (ties: newer class); some may have emptied since.
    using Ranked = std::set<std::pair<NodeScore, int>, std::greater<>>;
    Ranked ranked;
    bool started = false;  // it has read the classes active when it started
    // Into NodeClassIndex::activations(level), for the levels its shape may fit (counted from
    // the start of each log: NodeClassIndex::activation_base).
    std::array<uint64_t, NodeClassIndex::kCapacityLevels> cursors{};
    size_t kept = 0;  // entries when those of emptied classes were last dropped
  };
  struct PendingJob {
    JobRequest req;
    int shape = 0;
    int tenant = 0;    // the tenant's name interned (tenant_ids_), for memo keys
    uint64_t seq = 0;  // submission order, for decisions of new jobs only
    std::string last_reason;
    std::vector<std::string> victims;  // preempted for this job and still running
    int signature = -1;                // its partition in waiting_ (-1: not indexed)
    int wait_class = -1;               // its wait class in waiting_ (wait_class_of)
    bool had_victims = false;          // it chose victims once: never of a wait class
    uint64_t decided_pass = 0;         // the last pass that decided it
    int64_t rank = 0;                  // QueueKey::rank under the queue policy
    int base_priority = 0;             // the caller's priority (req.priority is las-adjusted)
    int las_level = 0;                 // las: 0 = least service; else 0
    TimeMs starve_at = kNever;         // las: when the starvation guard promotes it
    QueueKey key() const {
      return {req.priority, rank, req.created_at, &req.job_id, id_high, id_low};
    }
    uint64_t id_high = 0, id_low = 0;  // QueueKey's prefix of the job id, set at submit
  };
  struct RunningJob {
    JobRequest req;
    std::vector<std::pair<int, ReplicaPlacement>> replicas;  // slot, placement
    std::vector<std::string> models;                         // per replica, charged model
    TimeMs started_at = 0;
    TimeMs expected_end = kNever;
    bool borrowed = false;     // started above its tenant's nominal quota
    bool preempting = false;   // chosen as a victim, not finished yet
    uint64_t placed_pass = 0;  // the pass that placed it (0: started by the caller)
    uint64_t seq = 0;          // start order: the key of the indexes below
    int tenant = 0;            // req.tenant interned (tenant_ids_)
    int base_priority = 0;     // the caller's priority (req.priority is las-adjusted)
    int las_level = 0;
    TimeMs las_crossing = kNever;  // las: when it reaches the next level's threshold
  };
  // A running job's declared end (see ends_by_group_), with the node of its only replica (-1
  // for a gang).
  struct RunningEnd {
    const RunningJob* job = nullptr;
    int only_slot = -1;
  };
  using Ends = std::map<std::pair<TimeMs, std::string>, RunningEnd>;
  // Nodes where running jobs may be preemptible for jobs of one (priority, spot, cohort), with
  // what each would have free at most if all of those jobs stopped (upper bounds while kept).
  // Kept across passes: the nodes in victim_log_ since `log_cursor` are brought up to date at
  // the key's first use in each victim epoch (see victim_epoch_). Per-node vectors are by slot.
  static constexpr int64_t kNoVictim = std::numeric_limits<int64_t>::max();
  struct VictimCandidates {
    // Per static group: its candidates, and some slots that no longer are (unordered).
    std::vector<std::vector<int>> group_slots;
    std::vector<char> listed;  // the slot is in group_slots
    std::vector<char> member;  // the slot is a candidate
    std::vector<int64_t> cpu_free, memory_free;
    std::vector<int64_t> least_victim;  // the GPU milli of the smallest possible victim there
    // Where one possible victim alone would do: the most milli one GPU has free or would have
    // with one possible victim gone, and the GPU milli of the smallest possible victim whose
    // going leaves a whole GPU free (kNoVictim: none).
    std::vector<int32_t> single_free;
    std::vector<int64_t> single_whole;
    // For GPU shares: per slot, steps (most milli one GPU would have free with the victim gone,
    // the GPU milli of the smallest such victim), that milli falling and that size falling; a
    // share of m needs a single victim at least as large as the last step's with at least m
    // (kSingleSteps at most: where there are more, the last holds the smallest size, so it
    // stays a lower bound).
    static constexpr size_t kSingleSteps = 4;
    struct SingleStep {
      int32_t alone_milli = 0;
      int64_t victim_milli = 0;
    };
    std::vector<std::array<SingleStep, kSingleSteps>> single_steps;
    std::vector<uint8_t> single_step_count;
    std::vector<int32_t> gpu_free;  // milli per GPU position, flat: gpu_offset[slot] ...
    std::vector<size_t> gpu_offset;
    std::tuple<int, bool, std::string> key;  // its VictimKey
    int cohort = -1;                         // the key's cohort, interned (cohort_id)
    size_t log_cursor = 0;                   // into victim_log_
    uint64_t epoch = 0;                      // victim_epoch_ when brought up to date
    size_t listed_count = 0;                 // slots in group_slots
    size_t not_members = 0;                  // listed slots that are no longer candidates
    // Requests for which no candidate could free enough (by the bounds), by what decides which
    // nodes and GPUs they match (fit signature, GPU models, GPU memory): their sizes (GPU milli
    // needed on a GPU, GPUs, CPUs, memory). A request at least as large in each finds none
    // either until the candidates are brought up to date (bounds only shrink in between).
    std::map<std::tuple<int, std::string, int64_t>, std::vector<std::array<int64_t, 4>>>
        nothing_freeable;
  };
  // At most the GPU milli of the smallest possible victim on the node whose going alone leaves
  // `milli` free on one GPU, by the single steps (0: none known).
  static int64_t least_single_share(const VictimCandidates& c, int slot, int64_t milli);
  struct VictimOption {
    std::vector<std::string> victims;  // empty: fits without preempting
    int64_t victim_gpu_milli = 0;
    int node_jobs = 0;  // running jobs on the node (fewer first among equal options)
    int slot = 0;
  };
  // Restrictions of one decision.
  struct Filter {
    const PendingJob* job = nullptr;
    TimeMs now = 0;
    const std::string* zone = nullptr;     // only nodes of this zone; nullptr: any
    bool skipped_quota = false;            // a fitting node was skipped for the tenant's quota
    bool skipped_reserved = false;         // ... or because it is reserved for another job
    bool ends_before_reservation = false;  // the job may use the reservation's nodes
    std::string quota_why;
    std::string quota_model;  // the GPU model of the first node skipped for quota
  };
  // Why jobs of one (shape, replicas, priority, ends before the reservation, tenant) wait, and
  // the reservation then: later such jobs wait for the same reason (valid for the epoch).
  using WaitKey = std::tuple<int, int, int, bool, int>;  // the tenant interned
  struct Wait {
    std::string reason;
    std::string reservation;  // the reserving job's id when the reason was found, or ""
    TimeMs now = 0;           // the pass's time then (reasons may say how long until ...)
  };
  struct Reservation {
    std::string job_id;
    TimeMs start = kNever;
    std::vector<int> slots;  // ascending
    std::string text;        // for jobs that wait behind it
  };

  // cluster_scheduler.cpp: events and the pass.
  int slot_of(const std::string& node_id) const;
  void reindex(int slot);
  void apply_replica(int slot, const JobRequest& req, const ReplicaPlacement& rp, int sign);
  int intern_shape(const JobRequest& req);
  // The shape's ranking, with the classes activated since it was last brought up to date.
  Ranking& refresh_ranking(int shape);
  void rank_class(Ranking& ranking, int class_id);
  // False when the class cannot fit one replica of the ranking's shapes (by its summary alone).
  bool may_fit(const Shape& shape, const ClassSummary& c) const;
  // Whether the shape's memory fits the class (which its ranking does not tell).
  bool memory_fits(const Shape& shape, int class_id) const {
    return shape.req.memory_mib <= classes_.summary(class_id).memory_free_mib;
  }
  // node_could_fit(shape's request, a node of the static group), remembered per group.
  bool could_fit(Shape& shape, int static_group);
  bool could_fit(Shape& shape, const NodeClass& c) { return could_fit(shape, c.static_group); }
  // could_fit for the node in the slot (which must be in a class).
  bool slot_could_fit(Shape& shape, int slot) {
    return could_fit(shape, classes_.group_of_slot(slot));
  }
  // An id for the set of static groups the shape could fit: equal ids, equal sets.
  int fit_signature(Shape& shape);
  // Adds the job to running_ and the indexes of running jobs; returns it there.
  RunningJob& add_running(RunningJob job);
  // Where the job's declared end is filed (ends_by_group_ or spanning_ends_).
  Ends& ends_of(const RunningJob& job);
  // Files the ends of the slot's jobs under its static group when that changed (reindex).
  void refile_ends(int slot);
  void index_running(const RunningJob& job, bool add);
  void maybe_refresh_profile();
  void update_capacity();
  void reset_rankings();
  // Once the node-class activation logs hold more than twice what they held after the last trim,
  // or the classes alive (and at least settings_.activations_kept_at_least), drops what every
  // ranking has read; a ranking that lags by more than kLagMadeAgain × the classes alive is made
  // again from them when next used. Rankings and so plans are as without it.
  void trim_activation_logs();
  // Reading a lag costs some 20 instructions per activation (most have emptied since), making a
  // ranking again one score per fitting class alive (thousands with `default`): only a lag of
  // a few hundred times the classes alive costs more to read.
  static constexpr uint64_t kLagMadeAgain = 256;
  size_t trim_activations_at_ = 0;  // activations kept that start the next trim
  void decide(PendingJob& job, TimeMs now, Plan& plan, bool full_pass);
  // Decides every pending job (the pass of a scheduler without wake-ups, and after a change of
  // tenants or of the kinds of nodes).
  void decide_all(TimeMs now, Plan& plan, const std::set<std::string>& decided);
  // Decides the jobs submitted since the last pass and those that may use what was freed since
  // (cluster_scheduler_wake.cpp).
  void decide_woken(TimeMs now, Plan& plan, bool full, std::vector<PendingJob*> reconsider);

  // cluster_scheduler_wake.cpp: the waiting jobs' index and what wakes them.
  WaitNeed wait_need(const PendingJob& job) const;
  // Whether decide() would give the job the reason a job of its WaitKey got in this pass.
  bool waits_now(const PendingJob& job, TimeMs now) const;
  // Whether a job declaring a runtime would end before the reservation's start, started now.
  bool ends_before_reservation(const JobRequest& req, TimeMs now) const;
  // Whether decide() would find the job (one replica, no preemption in progress) held back by
  // its quota on every GPU model it could run on while a node class fits it freely, with its
  // victim search known to find nothing (reclaiming quota lent, the only one it may run): it
  // would wait for quota. Returns that class (whose GPU model the reason names), or -1.
  int quota_wait_class(const PendingJob& job);
  // Decides such a job as decide() would, without trying to place it: it waits for the quota of
  // the class's GPU model.
  void wait_for_quota(PendingJob& job, int class_id, TimeMs now, Plan& plan);
  void index_waiting(PendingJob& job);
  void unindex_waiting(PendingJob& job);
  // The job's wait class: the jobs of its tenant with its shape, replicas and priority, which
  // (those ending before the reservation, or those not) wait whenever one of them does in a pass
  // (waits_now), unless they preempt (-1: asked about one by one).
  int wait_class_of(const PendingJob& job);
  // Forgets which classes wait (a pass begins, or the reservation changed).
  void reset_wait_marks();
  // Indexes every pending job again (the static groups, and so the fit signatures, changed).
  void rebuild_waiting();
  // Capacity freed on the node (a job ended, the node joined or changed, a hold ended).
  void note_freed(int slot);
  // A hold on the node ended within the pass (its preemptor started, or holds elsewhere now):
  // what it frees wakes jobs in this pass too, as a pass deciding every job would place them.
  void wake_in_pass(int slot);
  // What the tenant's quota still allows of the model, in GPU milli.
  int64_t quota_headroom(int tenant, const std::string& model);
  // The same for the GPU model of a static group.
  int64_t quota_headroom(int tenant, int group);
  // TenantBook::cohort_of the tenant, kept until set_tenants.
  const std::string& cohort_of_tenant(int tenant);
  // cohort_id of the tenant's cohort (-1: none), kept until set_tenants.
  int cohort_id_of_tenant(int tenant);
  // The tenant's interned id (tenant_ids_), interning a new name.
  int intern_tenant(const std::string& name);
  // headroom_'s entry of the tenant, emptied if its cohort changed since it was filled.
  struct TenantHeadroom;
  TenantHeadroom& tenant_headroom(int tenant);
  // Why the job's tenant may not take `milli` more of the model (TenantBook::allows).
  const std::string& quota_why(const PendingJob& job, const std::string& model, int64_t milli);
  // The first job of the tenant after `after`, in queue order, that the wake-ups of this pass
  // may let start (0: none), and before `listed` (the tenant's next job to decide whatever was
  // freed; nullptr: none) if that comes first. The jobs it meets before its answer that would
  // wait for quota (quota_wait_class) are decided meanwhile, in queue order (wait_for_quota).
  PendingJob* next_woken(int tenant, const QueueKey* after, TimeMs now, const QueueKey* listed,
                         Plan& plan);
  // The capacities the wake-ups of this pass offer the tenant now, per static group, with the
  // tenant's quota applied.
  const std::vector<std::vector<WaitCapacity>>& wake_caps(int tenant, TimeMs now);
  // The tenant's own wake-up capacities, as (static group, capacity): where its quota grew
  // (quota_grown), and where it may reclaim what its cohort lent. Kept while what they are
  // made of (free classes, reclaim envelope, quota) is as it was in this pass.
  struct OwnCaps {
    bool valid = false;
    std::vector<int64_t> inputs;  // what they were made of
    std::vector<std::pair<int, WaitCapacity>> caps;
  };
  const OwnCaps& own_caps(int tenant);
  // own_caps' working lists (kept: it runs at every wake-up query after a change).
  struct OwnCapsScratch {
    std::vector<int64_t> inputs;
    std::vector<std::tuple<int, int64_t, int64_t>> grown;
    std::vector<std::tuple<const std::string*, int64_t, int64_t>> quota;
  };
  OwnCapsScratch own_caps_scratch_;
  // Where the tenant's quota of the static group's GPU model grew since the last pass: what it
  // allows now and what it allowed then at most (so the jobs that ask the quota for more than
  // that and no more than this), if it limits jobs at all.
  std::optional<std::pair<int64_t, int64_t>> quota_grown(int tenant, int group);
  // What the tenant's pool (its cohort, or itself alone) released of the static group's GPU
  // model since the last pass (kNone: nothing), and the groups where it released some.
  int64_t pool_released(int tenant, int group);
  const std::vector<int>& released_groups(int tenant);
  // Empties what pool_released and released_groups keep at the first call of a pass.
  void start_released_pass();
  // Drops the capacities another one of the same static group admits every job of.
  static void drop_dominated(std::vector<std::pair<int, WaitCapacity>>& caps);
  // Merges the capacities of a static group that differ only in size (whole GPUs, GPU milli,
  // CPUs, memory) into one with the most of each: it admits every job one of them admits, and
  // some that none does (the GPUs of one node, the CPUs of another), which are decided and
  // wait, as any job a capacity admits by one dimension at a time. Queries then ask a few
  // capacities per group, not one per node and priority level.
  static void merge_sizes(std::vector<std::pair<int, WaitCapacity>>& caps);
  // What the static group's usable free GPUs offer any tenant, without quota (for own_caps: a
  // tenant whose quota grew).
  const std::vector<WaitCapacity>& free_classes(int group);
  // A wake-up capacity as a key: (static group, WaitCapacity's fields in order).
  using WakeCapKey = std::tuple<int, int32_t, int32_t, int64_t, int64_t, int64_t, int64_t, int, int,
                                int64_t, bool>;
  // The nodes whose capacity wakes jobs in this pass (freed ones, and those of new possible
  // victims), and what they offer any tenant, kept up to date as the pass changes them.
  void start_wake_sources();
  void refresh_wake_sources();
  // Quota changes (cluster_scheduler_quota.cpp), at the first pass after set_tenants.
  /// Marks as borrowed, per tenant and GPU model, its cheapest running jobs that cover its use
  /// above the nominal quota now in force, and clears the mark of the others: a lender of its
  /// cohort reclaims them as it reclaims any borrowed quota.
  void rederive_borrowed();
  /// Preempts, per tenant and GPU model, its cheapest running jobs (lowest priority, then
  /// smallest, then newest) that cover its use above its nominal quota plus borrowing limit.
  void reclaim_over_limit(Plan& plan);
  bool tenants_changed_ = false;  // set_tenants was called since the last pass

  void mark_source_dirty(int slot) {
    if (sources_started_ && sources_.count(slot)) dirty_sources_.push_back(slot);
  }
  // What the slot offers any tenant's jobs (no quota applied), as (static group, capacity):
  // what is free (with `free_too`) and, per priority level, what preempting would free.
  void preemption_caps(int slot, bool free_too, std::vector<std::pair<int, WaitCapacity>>& caps);
  // What a node has free as running jobs are taken off it (wake-up capacities).
  struct NodeFree {
    NodeFree(const Node& node, int slot);
    void release(const RunningJob& r);
    // What is free now, for jobs above `min_priority`, within `quota_milli` of quota.
    WaitCapacity capacity(int min_priority, int64_t quota_milli) const;
    const Node& node;
    int slot;
    boost::container::small_vector<int, 16> used;  // per GPU position
    int64_t cpu = 0, memory = 0;
  };
  // What a job of the tenant within its nominal quota may free on the slot where its cohort's
  // borrowers run (the jobs it outranks, and those borrowers that do not outrank it), per
  // priority threshold (see reclaim_levels), with no quota applied. Kept per (tenant, slot)
  // while the slot's version is as it was.
  struct ReclaimLevel {
    int priority = 0;
    WaitCapacity sizes;  // its GPUs, GPU milli, CPUs and memory
  };
  struct SlotReclaim {
    bool valid = false;
    uint64_t version = 0;  // slot_version_ when found
    uint64_t pass = 0;     // nonzero: valid in that pass only (a job placed in it runs there)
    int group = -1;        // the slot's static group
    std::vector<ReclaimLevel> levels;
  };
  const SlotReclaim& reclaim_levels(int tenant, int slot);
  // The tenant's reclaim_levels over the nodes where reclaiming is looked at (see own_caps),
  // merged per (static group, priority) by the most of each size. Kept through the pass: only
  // the nodes that changed, joined or left the set since are counted again.
  struct ReclaimEnvelope {
    bool valid = false;
    uint64_t pass = 0;
    uint64_t released_generation = 0;  // released_borrowed_slots' generation when counted
    size_t released_seen = 0;          // of its slots in order, those counted
    size_t sources_seen = 0;           // of sources_order_, those counted
    // (slot, slot_version_ when merged), by slot.
    std::vector<std::pair<int, uint64_t>> slots;
    size_t changes_seen = 0;     // changed_slots_ counted so far
    uint64_t changes_epoch = 0;  // changed_slots_epoch_ then
    uint64_t revision = 0;       // bumps when `merged` changes
    // ((group, priority), sizes), by key (few keys: searched linearly); `before` is the spare
    // a merge made again is compared with.
    std::vector<std::pair<std::pair<int, int>, WaitCapacity>> merged, before;
    // Per entry of `merged`, per size (whole GPUs, GPU milli, CPUs, memory): how many of the
    // nodes merged offer its most.
    std::vector<std::array<int, 4>> holders;
  };
  const ReclaimEnvelope& reclaim_envelope(int tenant);
  // The slots where members of the cohort borrow a GPU model whose use in the cohort fell
  // since the last pass (a lender may reclaim there, or needs to free less).
  // Found once per pass, then kept up to date from borrowed_added_ until a borrower leaves.
  struct BorrowedSlots {
    bool valid = false;
    uint64_t pass = 0, removals = 0;  // pass_ and borrowed_removals_ when found
    uint64_t generation = 0;          // bumps when found again (slots may have gone)
    size_t added_seen = 0;            // borrowed_added_ counted so far
    std::set<std::string> models;     // the models whose use in the cohort fell
    std::set<int> slots;
    std::vector<int> order;  // `slots` in the order they were found
  };
  const BorrowedSlots& released_borrowed_slots(const std::string& cohort);
  void set_reason(PendingJob& job, const std::string& reason, Plan& plan);
  // set_reason for a job that waits, remembered for the jobs with the same key.
  void set_wait(PendingJob& job, const WaitKey& key, const std::string& reason, TimeMs now,
                Plan& plan);
  void commit_placement(PendingJob& job, Placement placement, TimeMs now);
  // Removes the job from the queue; false if it was not pending.
  bool erase_pending(const std::string& job_id);
  void set_reservation(Reservation r);
  void clear_reservation();
  // The node changed or left: a reservation holding it is made again.
  void drop_reservation_on(int slot);
  // Holds the nodes for a preemptor until it starts (or leaves the queue).
  void nominate(const std::string& job_id, int priority, const std::set<int>& slots);
  void clear_nomination(const std::string& job_id);
  // Holds the quota the job reclaims of the model (instead of what it held before), until
  // release_reclaim_hold (clear_nomination: the job starts or leaves).
  void hold_reclaim(const PendingJob& job, const std::string& model);
  void release_reclaim_hold(const std::string& job_id);
  // What the tenant's cohort may lend grew: the next pass wakes its members' jobs that the quota
  // may have held back.
  void wake_cohort_quota(const std::string& tenant);
  // Quota of the model that the tenant released (milli): its quota, and what its cohort may
  // lend, grew by at most that much in all; with `own_use`, its own use fell by that much (a
  // job of its ended; else a hold of quota it reclaims did).
  void note_quota_released(const std::string& tenant, const std::string& model, int64_t milli,
                           bool own_use);
  // What the tenant's jobs may ask of the model's quota and start: what the quota allows
  // (borrowing included), or its unused nominal quota where the cohort lent it (reclaiming).
  int64_t quota_reach(int tenant, const std::string& model);

  // cluster_scheduler_las.cpp: queue policy las (least attained service).
  // The level of a job that received this much service (GPU-ms) since its last promotion.
  int las_level_of(int64_t service_gpu_ms) const;
  // The priority the scheduler works with: levels are steps below the caller's priority.
  int las_priority(int base_priority, int level) const;
  // Sets a job's level and working priority from its service so far (at submit).
  void las_enqueue(PendingJob& job);
  // A job started: its level, working priority and the time of its next level crossing.
  void las_track_running(RunningJob& r);
  void las_untrack_running(const RunningJob& r);
  // At the start of a pass: running jobs whose service crossed a threshold drop a level (and
  // become possible victims of jobs of higher levels); starving jobs go back to level 0.
  void las_step(TimeMs now);
  // "priority 100" or, under las, "priority 100, service level 1 of 3".
  std::string priority_text(int base_priority, int level) const;

  // cluster_scheduler_place.cpp: placing one job.
  bool node_usable(int slot, Filter& f) const;
  std::optional<std::pair<int, GpuChoice>> pick_node(int shape, Filter& f);
  // Visits the ranking's classes that have members, best first, dropping those that emptied,
  // until `visit(class)` returns true; whether it did.
  template <typename Visit>
  bool visit_live_classes(Ranking::Ranked& ranked, Visit&& visit) {
    for (auto it = ranked.begin(); it != ranked.end();) {
      const NodeClass& c = classes_.get(it->second);
      if (c.members.empty()) {
        it = ranked.erase(it);
        continue;
      }
      ++it;
      if (visit(c)) return true;
    }
    return false;
  }
  // The best-ranked class with members whose memory fits the shape (-1: none), dropping the
  // emptied classes it walks past: where pick_node finds the job held back by its quota when
  // the quota allows none of the shape's GPU models.
  int first_fitting_class(const Shape& shape, Ranking::Ranked& ranked);
  std::optional<Placement> place(const PendingJob& job, TimeMs now, Filter& f);
  std::optional<Placement> place_gang(const PendingJob& job, TimeMs now, Filter& f);
  std::optional<Placement> place_replicas(const PendingJob& job, int shape, Filter& f);
  void release_trial(const JobRequest& req, const Placement& trial);

  // cluster_scheduler_reasons.cpp: why a job waits.
  std::string resource_reason(const PendingJob& job);

  // cluster_scheduler_backfill.cpp: EASY reservations.
  std::optional<Reservation> reserve(const PendingJob& job, TimeMs now);
  // `never` is set when the job would not fit even were every job with a declared end gone.
  std::optional<Reservation> find_reservation(const PendingJob& job, TimeMs now, bool* never);

  // cluster_scheduler_preempt.cpp: choosing victims.
  bool may_preempt(const PendingJob& job, const RunningJob& victim) const;
  bool may_reclaim(const PendingJob& job, const RunningJob& victim) const;
  // Whether the node is held for another preemptor the job may not take it from (see
  // node_usable).
  bool held_against(const PendingJob& job, int slot) const;
  // Whether the job may preempt the victim only as a lender reclaiming its quota (not by
  // priority or for spot capacity).
  bool reclaims_only(const PendingJob& job, const RunningJob& victim) const;
  std::optional<VictimOption> node_victims(const PendingJob& job, const JobRequest& request,
                                           int slot) const;
  struct VictimMemo;
  using VictimMemos = std::unordered_map<int, VictimMemo>;  // by slot
  // The job's victim_memo_ entry for a request of the shape (one replica, or a gang whole).
  VictimMemos& victim_memos(const PendingJob& job, int shape);
  // node_victims through the job's memos (victim_memos for the request's shape).
  const std::optional<VictimOption>& victims_on(const PendingJob& job, const JobRequest& request,
                                                VictimMemos& memos, int slot);
  // `fits_freely` (if given) is set when a node fits the job without preempting anything.
  // Nodes held for another preemptor the job may not take, or reserved for another job when
  // the job does not end before the reservation (`ends_before_reservation`), are left out: it
  // could not start there.
  // `nodes` gets the nodes of the chosen option (a gang's include those its replicas fit on
  // without victims), which are held for the job while its victims stop.
  std::optional<std::vector<std::string>> choose_victims(const PendingJob& job,
                                                         bool ends_before_reservation,
                                                         std::set<int>* nodes,
                                                         bool* fits_freely = nullptr);
  // The borrowers to preempt so that the job's tenant gets back the quota it lent, and the GPU
  // model it reclaims.
  // The running jobs of the cohort that borrow the model, cheapest victim first (lowest
  // priority first; cached in borrowers_).
  const std::vector<const RunningJob*>& cohort_borrowers(const std::string& cohort,
                                                         const std::string& model);
  // What free capacity of the model offers the tenant's jobs that only reclaiming quota its
  // cohort borrows could let start: per priority of those borrowers, `free` for its jobs of at
  // least that priority asking more than its quota allows now and no more than reclaiming the
  // borrowers up to that priority would make room for.
  // `quota`: what the tenant's quota allows of the model, and its reach (quota_reach).
  struct ModelQuota {
    int64_t allowed = -1, reach = -1;
  };
  // What reclaim_bands reads of the tenant, its cohort and the model: found once per model.
  struct ReclaimRoom {
    int64_t room = 0;  // TenantBook::cohort_room
    const std::vector<std::pair<int, int64_t>>* reclaimable = nullptr;
  };
  ReclaimRoom reclaim_room(int tenant, const std::string& model);
  void reclaim_bands(const ModelQuota& quota, const ReclaimRoom& room, const WaitCapacity& free,
                     std::vector<WaitCapacity>& out);
  // wake_caps' working lists: per static group, its model's quota and the index of its reclaim
  // room (-1: not asked yet); the reclaim rooms, by model.
  std::vector<std::pair<ModelQuota, int>> group_quota_scratch_;
  std::vector<std::pair<const std::string*, ReclaimRoom>> reclaim_room_scratch_;
  // Per priority of the cohort's borrowers of the model (ascending), the GPU milli a lender of
  // at least that priority could reclaim (borrowers whose tenant still borrows, not preempted);
  // kept while the pass, the use of the cohort's members and the victims chosen are unchanged.
  const std::vector<std::pair<int, int64_t>>& reclaimable(const std::string& cohort,
                                                          const std::string& model);
  std::optional<std::vector<std::string>> choose_reclaim_victims(const PendingJob& job,
                                                                 std::string* reclaimed_model);
  // Whether a reclaim search for the job is known to find too little (failed_reclaims_), and
  // the memo's key for it.
  bool reclaim_known_to_fail(const PendingJob& job);
  std::tuple<int, int, int, bool, int64_t> failed_reclaim_key(const PendingJob& job);
  // Reclaim searches that found too little, per cohort by (tenant, fit signature, priority,
  // spot, GPU milli): another such job finds too little too while its cohort's use and the
  // borrowing jobs are as they were in this pass (victims chosen since only take borrowers
  // away).
  struct FailedReclaims {
    std::tuple<uint64_t, uint64_t, size_t, uint64_t> state{};  // pass, use, borrowers
    std::set<std::tuple<int, int, int, bool, int64_t>> keys;
  };
  std::map<std::string, FailedReclaims, std::less<>> failed_reclaims_;
  // The nodes where some running job may be preemptible for the job (a superset: may_preempt
  // decides per node); found once per (priority, spot, cohort) while nothing changes.
  VictimCandidates& victim_slots(const PendingJob& job);
  // (priority, spot, cohort) of the jobs whose victim candidates victim_slots_ holds.
  using VictimKey = std::tuple<int, bool, std::string>;
  // What a running job on a node would free there were it preempted, and what decides for
  // whom it may be a victim: read by every key's candidates (bound_candidate) instead of the
  // jobs themselves.
  struct NodeVictim {
    uint64_t seq = 0;  // the job's (RunningJob::seq)
    int priority = 0;
    bool spot = false, borrowed = false, preempting = false;
    int cohort = -1;  // its tenant's cohort, interned (cohort_id); -1: none
    uint64_t placed_pass = 0;
    int64_t job_gpu_milli = 0;                                            // of all its replicas
    int64_t cpu_milli = 0, memory_mib = 0;                                // its replicas' here
    boost::container::small_vector<std::pair<uint8_t, int32_t>, 8> gpus;  // position, milli
  };
  // The node's running jobs as NodeVictims, built again when the node's version changed.
  const std::vector<NodeVictim>& node_victim_list(int slot);
  // An id per cohort name, for NodeVictim (-1 for no cohort).
  int cohort_id(const std::string& cohort);
  // Whether a running job may be a victim for some job of the key (a superset of may_preempt).
  bool possible_victim(const VictimKey& key, int cohort, const NodeVictim& v) const;
  bool possible_victim(const VictimKey& key, const RunningJob& r) const;
  // Sets the candidate's bounds: what its node would have free were its possible victims gone.
  // Returns whether it has any possible victim (the bounds are set only then).
  bool bound_candidate(const VictimKey& key, VictimCandidates& c, int slot);
  // Whether the slot is a candidate now (and its bounds, if so).
  void refresh_candidate(const VictimKey& key, VictimCandidates& c, int slot);
  // The least GPU milli (all replicas) of a possible victim of the candidates' key on the slot
  // that alone frees enough for `one` (a replica of the shape) there; none when no single one
  // does, so every option there has two victims or more.
  std::optional<int64_t> least_single_victim(const VictimCandidates& c, const JobRequest& one,
                                             int shape, int slot);
  // Finds the key's candidates afresh, from the indexes of running jobs.
  void find_candidates(const VictimKey& key, VictimCandidates& c);
  // Extends the key's per-slot vectors to nodes that joined since (and its per-kind lists to
  // new kinds); the new nodes are in the log.
  void grow_candidates(VictimCandidates& c);
  // A key whose backlog in victim_log_ is longer than this times the nodes is found afresh.
  // Catching up refreshes each logged node once; finding afresh walks the running jobs the key
  // may preempt and refreshes their nodes: for a key of a low priority (few possible victims)
  // that is cheaper than a long catch-up, for one of a high priority it is not.
  static constexpr size_t kVictimBacklog = 1;
  // Brings the key's candidates up to date with the nodes logged since it last read the log.
  void catch_up_candidates(const VictimKey& key, VictimCandidates& c);
  // The job was chosen as a victim: it no longer counts in any candidate's bounds.
  void victim_chosen(const RunningJob& victim);
  // Whether one replica could fit the candidate if all its possible victims stopped.
  bool could_free_enough(const VictimCandidates& c, int slot, Shape& shape);
  // The running jobs on the slot changed (or may be victims from the next pass on).
  void log_victim_change(int slot) {
    if (!victim_slots_.empty()) victim_log_.push_back(slot);
  }
  // Drops the part of victim_log_ every key has read (and keys of past victim epochs too far
  // behind to catch up), once the log is kVictimBacklog times as long as the nodes.
  void trim_victim_log();
  // Tenant changes, or a node that changed kind or GPU count: candidates are found afresh.
  void drop_victim_candidates() {
    victim_slots_.clear();
    victim_log_.clear();
  }
  // Whether, by the static groups' indexes, some class the shape could run on has enough free
  // GPUs (whole GPUs, or a share's milli on one GPU). False: no node fits the shape now.
  bool gpus_free_somewhere(Shape& shape);
  // The GPU models (GPU 0's) of the static groups the shape could run on.
  const std::vector<std::string>& shape_models(Shape& shape);
  // The GPU positions of the static group's nodes that match the shape.
  uint64_t gpu_match_mask(Shape& shape, int static_group);
  uint64_t gpu_match_mask(Shape& shape, const NodeClass& c) {
    return gpu_match_mask(shape, c.static_group);
  }

  mutable NodeState scratch_;  // node_victims()' working copy, reused
  PlacementPolicy policy_;
  PolicySettings settings_;
  NodeScorer scorer_;
  SeededRng rng_;
  NodeClassIndex classes_;
  TenantBook tenants_;
  std::vector<Node> nodes_;  // by slot
  // Per slot, nodes_[slot].jobs.size(): read by preemption searches over thousands of nodes
  // without touching the nodes (a node's record spans many cache lines).
  std::vector<int32_t> slot_jobs_;
  NodeSlots slot_by_id_;
  std::vector<Shape> shapes_;
  std::unordered_map<std::string, int> shape_by_key_;
  std::unordered_map<std::string, int> tenant_ids_;  // tenant names interned, never dropped
  std::vector<Ranking> rankings_;
  std::unordered_map<std::string, int> ranking_by_key_;
  size_t ranking_groups_ = 0;  // static groups when rankings_ were made (fit signatures change)
  std::map<std::string, PendingJob> pending_;
  std::map<std::string, RunningJob> running_;
  // Running jobs with a declared max_runtime, by (expected end, job id), with the node of a
  // job's only replica (-1 for a gang): a walk in end order skips the jobs on nodes that cannot
  // run what it looks for without reading them. Filed by the static group of that node
  // (ends_by_group_; gangs, and jobs on a node never in a group, in spanning_ends_): a walk for
  // a job reads only the groups it could run on (and the gangs), merged in end order.
  std::vector<Ends> ends_by_group_;
  Ends spanning_ends_;
  std::vector<int> ends_group_;  // per slot: the group its jobs' ends are filed under (-1: none)
  size_t ends_count_ = 0;
  // Running jobs that some pending job might preempt: by priority, spot ones, borrowing ones.
  std::map<std::pair<int, uint64_t>, const RunningJob*> by_priority_;      // (priority, seq)
  std::map<uint64_t, const RunningJob*> spot_running_, borrowed_running_;  // by seq
  uint64_t next_running_seq_ = 1;
  std::map<std::string, std::vector<int>> nominated_slots_;  // preemptor -> node slots
  // Preemptors reclaiming lent quota: job -> (tenant, GPU model, milli) held in tenants_ until
  // the nomination ends (see TenantBook::hold_reclaim).
  std::map<std::string, std::tuple<std::string, std::string, int64_t>> reclaim_holds_;
  // slot -> the preemptors holding it: (priority, job id)
  std::vector<std::vector<std::pair<int, std::string>>> nominees_by_slot_;
  std::vector<char> reserved_slot_;  // slot is in reservation_
  uint64_t next_seq_ = 1;
  std::map<uint64_t, PendingJob*> undecided_;  // submitted since the last pass, by seq
  std::unordered_map<uint64_t, PendingJob*> pending_by_seq_;
  WaitIndex waiting_;             // every pending job, by tenant and fit signature
  size_t waiting_groups_ = 0;     // static groups when waiting_ was built
  bool decide_all_ = true;        // the next pass decides every pending job
  std::vector<int> freed_slots_;  // capacity freed since the last pass
  std::vector<char> slot_freed_;  // by slot: in freed_slots_
  std::set<int> quota_freed_;     // tenants (interned) whose quota use fell
  // Quota released since the last pass, per (pool, GPU model): a pool is a cohort, or a tenant
  // ("/" + name: what its own jobs released).
  std::map<std::pair<std::string, std::string>, int64_t> quota_released_;
  // Running jobs started since the last pass, as (priority, seq): new possible victims.
  std::vector<std::pair<int, uint64_t>> new_running_;
  // What wakes jobs in this pass (taken from the three above when it begins).
  std::vector<int> wake_slots_;
  std::set<int> wake_quota_;
  std::map<std::pair<std::string, std::string>, int64_t> wake_released_;
  // quota_grown: per (tenant, static group), what wake_released_ holds for it in this pass.
  static constexpr int64_t kUnknown = -2, kNone = -1;
  std::vector<int64_t> released_;
  uint64_t released_pass_ = 0;
  // released_groups: per tenant, whether found in this pass, and the groups.
  std::vector<std::pair<bool, std::vector<int>>> released_groups_;
  // free_classes() per static group, valid while the group's nodes and the holds on them
  // (reservation, preemptors' nominations) are as they were.
  struct FreeClasses {
    std::vector<WaitCapacity> caps;
    uint64_t group_version = 0, holds_version = 0;
    bool valid = false;
    uint64_t revision = 0;  // bumps when `caps` changes
    WaitCapacity most;      // the most of each size over `caps`
  };
  uint64_t free_classes_revision_ = 0;
  NodeState reservation_scratch_;                  // find_reservation's scratch
  std::vector<WaitCapacity> free_classes_before_;  // free_classes' scratch
  std::vector<int> free_classes_found_;
  std::vector<uint64_t> group_version_;  // per static group: bumps when one of its nodes changes
  // Per static group: bumps when the reservation or a nomination on one of its nodes changes.
  std::vector<uint64_t> group_holds_version_;
  void bump_group_version(int slot);
  void hold_changed(int slot);  // the slot's reservation or nominations changed
  // Nodes reserved or held for a preemptor, per node class (so a class whose nodes all are is
  // known at once): by slot, whether it is; by class, how many are.
  std::vector<char> slot_blocked_;
  std::unordered_map<int, int> class_blocked_;
  void count_blocked(int slot, int sign);  // counts the slot's block in its class (or not)
  std::vector<FreeClasses> free_classes_;
  std::vector<std::vector<SlotReclaim>> slot_reclaim_;            // by tenant, then slot
  std::unordered_map<int, ReclaimEnvelope> reclaim_envelopes_;    // by tenant
  std::map<std::string, BorrowedSlots> released_borrowed_slots_;  // by cohort
  // Jobs added to borrowed_running_ since the last pass began or a job left it (which bumps
  // borrowed_removals_).
  std::vector<const RunningJob*> borrowed_added_;
  // borrowed_running_'s replicas per (tenant, GPU model): slot -> how many run there.
  std::map<std::pair<std::string, std::string>, std::map<int, int>> borrowed_slots_;
  void count_borrowed(const RunningJob& r, int sign);
  uint64_t borrowed_removals_ = 0;
  std::vector<int> sources_order_;  // sources_'s slots in the order they were added
  // (cohort, model) -> ((pass, the cohort's changes, victims chosen), reclaimable())
  std::map<std::pair<std::string, std::string>, std::pair<std::tuple<uint64_t, uint64_t, uint64_t>,
                                                          std::vector<std::pair<int, int64_t>>>>
      reclaimable_;
  uint64_t victims_chosen_ = 0;  // counts victim_chosen()
  std::vector<std::pair<int, uint64_t>> wake_victims_;
  std::vector<std::string> tenant_names_;    // interned tenant id -> name
  std::vector<std::string> signature_bits_;  // fit signature -> '1' per static group it fits
  // Per tenant: quota_headroom per GPU model, while its cohort's changes are as counted.
  struct TenantHeadroom {
    const std::string* cohort = nullptr;  // TenantBook::cohort_of (until set_tenants)
    int cohort_id = kUnknownCohort;       // cohort_id(*cohort) once asked
    uint64_t changes = 0;                 // its cohort's changes when filled
    uint64_t book_changes = 0;            // TenantBook::changes() when last found unchanged
    std::vector<std::pair<std::string, int64_t>> by_model;
    std::vector<int64_t> by_group;  // by static group; kUnknownHeadroom: not asked yet
  };
  static constexpr int64_t kUnknownHeadroom = -1;
  static constexpr int kUnknownCohort = -2;
  std::vector<TenantHeadroom> headroom_;
  // Why the quota refuses (tenant, GPU model, milli), while the tenants' use is unchanged.
  std::map<std::tuple<int, std::string, int64_t>, std::string> quota_whys_;
  uint64_t quota_whys_changes_ = 0;
  TimeMs last_now_ = 0;  // the pass's time, for wake-up capacities
  // wake_caps() per tenant, valid while wake_version_ and tenants_.changes() are as they were.
  // With the queries next_woken asks of the tenant's partitions, built from them while no job
  // was added to the index.
  struct WakeCaps {
    bool valid = false;
    uint64_t version = 0, changes = 0;
    std::vector<std::vector<WaitCapacity>> by_group;  // (queries point into these)
    std::vector<int> groups;                          // those with capacities, ascending
    std::vector<WaitIndex::PartitionQuery> queries;   // the first `used` are asked
    size_t used = 0;
    bool queries_valid = false;
    uint64_t queries_additions = 0;  // waiting_.additions() when built
    WaitIndex::Resume resume;        // where the last query stopped (reset when they are built)
  };
  std::unordered_map<int, WakeCaps> wake_caps_;
  std::vector<std::vector<WaitCapacity>> spare_by_group_;  // wake_caps' list being made
  std::map<int, bool> sources_;                            // slot -> what is free counts too
  std::vector<int> dirty_sources_;                         // sources whose node changed in the pass
  bool all_sources_dirty_ = false;
  bool sources_started_ = false;  // sources_ is this pass's
  // The sources' capacities by WakeCapKey with the sizes left out (merge_sizes): the sizes
  // of those merged (whole GPUs, GPU milli, CPUs, memory), with counts; the list offers the
  // most of each.
  struct Envelope {
    std::array<std::map<int64_t, int>, 4> sizes;
  };
  std::map<WakeCapKey, Envelope> shared_caps_;
  std::map<int, std::vector<WakeCapKey>> source_caps_;     // slot -> its part of shared_caps_
  std::vector<std::pair<int, WaitCapacity>> shared_list_;  // shared_caps_ as a list
  uint64_t shared_version_ = 0;  // shared_changes_ when shared_list_ was made
  uint64_t shared_changes_ = 0;  // bumps when shared_caps_ changes
  bool shared_valid_ = false;
  std::unordered_map<int, OwnCaps> own_caps_;  // by tenant
  // The tenants' first jobs when they were last decided again for want of a reservation.
  std::vector<uint64_t> heads_tried_;  // by seq
  uint64_t heads_unending_freed_ = 0;  // unending_freed_ when they were
  uint64_t wake_version_ = 0;          // bumps when a node's use, a hold or a victim changes
  uint64_t release_epoch_ = 1;         // bumps when capacity frees up or the rules change
  uint64_t pass_epoch_ = 0;            // release_epoch_ at the last full pass
  std::optional<Reservation> reservation_;
  std::unordered_map<int, std::string> failed_shapes_;  // shape -> reason, valid this epoch
  std::set<std::pair<int, int>> failed_reserves_;       // (shape, replicas) without a start
  // (shape, replicas) that would not fit even were every job with a declared end gone, with
  // unending_freed_ then: valid while it is unchanged.
  std::map<std::pair<int, int>, uint64_t> never_reservable_;
  uint64_t unending_freed_ = 0;  // bumps when a job without a declared end ends or a node changes
  uint64_t never_reservable_at_ = 0;  // unending_freed_ when never_reservable_ was last cleared
  std::map<WaitKey, Wait> waits_;     // see WaitKey
  // (shape, replicas, priority) -> wait class, for waiting_
  std::map<std::tuple<int, int, int>, int> wait_classes_;
  TimeMs pass_now_ = 0;  // the time of the pass under way (or the last)
  // Resource reasons per (shape, replicas), valid this epoch.
  std::map<std::pair<int, int>, std::string> resource_reasons_;
  // The static group's class with the most CPUs free (then the lowest id) among those a
  // replica of `cpu_milli` and `memory_mib` does not fit, as (CPU milli free, class id); id -1:
  // none.
  std::pair<int64_t, int> most_cpu_not_fitting(int group, int64_t cpu_milli, int64_t memory_mib);
  // (shape, replicas, priority, tenant) whose preemption search failed. This and the next are
  // valid until a finish, a node or tenant change, or a new running job (see schedule()).
  std::set<std::tuple<int, int, int, int>> failed_preemptions_;  // the tenant interned
  // Failed single-replica searches by what decides who may be preempted and where (tenant,
  // priority, spot, fit signature, GPU model): the sizes that found no victims (GPU milli,
  // CPUs, memory, GPU memory). A request at least as large in every one fails too.
  using PreemptionBucket = std::tuple<std::string, int, bool, int, std::string>;
  std::map<PreemptionBucket, std::vector<std::array<int64_t, 4>>> failed_preemption_sizes_;
  std::map<std::string, int> fit_signatures_;
  // Kept up to date through victim_log_; dropped on a node or tenant change.
  std::map<VictimKey, VictimCandidates> victim_slots_;
  std::vector<int> victim_log_;  // slots whose running jobs changed, for victim_slots_
  // A node's list is kept while the node's jobs are as they were (`version`): a job that starts
  // or ends there is added or taken out where the list was up to date (victims_changed marks
  // the other changes: what it builds from a job changed, or the node's GPUs did).
  struct NodeVictims {
    bool built = false;
    uint64_t version = 0;          // victims_version_ of its slot when built
    std::vector<NodeVictim> jobs;  // in the order of the node's jobs (by seq)
  };
  std::vector<NodeVictims> node_victims_;  // by slot (see node_victim_list)
  std::vector<uint64_t> victims_version_;  // by slot
  // Marks the node's list as changed; `started` or `ended`: that job's record is added or taken
  // out instead, where the list was up to date.
  void victims_changed(int slot, const RunningJob* started = nullptr,
                       const RunningJob* ended = nullptr);
  // Appends the record node_victim_list keeps of a running job on the node.
  void add_victim_record(std::vector<NodeVictim>& list, const RunningJob& r, int slot);
  std::unordered_map<std::string, int> cohort_ids_;
  // Bumps where candidates found earlier would have gone stale (see schedule()).
  uint64_t victim_epoch_ = 1;
  std::vector<int> placed_slots_;  // slots of the jobs placed in this pass
  // Per-slot flags that a search sets and forgets at once: a slot is set when it holds the
  // current stamp, so starting a search clears no array (choose_victims runs many per pass).
  class SlotFlags {
   public:
    /// Clears every flag, for slots below `slots`.
    void start(size_t slots) {
      if (stamps_.size() < slots) stamps_.resize(slots, 0);
      if (++stamp_ == 0) {  // (wrapped: old stamps could match again)
        std::fill(stamps_.begin(), stamps_.end(), 0);
        stamp_ = 1;
      }
    }
    bool test(int slot) const { return stamps_[slot] == stamp_; }
    void set(int slot) { stamps_[slot] = stamp_; }

   private:
    std::vector<uint32_t> stamps_;
    uint32_t stamp_ = 0;
  };
  SlotFlags victim_marked_, victim_refined_;  // choose_victims': nodes considered; refined
  SlotFlags victim_seen_;  // the nodes a candidate search or catch-up has refreshed
  // Running jobs that borrow, per (cohort, GPU model), cheapest victim first (valid as above).
  std::map<std::pair<std::string, std::string>, std::vector<const RunningJob*>> borrowers_;
  // node_victims' answers per (request shape, the job's GPU milli, priority, spot, tenant) and
  // slot, each valid while the node's version and the tenants' use (tenants_.changes()) are as
  // they were; dropped as above. A node's version changes with its use, and when a job on it is
  // chosen as a victim. The job's GPU milli (all replicas) counts because reclaiming asks the
  // quota for the whole job: a gang's whole-node request and a single job can share a shape.
  struct VictimMemo {
    uint64_t node_version = 0, tenant_changes = 0;
    uint64_t pass = 0;             // the pass that found it
    bool quota_dependent = false;  // the node ran a borrower then
    std::optional<VictimOption> option;
  };
  std::map<std::tuple<int, int64_t, int, bool, std::string>, VictimMemos> victim_memo_;
  size_t victim_memo_entries_ = 0;  // in victim_memo_: it is emptied when it grows too large
  static constexpr size_t kMaxVictimMemos = 1'000'000;
  std::vector<uint64_t> slot_version_;  // by slot
  // The slots whose version bumped in this pass (and since the last one), in order; when it grows
  // long it is cleared and changed_slots_epoch_ bumps.
  std::vector<int> changed_slots_;
  uint64_t changed_slots_epoch_ = 0;
  void slot_changed(int slot);              // bumps its version and logs it
  std::vector<uint64_t> slot_placed_pass_;  // by slot: the last pass that placed a job there
  // las (empty otherwise): thresholds in GPU-ms; crossings of running jobs (time, job id);
  // starvation promotions of pending ones (time, seq); service that no longer counts for
  // levels, per job promoted against starvation (kept while it is preempted and requeued).
  bool las_ = false;
  std::vector<int64_t> las_thresholds_;
  std::set<std::pair<TimeMs, std::string>> las_crossings_;
  std::set<std::pair<TimeMs, uint64_t>> las_starving_;
  std::unordered_map<std::string, int64_t> las_discount_;
  uint64_t pass_ = 0;
  PassStats stats_;                    // of the pass in progress, then of the last one
  bool placed_last_pass_ = false;      // a job was placed or started since the last pass began
  bool capacity_dirty_ = false;        // nodes changed since update_capacity()
  std::vector<int> capacity_changed_;  // the slots of those nodes
  // What update_capacity() counted of each node, and the totals over them.
  struct Counted {
    bool present = false, has_class = false;
    int gpus = 0;
    int64_t gpu_milli = 0, cpu_milli = 0, memory_mib = 0;
    std::string zone;
  };
  std::vector<Counted> counted_;  // by slot
  struct CapacityTotals {
    int64_t gpu = 0, cpu = 0, memory = 0;
    std::map<int64_t, int> cpu_counts;  // nodes per CPU count (the largest: a normaliser)
    std::map<int, int> gpu_counts;      // nodes per GPU count
    std::map<std::string, int> zone_counts;
  } capacity_;
  std::set<std::string> zones_;
  // The learned workload profile: submissions per (gpus, milli, cpu).
  std::map<std::tuple<int, int, int64_t>, int> shape_counts_;
  size_t profile_submissions_ = 0, profile_built_at_ = 0;
};

}  // namespace gpucloud::sched
