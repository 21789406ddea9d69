// Server: the control plane. It owns the store, the in-memory view of jobs and nodes, the
// scheduler and the HTTP API, and runs all of its logic on one EventLoop thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/ids.h"
#include "cost/instance_catalog.h"
#include "model/agent_protocol.h"
#include "model/job.h"
#include "net/event_loop.h"
#include "net/http_server.h"
#include "sched/scheduler.h"
#include "server/auth.h"
#include "server/background_work.h"
#include "server/config.h"
#include "server/event_feed.h"
#include "server/log_store.h"
#include "server/server_metrics.h"
#include "store/state_store.h"

namespace gpucloud::server {

struct ServerConfig {
  std::string data_dir = ".gpucloud";
  std::string listen_host = "127.0.0.1";
  int listen_port = 8080;
  int64_t poll_hold_ms = 5000;            // longest an agent's poll is held
  int64_t unreachable_after_ms = 15'000;  // no poll for this long: node unreachable
  int64_t down_after_ms = 60'000;         // no poll for this long: node down, its attempts lost
  std::string policy = "default";  // a sched placement policy (sched::scheduler_policy_names)
  // Queue policy and las settings (the rest of sched::PolicySettings is not read).
  sched::PolicySettings queue;
  std::string config_file;  // tenants and tokens (docs/config.md); "" = none
  // https: with tls on and no cert/key given, a self-signed pair is made in <data-dir>/tls.
  bool tls = false;
  std::string tls_cert_file;
  std::string tls_key_file;
  // Connection limits (net::HttpServerConfig): 0 = the default there.
  int max_connections = 0;
  int max_connections_per_source = 256;
  // GET /metrics (docs/metrics.md): the admin token may always read it; a file holding a
  // dedicated metrics token ("" = none); or anyone, with metrics_public.
  std::string metrics_token_file;
  bool metrics_public = false;
  // The instance price catalog (docs/cost.md): "" = none; nodes are then priced by their
  // agent's --price-per-hour or an owned-hardware profile of the config file.
  std::string catalog_file;
};

/// Paths of the files a server keeps in its data dir.
struct DataDirLayout {
  std::string root;
  std::string database() const { return root + "/state.db"; }
  std::string admin_token() const { return root + "/admin.token"; }
  std::string agent_token() const { return root + "/agent.token"; }
  std::string address() const { return root + "/address"; }
  std::string audit_head() const { return root + "/audit.head"; }
  std::string logs() const { return root + "/logs"; }
  std::string tls_cert() const { return root + "/tls/server.crt"; }
  std::string tls_key() const { return root + "/tls/server.key"; }
};

class Server {
 public:
  /// Opens the data dir (creating it, the database and the first tokens as needed).
  static Result<std::unique_ptr<Server>> create(const ServerConfig& config, const Clock& clock,
                                                net::EventLoop& loop);
  ~Server();

  /// Starts listening; returns the bound port and writes "http://HOST:PORT" to the address file.
  Result<int> start();
  /// The base URL clients use, e.g. https://10.0.0.1:8443 (valid after start()).
  const std::string& url() const { return url_; }
  /// The SHA-256 fingerprint of the server's TLS certificate ("" without TLS; after start()).
  const std::string& tls_fingerprint() const { return tls_fingerprint_; }
  /// The certificate file served over TLS ("" without TLS; after start()).
  const std::string& tls_cert_file() const { return tls_cert_file_; }
  const DataDirLayout& layout() const { return layout_; }
  /// What a tenant's attempts cost from `since` to `until` (0 = now), ended and running, in
  /// USD: the figure budgets compare with their limit. Must run on the server's loop.
  Result<double> tenant_spend_usd(const std::string& tenant, TimeMs since, TimeMs until = 0);

  /// Reads the config file again (on SIGHUP). On an error the old config stays in force.
  /// Must run on the server's loop.
  Status reload_config();

 private:
  Server(const ServerConfig& config, const Clock& clock, net::EventLoop& loop);

