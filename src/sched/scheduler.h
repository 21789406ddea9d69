// The Scheduler interface: an event-driven placement engine that owns its indexes.
//
// The caller reports what happens (nodes added, changed or removed; jobs submitted, started,
// finished; tenants configured) and asks for a plan at a point in time. The scheduler keeps
// its cluster state and indexes up to date from those events, so a decision does not rescan
// the cluster. It is pure: no I/O, no clock reads, no threads; the same sequence of events
// always gives the same plans.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "sched/types.h"

namespace gpucloud::sched {

/// What the last schedule() did and where its time went: for benchmarks and the server's
/// metrics. Times are wall-clock nanoseconds of the parts (they overlap: a decision's time
/// includes its placement, preemption and reservation searches).
struct PassStats {
  int decisions = 0;            // jobs decided (placed, preempting, or given a reason)
  int woken = 0;                // of them, found by a wake-up query
  int wake_queries = 0;         // wake-up queries (one per tenant step)
  int preemption_searches = 0;  // victim searches run (memoised failures not counted)
  int reservation_searches = 0;
  // Node-class activations the scheduler keeps for its rankings (bounded by a multiple of the
  // node classes alive, however long it runs).
  int64_t activations_kept = 0;
  int64_t total_ns = 0, wake_ns = 0, place_ns = 0, preemption_ns = 0, reservation_ns = 0,
          reason_ns = 0;
};

/// Turns events into plans. Placements returned by schedule() are applied at once (the jobs
/// count as running from `now`); preemption victims keep running until the caller reports them
/// finished, and a preempted job that should run again is submitted again.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  /// The placement policy's name, e.g. "default".
  virtual std::string name() const = 0;

  /// A node joined or changed (capacity, labels, schedulable). Its used fields are ignored:
  /// use comes from the jobs started on it. Jobs keep running on a node that shrinks.
  virtual void upsert_node(const NodeState& node) = 0;
  /// A node left. Jobs still running on it keep their accounting until reported finished.
  virtual void remove_node(const std::string& node_id) = 0;
  /// Replaces the tenants (quotas, weights, cohorts). Tenants not listed have no quota limit
  /// and weight 1.
  virtual void set_tenants(const std::vector<TenantSpec>& tenants) = 0;

  /// A job waits to be placed. Error (kInvalidArgument) if the id is already known or the
  /// request is malformed (replicas < 1, gpu_milli out of 0..999, negative sizes).
  virtual Status submit(const JobRequest& job) = 0;
  /// A job the caller already runs (e.g. found again after a restart) at `where`, since
  /// `started_at`. Replaces a pending job of the same id. Error if a replica names an unknown
  /// node or the id is already running.
  virtual Status start(const JobRequest& job, const Placement& where, TimeMs started_at) = 0;
  /// A job ended, was cancelled, or was withdrawn while pending: its resources are free.
  /// Unknown ids are ignored.
  virtual void finish(const std::string& job_id) = 0;

  /// Decides, at time `now`, placements for pending jobs, preemptions, and a reason for every
  /// job left pending.
  virtual Plan schedule(TimeMs now) = 0;
  /// The earliest time at which a pass may decide something that no event causes (under queue
  /// policy las: a running job drops a level, a waiting job is promoted against starvation);
  /// the caller should call schedule() then. Empty: nothing is due without an event.
  virtual std::optional<TimeMs> next_timed_decision() const { return std::nullopt; }
  /// What the last schedule() did (all zero where the scheduler does not count).
  virtual PassStats last_pass() const { return {}; }

  /// Jobs waiting, and jobs running (including those being preempted).
  virtual size_t pending_count() const = 0;
  virtual size_t running_count() const = 0;
  /// Per tenant and GPU model: GPUs in use (milli), nominal quota and borrowed (milli).
  virtual std::vector<TenantUsage> tenant_usage() const = 0;
};

/// Creates a scheduler with the policy named by settings.policy: first-fit, random,
/// dot-product, clustering, packing, best-fit, fgd or default. Error (kInvalidArgument) names
/// the known policies.
Result<std::unique_ptr<Scheduler>> create_scheduler(const PolicySettings& settings);

/// The policy names create_scheduler accepts, in a stable order.
const std::vector<std::string>& scheduler_policy_names();

/// Brings the scheduler in line with a full snapshot of the caller's state (nodes, running and
/// pending jobs): reports the differences since the last call as events. For callers that keep
/// their own state (the server); `known` is the caller's record of what was reported before.
/// Nodes first, then ended or changed jobs (finish), then new running jobs (start), then new
/// pending jobs (submit). Errors from the scheduler (a replica on an unknown node) are skipped.
/// Returns how many events it reported.
size_t sync_snapshot(Scheduler& scheduler, const Snapshot& snapshot, SyncState& known);
/// sync_snapshot for some jobs only: those named in `job_ids`, whose current state (running or
/// pending) `snapshot` holds; a named job absent from it has ended. Other jobs, and nodes, are
/// left as reported before. For callers that know which jobs changed since the last call, so a
/// pass does not rebuild every job. Returns how many events it reported.
size_t sync_jobs(Scheduler& scheduler, const Snapshot& snapshot, SyncState& known,
                 const std::set<std::string>& job_ids);
/// Records the plan's placements in `known` (the scheduler applied them already), so the next
/// snapshot showing those jobs running is not reported again.
void record_placements(const Plan& plan, SyncState& known);

/// Whether a request could run on some node of an otherwise empty cluster. When it cannot,
/// the error (kUnsatisfiable) says what the largest fitting request would be, e.g.
/// "gpus: 12 requested but the largest node has 8 A100; ask for --gpus 8 or split the job into
/// replicas".
Status check_satisfiable(const JobRequest& request, const std::vector<NodeState>& nodes);

}  // namespace gpucloud::sched
