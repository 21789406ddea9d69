// StateStore: the server's durable truth. Every state change is one transaction; ids and
// timestamps are decided by the caller before the write.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "model/gpu.h"
#include "model/job.h"
#include "model/node_price.h"

namespace gpucloud::store {

/// A registered node.
struct NodeRecord {
  std::string id;
  std::string
      credential_sha256;  // the node credential's hash; the credential itself is never stored
  NodeInfo info;
  std::string state = "ready";  // ready | unreachable | down
  bool cordoned = false;
  // An admin approved that the next agent registering with this node's name by a join token
  // takes this record over (`gpucloud node replace`): the machine lost its agent state.
  bool replace_approved = false;
  TimeMs registered_at = 0;
  TimeMs last_seen = 0;
  // What the server prices it at (docs/cost.md): worked out from info, the catalog and the
  // cost settings whenever the record is loaded or replaced; not stored.
  NodePrice price;
};

/// An API token (stored as its SHA-256).
struct TokenRecord {
  std::string sha256;
  std::string name;
  std::string role;                  // admin | member | agent
  std::vector<std::string> tenants;  // tenants a member may act for
  TimeMs created_at = 0;
  TimeMs expires_at = 0;  // 0 = never
  bool revoked = false;
};

/// One line of the audit log: who did what to which object (docs/audit.md). The log is
/// hash-chained: each entry's hash covers its own canonical form and the previous entry's
/// hash, so an edit, a deletion or a reordering breaks the chain.
struct AuditEntry {
  TimeMs at = 0;
  std::string actor;   // the token's name, or "server" / "scheduler" for the platform
  std::string action;  // e.g. "job.submit", "job.cancel", "node.register"
  std::string object;  // e.g. the job id
  std::string detail;  // the request's relevant fields (never a secret)
  std::string role;    // admin | member | agent | node | system
  std::string source;  // the client's address for requests; "" for the platform's decisions
  std::string tenant;  // the tenant the object belongs to; "" when none (nodes, tokens)
  std::string outcome = "ok";
  // Set by the store when written (and read back): the entry's place and the chain.
  int64_t seq = 0;
  std::string prev_hash;
  std::string hash;
};

/// Which audit entries to read, newest first.
struct AuditQuery {
  TimeMs since = 0;                  // at or after; 0 = any time
  int64_t before_seq = 0;            // 0 = from the newest
  std::vector<std::string> tenants;  // empty = any tenant (and entries without one)
  std::string action;                // exact, or a prefix when it ends with '*'; "" = any
  int limit = 100;
};

/// The newest entry of the chain: what `gpucloud audit verify` compares against to catch a
/// truncated tail.
struct AuditHead {
  int64_t seq = 0;
  std::string hash;
};

/// What checking the chain found.
struct AuditVerification {
  bool ok = true;
  int64_t entries = 0;     // entries checked
  int64_t unchained = 0;   // entries written before the log was chained (not checkable)
  AuditHead head;          // the newest entry
  int64_t broken_seq = 0;  // the first entry found broken (0 when ok)
  std::string problem;     // what is wrong there, in words
};

/// The canonical form an audit entry's hash covers (a JSON array of its fields, seq and
/// prev_hash included), and that hash (SHA-256, lower-case hex).
std::string audit_canonical(const AuditEntry& e);
std::string audit_hash(const AuditEntry& e);

/// One row of the cost ledger (docs/cost.md, "Ledger"): one replica of one ended attempt, with
/// its price as fixed when it was placed.
struct LedgerEntry {
  std::string job_id;
  std::string tenant;
  int attempt = 1;
  int rank = 0;
  std::string node;       // node name
  std::string gpu_model;  // "" when it held no GPU
  int64_t gpu_milli = 0;  // GPUs held, in thousandths (2 whole GPUs = 2000)
  TimeMs started_at = 0;
  TimeMs ended_at = 0;
  double usd_per_hour = 0;            // its share of the node's price
  double on_demand_usd_per_hour = 0;  // the same share at on-demand
  double cost_usd = 0;                // usd_per_hour over started_at..ended_at
  std::string end;                    // what ended the attempt, e.g. "succeeded", "interrupted"
  std::string cause;                  // the interruption's cause ("" if none)
  // Idle reclaim: how much longer it could have held its GPUs (until its max_runtime), in ms;
  // 0 when it was not reclaimed or has no max_runtime.
  int64_t idle_released_ms = 0;
};

/// What a cost report covers: the part of each attempt inside [since, until), of the given
/// tenants (empty = all) or one job.
struct CostQuery {
  std::string group_by = "tenant";  // tenant | job | node | gpu-model | day (UTC, of the end)
  TimeMs since = 0;
  TimeMs until = 0;  // 0 = no end
  std::vector<std::string> tenants;
  std::string job_id;  // "" = any
};

/// One line of a cost report.
struct CostLine {
  std::string key;  // the tenant, job id, node, GPU model or day
  int64_t attempts = 0;
  double gpu_hours = 0;
  double cost_usd = 0;
  double on_demand_usd = 0;            // the same hours at on-demand
  double idle_released_gpu_hours = 0;  // handed back early by idle reclaim
  double idle_released_usd = 0;        // those hours at the price the job paid
};

/// A set of changes written in one transaction: all or nothing.
struct WriteBatch {
  std::vector<Job> jobs;                   // insert or replace
  std::vector<NodeRecord> nodes;           // insert or replace
  std::vector<TokenRecord> tokens;         // insert or replace
  std::vector<AuditEntry> audit;           // appended
  std::vector<std::string> removed_nodes;  // node ids deleted (after the writes above)
  std::vector<LedgerEntry> ledger;         // appended
  bool empty() const {
    return jobs.empty() && nodes.empty() && tokens.empty() && audit.empty() &&
           removed_nodes.empty() && ledger.empty();
  }
};

/// The durable state of a server.
class StateStore {
 public:
  virtual ~StateStore() = default;
  /// Writes the batch atomically and durably: once this returns ok, a crash of the process
  /// or the machine loses none of it.
  virtual Status commit(const WriteBatch& batch) = 0;
  /// All jobs, oldest first. With include_terminal false, only pending and running ones.
  virtual Result<std::vector<Job>> load_jobs(bool include_terminal) = 0;
  /// One job by id, or nullopt.
  virtual Result<std::optional<Job>> get_job(const std::string& id) = 0;
  /// Jobs (any state) whose id starts with prefix, at most limit of them.
  virtual Result<std::vector<Job>> find_jobs_by_prefix(const std::string& prefix, int limit) = 0;
  /// One page of terminal jobs in id order, newest first: those with an id below before_id
  /// ("" = from the newest), of the given tenants (empty = any), at most limit.
  virtual Result<std::vector<Job>> finished_jobs_page(const std::string& before_id,
                                                      const std::vector<std::string>& tenants,
                                                      int limit) = 0;
  /// All registered nodes.
  virtual Result<std::vector<NodeRecord>> load_nodes() = 0;
  /// All tokens.
  virtual Result<std::vector<TokenRecord>> load_tokens() = 0;
  /// The ledger summed by the query's group_by over its window, in key order. Only ended
  /// attempts: the caller adds those still running.
  virtual Result<std::vector<CostLine>> cost_report(const CostQuery& query) = 0;
  /// The last `limit` audit entries about an object (newest last).
  virtual Result<std::vector<AuditEntry>> audit_for(const std::string& object, int limit) = 0;
  /// Audit entries matching the query, newest first.
  virtual Result<std::vector<AuditEntry>> audit_page(const AuditQuery& query) = 0;
  /// The newest chained entry (seq 0 when there is none).
  virtual Result<AuditHead> audit_head() = 0;
  /// Walks the whole chain, oldest first, and reports the first entry that was edited,
  /// deleted, inserted or moved; with `expected` (a head recorded earlier), also a tail cut
  /// off after it.
  virtual Result<AuditVerification> verify_audit(const std::optional<AuditHead>& expected) = 0;
};

/// Opens (creating and migrating as needed) the SQLite store at path.
Result<std::unique_ptr<StateStore>> open_sqlite_store(const std::string& path);

}  // namespace gpucloud::store