  // Per-node runtime state (not persisted).
  struct NodeRuntime {
    int64_t version = 0;          // desired-state version
    int64_t applied_version = 0;  // last version the agent said it acted on
    int64_t acked_seq = 0;        // highest event seq recorded
    net::Responder waiter;        // the held poll, if any
    uint64_t waiter_timer = 0;
    uint64_t hold_seq = 0;  // numbers held polls, so a stale hold timer answers nothing
    std::map<std::string, int64_t> removed_at;  // key -> version at which it left the desired set
    std::map<std::string, int64_t> placed_at;  // key -> version at which it entered the desired set
    std::map<std::string, InterruptNotice> interrupts;  // key -> why it is being stopped
    std::map<std::string, InterruptNotice> warnings;    // key -> the idle warning it was given
    std::vector<GpuReading> readings;                   // the GPUs' latest readings (not persisted)
    // Ids of the jobs that may have a replica here that has not exited: every job placed here
    // since, plus some that have left (jobs_on drops those), so a poll never walks every job.
    std::set<std::string> jobs;
  };

  Status bootstrap_tokens();
  Status load_state();

  // HTTP
  /// Answers a request head at once when its token is missing or refused (before its body
  /// is read), and lifts the per-source connection cap for addresses nodes poll from.
  std::optional<net::HttpResponse> check_head(const net::HttpRequest& head);
  /// Once a minute, when connections were refused or evicted: a warning with the counts.
  void log_connection_pressure();
  /// The answer to a request without a valid token.
  net::HttpResponse unauthenticated(const net::HttpRequest& req) const;
  void handle(net::HttpRequest&& req, net::Responder respond);
  void route(net::HttpRequest& req, const Principal& who, net::Responder& respond);

  // Jobs API (server_jobs.cpp)
  net::HttpResponse submit_job(const net::HttpRequest& req, const Principal& who);
  /// GET /v1/jobs: one page of jobs, newest first (limit, cursor; all=1 adds ended ones). The
  /// answer is built on a background thread.
  void list_jobs(const net::HttpRequest& req, const Principal& who, net::Responder respond);
  static constexpr int kDefaultJobPage = 500;
  static constexpr int kMaxJobPage = 1000;
  Result<Job> find_visible_job(const std::string& id_or_prefix, const Principal& who);
  net::HttpResponse cancel_job(const std::string& id, const Principal& who);
  void job_logs(const net::HttpRequest& req, const std::string& id, const Principal& who,
                net::Responder respond);
  net::HttpResponse list_nodes(const Principal& who);
  net::HttpResponse list_tenants(const Principal& who);
  void apply_tokens();
  Status check_config_tokens(const ServerFileConfig& config) const;

  // Join tokens and node administration (server_admin.cpp)
  net::HttpResponse create_token(const net::HttpRequest& req, const Principal& who);
  net::HttpResponse list_tokens(const Principal& who);
  /// Ok when tenant is a valid name and, where the config file lists tenants, one of them.
  Status check_tenant_name(const std::string& tenant) const;
  net::HttpResponse revoke_token(const std::string& name, const Principal& who);
  /// POST /v1/nodes/NODE/{cordon,uncordon,drain}.
  net::HttpResponse node_action(const std::string& node, const std::string& action,
                                const Principal& who, const std::string& body);
  /// A spot notice (`gpucloud node interrupt`): every job on the node is interrupted with the
  /// notice's deadline (cause spot), the node takes no new work (`interrupting`) and is `gone`
  /// once the deadline has passed.
  net::HttpResponse interrupt_node(store::NodeRecord& node, const std::string& body,
                                   const Principal& who);
  /// What a spot notice does, whoever delivered it (an admin's `node interrupt`, the node's
  /// agent in its poll): the node becomes `interrupting`, every job on it is interrupted with
  /// the deadline (clamped to now..now+1h), and the node is `gone` at the deadline. Writes into
  /// batch (the caller commits it); returns the number of jobs interrupted.
  int begin_spot_interruption(store::NodeRecord& node, TimeMs deadline, const std::string& reason,
                              const std::string& actor, store::WriteBatch& batch);
  /// Deletes a node that is down, gone or left and runs nothing (`gpucloud node remove`).
  net::HttpResponse remove_node(store::NodeRecord& node, const Principal& who);
  /// Routes /v1/tokens... and /v1/nodes/...; false when the path is not one of them.
  bool route_admin(net::HttpRequest& req, const Principal& who, net::Responder& respond);
  Status prepare_tls(net::HttpServerConfig& http);

