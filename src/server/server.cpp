#include "server/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "cost/pricing.h"
#include "net/crypto.h"
#include "server/http_util.h"

namespace gpucloud::server {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

Status write_secret_file(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return internal(fmt::format("cannot write {}", tmp));
    out << content << "\n";
  }
  ::chmod(tmp.c_str(), 0600);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return internal(fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  return {};
}

}  // namespace

Server::Server(const ServerConfig& config, const Clock& clock, net::EventLoop& loop)
    : config_(config),
      layout_{config.data_dir},
      clock_(clock),
      loop_(loop),
      logs_(layout_.logs()),
      ids_(static_cast<uint64_t>(clock.now_ms()) ^ static_cast<uint64_t>(::getpid())) {
  feed_started_ = clock.now_ms();
}

Server::~Server() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the data dir
}

Result<std::unique_ptr<Server>> Server::create(const ServerConfig& config, const Clock& clock,
                                               net::EventLoop& loop) {
  std::error_code ec;
  fs::create_directories(config.data_dir, ec);
  if (ec)
    return internal(fmt::format("cannot create data dir {}: {}", config.data_dir, ec.message()));
  ::chmod(config.data_dir.c_str(), 0700);
  std::unique_ptr<Server> server(new Server(config, clock, loop));
  // One server per data dir: a second one would keep its own view of the same store.
  std::string lock_path = server->layout_.root + "/server.lock";
  server->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (server->lock_fd_ < 0)
    return internal(fmt::format("cannot open {}: {}", lock_path, std::strerror(errno)));
  if (::flock(server->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    std::ifstream in(lock_path);
    std::string holder;
    std::getline(in, holder);
    return Error{
        ErrorCode::kConflict,
        fmt::format("data dir {} is in use by another gpucloud server{}; stop it, or give this one "
                    "another --data-dir",
                    config.data_dir, holder.empty() ? "" : " (pid " + holder + ")")};
  }
  if (::ftruncate(server->lock_fd_, 0) == 0) {
    std::string pid = std::to_string(::getpid()) + "\n";
    (void)!::pwrite(server->lock_fd_, pid.data(), pid.size(), 0);
  }
  auto store = store::open_sqlite_store(server->layout_.database());
  if (!store) return store.error();
  server->store_ = std::move(*store);
  auto read_store = store::open_sqlite_store(server->layout_.database());
  if (!read_store) return read_store.error();
  server->read_store_ = std::move(*read_store);
  server->background_ = std::make_unique<BackgroundWork>(2, 64);
  sched::PolicySettings settings;
  settings.policy = config.policy;
  settings.queue_policy = config.queue.queue_policy;
  settings.las_thresholds_gpu_s = config.queue.las_thresholds_gpu_s;
  settings.las_starvation_ms = config.queue.las_starvation_ms;
  auto scheduler = sched::create_scheduler(settings);
  if (!scheduler) return scheduler.error();
  server->scheduler_ = std::move(*scheduler);
  // Desired-state versions only grow, also across restarts.
  server->version_clock_ = clock.now_ms() * 1000;
  if (!config.config_file.empty()) {
    auto loaded = load_server_config(config.config_file);
    if (!loaded) return loaded.error();
    server->file_config_ = std::move(*loaded);
  }
  if (!config.catalog_file.empty()) {
    auto catalog = cost::InstanceCatalog::load(config.catalog_file);
    if (!catalog) return catalog.error();
    spdlog::info("price catalog {}: {} offers", config.catalog_file, catalog->size());
    server->catalog_ = std::move(*catalog);
  }
  server->apply_tenants();
  GPUCLOUD_TRY(server->load_metrics_token());
  GPUCLOUD_TRY(server->bootstrap_tokens());
  GPUCLOUD_TRY(server->load_state());
  return server;
}

Status Server::bootstrap_tokens() {
  auto tokens = store_->load_tokens();
  if (!tokens) return tokens.error();
  bool have_admin = false, have_agent = false;
  for (const auto& t : *tokens) {
    have_admin |= t.name == "admin" && !t.revoked;
    have_agent |= t.name == "agent-join" && !t.revoked;
  }
  store::WriteBatch batch;
  auto make = [&](const std::string& name, const std::string& role,
                  const std::string& path) -> Status {
    // A token file that was deleted is replaced by a new token; the old one stops working.
    for (auto t : *tokens)
      if (t.name == name && !t.revoked) {
        t.revoked = true;
        batch.tokens.push_back(t);
      }
    std::string secret = random_token();
    GPUCLOUD_TRY(write_secret_file(path, secret));
    batch.tokens.push_back({net::sha256_hex(secret), name, role, {}, clock_.now_ms(), 0, false});
    batch.audit.push_back({clock_.now_ms(), "server", "token.create", name, "role " + role});
    spdlog::info("created the {} token in {}", name, path);
    return {};
  };
  if (!have_admin || !fs::exists(layout_.admin_token()))
    GPUCLOUD_TRY(make("admin", "admin", layout_.admin_token()));
  if (!have_agent || !fs::exists(layout_.agent_token()))
    GPUCLOUD_TRY(make("agent-join", "agent", layout_.agent_token()));
  GPUCLOUD_TRY(store_->commit(batch));
  tokens = store_->load_tokens();
  if (!tokens) return tokens.error();
  store_tokens_ = std::move(*tokens);
  GPUCLOUD_TRY(check_config_tokens(file_config_));
  apply_tokens();
  return {};
}

Status Server::check_config_tokens(const ServerFileConfig& config) const {
  // A config token must be a token of its own: one that reuses a token the server made
  // (admin.token, agent.token) would silently change that token's role.
  for (const auto& t : config.tokens)
    for (const auto& s : store_tokens_)
      if (t.sha256 == s.sha256)
        return invalid(
            fmt::format("{}: token '{}' is the server's own token '{}'; give it its own token",
                        config_.config_file, t.name, s.name));
  return {};
}

void Server::apply_tokens() {
  std::vector<store::TokenRecord> all = store_tokens_;
  all.insert(all.end(), file_config_.tokens.begin(), file_config_.tokens.end());
  auth_.set_tokens(all);
}

Status Server::reload_config() {
  if (config_.config_file.empty()) return {};
  auto loaded = load_server_config(config_.config_file);
  if (loaded) {
    if (auto st = check_config_tokens(*loaded); !st.ok()) loaded = st.error();
  }
  if (!loaded) {
    spdlog::error("config not reloaded, the previous one stays in force: {}",
                  loaded.error().message);
    store::WriteBatch batch;
    store::AuditEntry refused{clock_.now_ms(), "server", "config.reload", config_.config_file,
                              loaded.error().message};
    refused.outcome = "refused";
    batch.audit.push_back(std::move(refused));
    (void)commit(batch);
    return loaded.error();
  }
  file_config_ = std::move(*loaded);
  store::WriteBatch batch;
  batch.audit.push_back({clock_.now_ms(), "server", "config.reload", config_.config_file,
                         fmt::format("{} tenants, {} tokens", file_config_.tenants.size(),
                                     file_config_.tokens.size())});
  (void)commit(batch);
  apply_tokens();
  apply_tenants();
  // Owned-hardware profiles may have changed: new placements use the new prices (placed
  // replicas keep theirs).
  for (auto& [id, node] : nodes_) {
    node.price = cost::price_node(node.info, catalog_ ? &*catalog_ : nullptr, file_config_.cost);
    node_changed(id);
  }
  sched_full_sync_ = true;  // priorities may have changed: every job's request is rebuilt
  schedule_soon();          // quotas or priorities may have changed
  spdlog::info("config {}: {} tenants, {} tokens", config_.config_file, file_config_.tenants.size(),
               file_config_.tokens.size());
  return {};
}

Status Server::load_state() {
  auto jobs = store_->load_jobs(false);
  if (!jobs) return jobs.error();
  for (auto& job : *jobs) jobs_.emplace(job.id, std::move(job));
  auto nodes = store_->load_nodes();
  if (!nodes) return nodes.error();
  for (auto& node : *nodes) {
    auth_.set_node_credential(node.credential_sha256, node.id, node.info.name);
    // The node has not been heard from by this server process yet: start its clock now, so
    // a server restart alone does not mark healthy nodes down.
    node.last_seen = clock_.now_ms();
    runtime_[node.id].version = ++version_clock_;
    sched_dirty_nodes_.insert(node.id);
    put_node(node);
  }
  // What this process never saw happen is taken to have happened at load time: agents that
  // apply the first desired set of this server process have seen every placement and stop.
  for (const auto& [id, job] : jobs_) {
    for (const auto& r : job.replicas) {
      if (r.state == ReplicaState::kExited || !runtime_.count(r.node_id)) continue;
      auto& rt = runtime_[r.node_id];
      rt.jobs.insert(job.id);
      std::string key = replica_key(job.id, job.attempt, r.rank);
      rt.placed_at[key] = rt.version;
      if (attempt_ending(job)) rt.removed_at[key] = rt.version;
    }
  }
  spdlog::info("loaded {} active jobs and {} nodes from {}", jobs_.size(), nodes_.size(),
               layout_.database());
  return {};
}

Result<int> Server::start() {
  http_ = std::make_unique<net::HttpServer>(loop_,
                                            [this](net::HttpRequest&& req, net::Responder respond) {
                                              handle(std::move(req), std::move(respond));
                                            });
  http_->set_head_check([this](const net::HttpRequest& head) {
    auto refused = check_head(head);
    if (refused)
      metrics_->api_request(api_route_template(head.path), head.method, refused->status, 0);
    return refused;
  });
  net::HttpServerConfig http_config;
  http_config.host = config_.listen_host;
  http_config.port = config_.listen_port;
  http_config.max_connections = config_.max_connections;
  http_config.max_connections_per_source = config_.max_connections_per_source;
  int files = net::raise_open_file_limit();
  GPUCLOUD_TRY(prepare_tls(http_config));
  auto port = http_->listen(http_config);
  if (!port) return port.error();
  spdlog::info("open file limit {}: at most {} connections, {} per source", files,
               http_->max_connections(), http_config.max_connections_per_source);
  std::string host = config_.listen_host == "0.0.0.0" ? "127.0.0.1" : config_.listen_host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  url_ = fmt::format("{}://{}:{}", config_.tls ? "https" : "http", host, *port);
  GPUCLOUD_TRY(write_secret_file(layout_.address(), url_));
  // Node liveness, and a first scheduling pass for jobs loaded from the store.
  struct Ticker {
    static void arm(Server* s) {
      s->loop_.run_after(1000, [s] {
        s->check_node_liveness();
        s->log_connection_pressure();
        s->reclaim_idle_jobs();
        s->record_audit_head();
        s->check_budgets();
        // A quota window change the timer has not seen (an injected clock moved).
        if (s->quota_change_at_ && *s->quota_change_at_ <= s->clock_.now_ms())
          s->apply_quota_window_change();
        // A decision due without an event (queue policy las: a level crossing, a starving job).
        if (auto due = s->scheduler_->next_timed_decision();
            due && *due <= s->clock_.now_ms() && s->scheduler_->pending_count() > 0)
          s->schedule_soon();
        arm(s);
      });
    }
  };
  http_stats_logged_at_ = clock_.now_ms();
  Ticker::arm(this);
  schedule_soon();
  return *port;
}

void Server::log_connection_pressure() {
  TimeMs now = clock_.now_ms();
  if (now - http_stats_logged_at_ < 60'000) return;
  net::HttpServerStats now_stats = http_->stats();
  const net::HttpServerStats& was = logged_http_stats_;
  uint64_t refused = now_stats.refused_per_source - was.refused_per_source;
  uint64_t full = now_stats.refused_full - was.refused_full;
  uint64_t evicted = now_stats.evicted_idle - was.evicted_idle;
  uint64_t timeouts = now_stats.header_timeouts - was.header_timeouts;
  if (refused + full + evicted > 0)
    spdlog::warn(
        "http: in the last {}: {} connections refused (too many from one source), {} refused "
        "(all {} in use), {} idle ones closed to make room, {} closed without a request head in "
        "time; {} open",
        format_duration_ms(now - http_stats_logged_at_), refused, full, http_->max_connections(),
        evicted, timeouts, now_stats.open_connections);
  logged_http_stats_ = now_stats;
  http_stats_logged_at_ = now;
}

std::optional<net::HttpResponse> Server::check_head(const net::HttpRequest& head) {
  if (head.path == "/healthz") {
    // The one endpoint without a token: it never takes a body.
    bool has_body =
        !head.header("transfer-encoding").empty() ||
        (!head.header("content-length").empty() && head.header("content-length") != "0");
    if ((head.method == "GET" || head.method == "HEAD") && !has_body) return std::nullopt;
    auto r = error_response(
        {ErrorCode::kInvalidArgument, "/healthz accepts only GET or HEAD, without a body"});
    r.status = 405;
    r.headers.push_back({"Allow", "GET, HEAD"});
    return r;
  }
  if (head.path == "/metrics" || head.path == "/v1/sd/agents") return metrics_refusal(head);
  auto who = auth_.authenticate(head.header("authorization"), clock_.now_ms());
  if (!who) return unauthenticated(head);
  if (who->role == "node") http_->trust_source(head.remote_address);
  return std::nullopt;
}

net::HttpResponse Server::unauthenticated(const net::HttpRequest& req) const {
  std::string why = auth_.rejection(req.header("authorization"), clock_.now_ms());
  return error_response(
      {ErrorCode::kUnauthenticated,
       !why.empty() ? why
                    : "missing or invalid token: send 'Authorization: Bearer <token>' (the "
                      "CLI reads GPUCLOUD_TOKEN, or the admin.token file in the data dir)"});
}

void Server::handle(net::HttpRequest&& req, net::Responder respond) {
  // Every answer is counted by its route template (never the raw path: ids would make the
  // label unbounded).
  respond = [respond = std::move(respond), metrics = metrics_, route = api_route_template(req.path),
             method = req.method, started = std::chrono::steady_clock::now()](net::HttpResponse r) {
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    metrics->api_request(route, method, r.status, took.count());
    respond(std::move(r));
  };
  if (req.path == "/metrics") {
    if (auto refused = metrics_refusal(req)) return respond(std::move(*refused));
    return respond(serve_metrics(req));
  }
  if (req.path == "/v1/sd/agents") {
    if (auto refused = metrics_refusal(req)) return respond(std::move(*refused));
    return respond(serve_agent_discovery());
  }
  if (req.path == "/healthz") {
    respond(json_response(200, {{"status", "ok"}}));
    return;
  }
  // Checked again: the token may have been revoked while the body was read.
  auto who = auth_.authenticate(req.header("authorization"), clock_.now_ms());
  if (!who) return respond(unauthenticated(req));
  request_ = RequestContext{who->name, who->role, req.remote_address};
  // A change refused (a bad body, another tenant's job, a node credential where it may not go)
  // is audited too: who tried what, and why it was refused.
  if (req.method != "GET" && req.method != "HEAD")
    respond = [this, respond = std::move(respond), ctx = *request_,
               what = req.method + " " + api_route_template(req.path)](net::HttpResponse r) {
      if (r.status >= 400 && r.status < 500)
        loop_.post([this, ctx, what, status = r.status, body = r.body] {
          audit_refusal(ctx, what, status, body);
        });
      respond(std::move(r));
    };
  struct Clear {
    std::optional<RequestContext>& r;
    ~Clear() { r.reset(); }
  } clear{request_};
  try {
    route(req, *who, respond);
  } catch (const std::exception& e) {
    // A bug, not the caller's fault: answer with a JSON error instead of dropping the connection.
    spdlog::error("{} {}: unexpected error: {}", req.method, req.path, e.what());
    if (respond)  // not when a handler took it over (poll, logs) before throwing
      respond(error_response(internal(std::string("unexpected error: ") + e.what())));
  }
}

void Server::route(net::HttpRequest& req, const Principal& who, net::Responder& respond) {
  const std::string& p = req.path;
  const std::string& m = req.method;
  auto method_not_allowed = [&](const char* allowed) {
    auto r = error_response(
        {ErrorCode::kInvalidArgument, fmt::format("{} does not accept {}; use {}", p, m, allowed)});
    r.status = 405;
    r.headers.push_back({"Allow", allowed});
    respond(r);
  };
  if (p == "/v1/agent/poll") {
    if (m != "POST") return method_not_allowed("POST");
    if (who.role != "node")
      return respond(error_response(
          {ErrorCode::kPermissionDenied, "poll needs a node credential from /v1/agent/register"}));
    metrics_->agent_poll();
    return poll(req, who, std::move(respond));
  }
  if (p == "/v1/agent/register") {
    if (m != "POST") return method_not_allowed("POST");
    return register_node(req, who, std::move(respond));
  }
  if (who.role == "node")
    return respond(error_response(
        {ErrorCode::kPermissionDenied, "a node credential may only register and poll"}));
  if (who.role == "agent")
    return respond(error_response(
        {ErrorCode::kPermissionDenied, "an agent join token may only register nodes"}));
  if (p == "/v1/jobs") {
    if (m == "POST") return respond(submit_job(req, who));
    if (m == "GET") return list_jobs(req, who, std::move(respond));
    return method_not_allowed("GET, POST");
  }
  if (p == "/v1/audit") {
    if (m != "GET") return method_not_allowed("GET");
    return list_audit(req, who, std::move(respond));
  }
  if (p == "/v1/audit/verify") {
    if (m != "GET") return method_not_allowed("GET");
    return verify_audit(who, std::move(respond));
  }
  if (p == "/v1/events") {
    if (m != "GET") return method_not_allowed("GET");
    return list_events(req, who, std::move(respond));
  }
  if (p == "/v1/tenants") {
    if (m != "GET") return method_not_allowed("GET");
    return respond(list_tenants(who));
  }
  if (p == "/v1/cost") {
    if (m != "GET") return method_not_allowed("GET");
    return respond(cost_report(req, who));
  }
  if (p == "/v1/nodes") {
    if (m != "GET") return method_not_allowed("GET");
    return respond(list_nodes(who));
  }
  if (route_admin(req, who, respond)) return;
  const std::string jobs_prefix = "/v1/jobs/";
  if (p.rfind(jobs_prefix, 0) == 0) {
    std::string rest = p.substr(jobs_prefix.size());
    size_t slash = rest.find('/');
    std::string id = rest.substr(0, slash);
    std::string sub = slash == std::string::npos ? "" : rest.substr(slash + 1);
    if (sub.empty()) {
      if (m == "GET") {
        auto job = find_visible_job(id, who);
        if (!job) return respond(error_response(job.error()));
        nlohmann::json doc = job_to_json(*job);
        doc["cost"] = job_cost_json(*job);
        // How a GPU share is enforced where it runs (docs/containers.md, "Fractional GPUs"):
        // by MPS only for a process on a whole GPU of an MPS node.
        for (size_t i = 0; i < job->replicas.size() && i < doc["replicas"].size(); ++i) {
          const auto& r = job->replicas[i];
          auto node = nodes_.find(r.node_id);
          if (r.gpus.size() != 1 || r.gpus.front().milli >= 1000 || node == nodes_.end()) continue;
          bool mig = false;
          for (const auto& g : node->second.info.gpus)
            mig |= g.index == r.gpus.front().index && g.mig_parent >= 0;
          bool mps =
              node->second.info.gpu_sharing == "mps" && !mig && job->spec.container.image.empty();
          doc["replicas"][i]["gpu_sharing"] = mps ? "mps" : "best-effort";
        }
        return respond(json_response(200, doc));
      }
      if (m == "DELETE") return respond(cancel_job(id, who));
      return method_not_allowed("GET, DELETE");
    }
    if (sub == "cancel") {
      if (m != "POST") return method_not_allowed("POST");
      return respond(cancel_job(id, who));
    }
    if (sub == "logs") {
      if (m != "GET") return method_not_allowed("GET");
      return job_logs(req, id, who, std::move(respond));
    }
  }
  respond(
      error_response(not_found(fmt::format("no such endpoint: {} {} (see docs/api.md)", m, p))));
}

namespace {

template <class T>
void append(std::vector<T>& to, std::vector<T>& from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

void Server::commit_later(store::WriteBatch& batch, std::function<void()> then) {
  for (const auto& job : batch.jobs) sched_dirty_jobs_.insert(job.id);
  append(group_batch_.jobs, batch.jobs);
  append(group_batch_.nodes, batch.nodes);
  append(group_batch_.tokens, batch.tokens);
  complete_audit(batch);
  append(group_batch_.audit, batch.audit);
  append(group_batch_.ledger, batch.ledger);
  batch = {};
  group_waiters_.push_back(std::move(then));
  if (group_flush_posted_) return;
  group_flush_posted_ = true;
  // Posted: the requests already read by this turn of the loop queue their writes first.
  loop_.post([this] {
    group_flush_posted_ = false;
    store::WriteBatch none;
    (void)commit(none);
  });
}

Status Server::commit(store::WriteBatch& batch) {
  for (const auto& job : batch.jobs) sched_dirty_jobs_.insert(job.id);
  std::vector<std::function<void()>> waiters;
  if (!group_waiters_.empty()) {
    // What was queued first is written first (a later write of the same row wins).
    store::WriteBatch merged = std::move(group_batch_);
    group_batch_ = {};
    append(merged.jobs, batch.jobs);
    append(merged.nodes, batch.nodes);
    append(merged.tokens, batch.tokens);
    append(merged.audit, batch.audit);
    append(merged.ledger, batch.ledger);
    batch = std::move(merged);
    waiters.swap(group_waiters_);
  }
  complete_audit(batch);
  auto started = std::chrono::steady_clock::now();
  Status st = store_->commit(batch);
  metrics_->store_commit(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  if (!st.ok()) {
    // The in-memory state is ahead of the store now, and answers (acknowledged events, new
    // allocations) may follow from it. Stop rather than acknowledge what is not durable: a
    // restart reloads the store, and agents re-report what happened.
    spdlog::critical(
        "store commit failed: {}; stopping so that the state is reloaded from the store",
        st.error().message);
    std::_Exit(70);
  }
  batch = {};
  for (const auto& id : finished_) jobs_.erase(id);
  finished_.clear();
  for (auto& w : waiters) w();
  return st;
}

}  // namespace gpucloud::server