  // Agents (server_agents.cpp)
  void register_node(const net::HttpRequest& req, const Principal& who, net::Responder respond);
  /// The answer now, or nullopt when `answer` is called once the registration is durable.
  std::optional<net::HttpResponse> register_node_now(
      const net::HttpRequest& req, const Principal& who,
      const std::function<void(net::HttpResponse)>& answer);
  void poll(const net::HttpRequest& req, const Principal& who, net::Responder respond);
  void apply_event(const std::string& node_id, const ReplicaEvent& event, store::WriteBatch& batch);
  void reconcile_running(const std::string& node_id, const PollRequest& poll,
                         store::WriteBatch& batch);
  net::HttpResponse poll_response(const std::string& node_id,
                                  const std::map<std::string, int64_t>& log_offsets);
  std::vector<Allocation> desired_for(const std::string& node_id);
  /// The jobs with a replica on the node that has not exited, in id order (from the node's
  /// index, whose entries for jobs that have left are dropped on the way).
  std::vector<Job*> jobs_on(const std::string& node_id);
  void bump_node(const std::string& node_id);
  void check_node_liveness();

  // Audit log (server_audit.cpp)
  /// Fills in what the call sites leave out of the batch's audit entries: the requester's
  /// role and address (for the request being handled), "system" for the platform, and the
  /// tenant of the job an entry is about.
  void complete_audit(store::WriteBatch& batch) const;
  /// Records the chain's newest entry in <data-dir>/audit.head when entries were written (at
  /// most once a second), unless the head recorded before has disappeared from the log.
  void record_audit_head();
  std::optional<store::AuditHead> read_audit_head_file() const;
  /// GET /v1/audit: entries newest first (since_ms, before_seq, tenant, action, limit).
  void list_audit(const net::HttpRequest& req, const Principal& who, net::Responder respond);
  /// GET /v1/audit/verify (admin): the chain checked against the recorded head.
  void verify_audit(const Principal& who, net::Responder respond);
  /// The request being handled, for complete_audit.
  struct RequestContext {
    std::string actor, role, source;
  };
  std::optional<RequestContext> request_;
  /// Appends `request.refused` for a change request answered with a 4xx (`what`: method and
  /// route template; `body`: the JSON error), at most kRefusalsAuditedPerMinute per token.
  void audit_refusal(const RequestContext& ctx, const std::string& what, int status,
                     const std::string& body);
  struct RefusalWindow {
    TimeMs started = 0;
    int written = 0;
    int dropped = 0;
  };
  std::map<std::string, RefusalWindow> refusals_;  // token name -> this minute's refusals
  mutable bool audit_written_ = false;

  // Events feed (server_events.cpp)
  /// Adds an event to a job's own list and to the cluster's feed (`gpucloud events -f`).
  void record_job_event(Job& job, TimeMs at, std::string type, std::string message);
  /// Adds a node change to the feed: type is what happened (joined, cordoned, down, ...).
  void record_node_event(const std::string& node, std::string type, std::string message);
  /// GET /v1/events: the feed after a seq (after, job, node, tenant, kind, limit, wait_ms),
  /// held until a matching event or wait_ms; without after, the newest events.
  void list_events(const net::HttpRequest& req, const Principal& who, net::Responder respond);
  EventFeed feed_;
  TimeMs feed_started_ = 0;  // tells followers that the server restarted (the feed began anew)
  static constexpr size_t kMaxEventWaiters = 4096;

  // Budgets (server_budget.cpp)
  /// Every 2 s: each budgeted tenant's spend this month against its budget; raises the alert
  /// once a month, holds the pending jobs of tenants over a hard cap (and interrupts their
  /// running ones with stop_running), and releases them when the month turns or the budget grows.
  void check_budgets();
  std::map<std::string, std::string> budget_held_;  // tenant -> the reason its jobs wait
  /// What one budget check reads once: node states, and the most a replica of each kind of
  /// request could cost per hour on a node it may use.
  struct BudgetScratch {
    bool nodes_read = false;
    std::vector<sched::NodeState> nodes;
    std::map<std::string, double> replica_usd_per_hour;
  };
  /// The most a pending job could cost over its max_runtime on the priciest nodes it may use
  /// now (0 without max_runtime, or where no such node has a price).
  double worst_case_usd(const Job& job, BudgetScratch& scratch) const;
  /// Why a job waits for its worst case (`worst`) against what is left of its tenant's budget.
  std::string budget_admission_reason(const Job& job, double worst, double left) const;
  /// At submit: holds the job (cost_held_, its pending reason) when its worst case is more than
  /// what its tenant's hard-capped budget has left, or reserves it from what is left.
  void admit_by_budget(Job& job);
  /// Stops a job about to pass its max_cost (it then ends as failed), or ends a pending one
  /// whose attempts already cost it.
  void enforce_max_cost(Job& job, store::WriteBatch& batch);
  std::map<std::string, std::string> cost_held_;  // job id -> why its worst case waits
  std::map<std::string, double> budget_left_;     // hard-capped tenant -> USD left to reserve
  std::map<std::string, double> budget_spent_;    // budgeted tenant -> spend this month
  std::map<std::string, TimeMs> budget_alerted_;  // tenant -> the month whose alert fired
  TimeMs budgets_checked_at_ = 0;

  // Idle reclaim (server_idle.cpp)
  /// How long each replica of a running job has had all its GPUs idle (0: busy), and whether
  /// the job was warned. Not persisted: after a restart idleness is counted afresh.
  struct IdleClock {
    std::map<int, TimeMs> since_by_rank;
    bool warned = false;
  };
  /// Updates the idle clocks of the jobs on a node from its latest GPU readings, and withdraws
  /// the warning of a job whose GPUs are busy again.
  void observe_idleness(const std::string& node_id, store::WriteBatch& batch);
  /// Takes the job's idle warnings out of its nodes' poll answers; with tell_nodes, answers
  /// their held polls so the agents remove the warning files now.
  void withdraw_idle_warning(const Job& job, bool tell_nodes = true);
  /// Once a second: warns the jobs idle for 80 % of their idle window and interrupts (cause
  /// idle) those idle for all of it; they end idle-reclaimed.
  void reclaim_idle_jobs();
  // Metrics (server_metrics_scrape.cpp)
  /// Reads --metrics-token-file (its digest is kept, not the token).
  Status load_metrics_token();
  /// The answer refusing a GET /metrics by this caller, or nullopt when it may read them.
  std::optional<net::HttpResponse> metrics_refusal(const net::HttpRequest& req) const;
  /// GET /metrics: the instruments plus gauges computed now from jobs_, nodes_ and the config.
  net::HttpResponse serve_metrics(const net::HttpRequest& req) const;
  /// GET /v1/sd/agents: every live node's metrics address with its labels, in Prometheus's
  /// http_sd_config format (server_discovery.cpp). Same access as GET /metrics.
  net::HttpResponse serve_agent_discovery() const;
  /// Observes the queue wait (and, on a first start, submit-to-running) of an attempt whose
  /// replicas all run now.
  void note_job_started(const Job& job);

  // Costs (server_cost.cpp)
  /// GET /v1/cost: the ledger summed by tenant, job, node, gpu-model or day over a window,
  /// running attempts accrued to now; members see their tenants only.
  net::HttpResponse cost_report(const net::HttpRequest& req, const Principal& who);
  /// The report for a query: the store's lines for ended attempts plus the running ones.
  Result<std::vector<store::CostLine>> cost_lines(const store::CostQuery& query);
  /// The job's cost so far: its ended attempts plus the running one up to now.
  nlohmann::json job_cost_json(const Job& job) const;
  /// POST /v1/jobs?dry_run=1: where the job would run now (the cheapest nodes it fits on, as
  /// they are used now) and what it would cost per hour, or why it would wait. Changes nothing.
  nlohmann::json dry_run(const Job& job, const sched::JobRequest& request) const;
  /// Fixes each new replica's price from its node (at placement).
  void price_replicas(Job& job);
  /// The ledger rows of the job's ending attempt (one per replica that started), into batch.
  void write_ledger(const Job& job, AttemptRecord& record, store::WriteBatch& batch);

  // Lifecycle (server_lifecycle.cpp)
  void schedule_soon();
  void run_scheduler();
  /// The scheduler's view of the active jobs, running and pending: of every one with `all`,
  /// else of those changed since the last pass (sched_dirty_jobs_).
  sched::Snapshot scheduler_snapshot(bool all) const;
  /// Interrupts the jobs the plan preempts (they are re-queued when their replicas have ended).
  void preempt(const std::vector<sched::Preemption>& preemptions, store::WriteBatch& batch);
  /// Hands the config file's tenants (quotas, weights, cohorts) to the scheduler.
  void apply_tenants();
  // Quota windows (server_quota_windows.cpp)
  /// Arms the timer for the next quota window change of any tenant (quota_change_at_).
  void arm_quota_window_timer();
  /// At a window change: an audit entry per tenant whose quota in force changed, and the new
  /// quotas to the scheduler, which reclaims use above them (docs/config.md, "Quota windows").
  void apply_quota_window_change();
  /// The tenant's quota in force now, its window ("" outside every window) and its next change
  /// (time and quota), as GET /v1/tenants shows them.
  nlohmann::json quota_window_json(const TenantConfig& tenant) const;
  std::optional<TimeMs> quota_change_at_;  // the next window change of any tenant
  uint64_t quota_timer_ = 0;
  bool quotas_changed_ = false;  // the next pass runs even without pending jobs
  std::map<std::string, std::map<std::string, int>> quota_in_force_;  // as last applied
  /// The job's priority value under the current priority classes (normal's if unknown).
  int priority_of(const Job& job) const;
  /// Every node with its current use (from the replicas of active jobs).
  std::vector<sched::NodeState> node_states() const;
  /// One node of each distinct build (GPUs, CPUs, memory, labels), the first in id order, as
  /// check_satisfiable needs them; rebuilt after a node registers.
  const std::vector<sched::NodeState>& node_builds();
  /// The node as the scheduler sees it, without its use.
  static sched::NodeState node_state(const store::NodeRecord& rec);
  /// Brings the scheduler up to date: the nodes and jobs that changed since the last pass.
  void sync_scheduler();
  /// Records that a node's record changed (registered, state, cordon): the scheduler is told at
  /// its next pass, and a pass is arranged.
  void node_changed(const std::string& node_id);
  /// Puts the record into nodes_ and keeps the name index current.
  void put_node(const store::NodeRecord& record);
  /// Called when a replica's state changed; decides whether the attempt and the job end.
  void settle_attempt(Job& job, store::WriteBatch& batch);
  void end_job(Job& job, JobState state, std::optional<int> exit_code, std::string message,
               store::WriteBatch& batch);
  /// A poll that says the agent is stopping: the node takes no new work, its jobs are
  /// interrupted (cause agent-shutdown), and once nothing runs there it has left.
  void leave_node(store::NodeRecord& node, const PollRequest& poll, store::WriteBatch& batch);
  /// Takes the job's running replicas out of their nodes' desired sets; with a cause, as an
  /// interruption: the agents write the job's interrupt file with the cause and a deadline of
  /// now + its grace period (docs/interruptions.md).
  /// `deadline_ms` 0: now + the job's grace period.
  void stop_replicas(Job& job, const std::string& cause = "", const std::string& why = "",
                     TimeMs deadline_ms = 0);
  /// Appends the ending attempt to the job's attempt records (before its replicas are cleared).
  /// Its ledger rows go into batch, in the same transaction as the attempt's end.
  void record_attempt(Job& job, const std::string& end, store::WriteBatch& batch);
  /// Drops the per-replica bookkeeping of the job's current attempt (it has ended).
  void forget_attempt(const Job& job);
  /// Commits the batch (after the writes queued by commit_later, in one transaction).
  Status commit(store::WriteBatch& batch);
  /// Queues the batch for a commit soon, shared with the other batches queued meanwhile (group
  /// commit), and calls `then` once it is durable. A commit() in between writes it first.
  void commit_later(store::WriteBatch& batch, std::function<void()> then);

  ServerConfig config_;
  DataDirLayout layout_;
  const Clock& clock_;
  net::EventLoop& loop_;
  std::unique_ptr<store::StateStore> store_;
  // A second connection to the store, used only by background_ (large reads).
  std::unique_ptr<store::StateStore> read_store_;
  std::unique_ptr<BackgroundWork> background_;  // destroyed before read_store_
  std::unique_ptr<net::HttpServer> http_;
  std::unique_ptr<sched::Scheduler> scheduler_;
  sched::SyncState scheduler_known_;  // what the scheduler was told (sync_snapshot)
  Authenticator auth_;
  LogStore logs_;
  IdGenerator ids_;
  std::string url_;
  std::string tls_fingerprint_;
  std::string tls_cert_file_;
  int64_t tls_not_after_s_ = 0;  // the served certificate's expiry (epoch seconds); 0: no TLS
  std::shared_ptr<ServerMetrics> metrics_ = std::make_shared<ServerMetrics>();  // shared: answers
                                                                                // on other threads
  std::string metrics_token_sha256_;  // of --metrics-token-file's token; "" = none

  std::map<std::string, Job> jobs_;  // pending and running jobs (terminal ones are in the store)
  std::map<std::string, store::NodeRecord> nodes_;
  std::unordered_map<std::string, std::set<std::string>> node_ids_by_name_;  // index of nodes_
  // Nodes whose record changed since the scheduler was last told (they are told at the next
  // pass that has pending jobs to decide): a pass costs O(changed nodes + changed jobs), not
  // O(all nodes + all jobs).
  std::set<std::string> sched_dirty_nodes_;
  // Jobs written since the scheduler was last told (every change to a job is written, through
  // commit or commit_later): a pass rebuilds only these. sched_full_sync_ asks for every job
  // (at start, after a config reload, and now and then as a check; see sync_scheduler).
  std::set<std::string> sched_dirty_jobs_;
  bool sched_full_sync_ = true;
  TimeMs last_full_sync_ = 0;
  std::optional<std::vector<sched::NodeState>> node_builds_;  // see node_builds()
  std::unordered_map<std::string, NodeRuntime> runtime_;
  std::unordered_map<std::string, IdleClock> idle_clocks_;  // by job id
  int64_t version_clock_ = 0;
  net::HttpServerStats logged_http_stats_;  // as of the last log_connection_pressure()
  TimeMs http_stats_logged_at_ = 0;
  int lock_fd_ = -1;  // holds an exclusive flock on <data-dir>/server.lock
  ServerFileConfig file_config_;
  std::optional<cost::InstanceCatalog> catalog_;  // --catalog
  std::vector<store::TokenRecord> store_tokens_;  // admin and agent-join (from the store)
  bool schedule_pending_ = false;
  std::vector<std::string> finished_;  // ended jobs to drop from jobs_ after the next commit
  store::WriteBatch group_batch_;      // queued by commit_later, written by the next commit
  std::vector<std::function<void()>> group_waiters_;  // called once group_batch_ is durable
  bool group_flush_posted_ = false;
};

}  // namespace gpucloud::server
