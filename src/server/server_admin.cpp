// Operator endpoints: join tokens (create, list, revoke), node cordon/uncordon/drain, and the
// server's TLS certificate.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "model/json_fields.h"
#include "net/crypto.h"
#include "net/tls.h"
#include "server/http_util.h"
#include "server/server.h"

namespace gpucloud::server {

using json = nlohmann::json;

namespace {

constexpr int64_t kDefaultTokenTtlMs = 24 * 3600 * 1000LL;
constexpr int64_t kMaxSpotNoticeMs = 3'600'000;  // a notice further ahead is not a notice
constexpr int64_t kMaxTokenTtlMs = 3650 * 24 * 3600 * 1000LL;

std::string token_state(const store::TokenRecord& t, TimeMs now) {
  if (t.revoked) return "revoked";
  if (t.expires_at != 0 && t.expires_at <= now) return "expired";
  return "active";
}

Error admin_only(const char* what) {
  return {ErrorCode::kPermissionDenied, fmt::format("{} needs the admin token", what)};
}

}  // namespace

bool Server::route_admin(net::HttpRequest& req, const Principal& who, net::Responder& respond) {
  const std::string& p = req.path;
  const std::string& m = req.method;
  auto not_allowed = [&](const char* allowed) {
    auto r = error_response(
        {ErrorCode::kInvalidArgument, fmt::format("{} does not accept {}; use {}", p, m, allowed)});
    r.status = 405;
    r.headers.push_back({"Allow", allowed});
    respond(r);
    return true;
  };
  if (p == "/v1/tokens") {
    if (m == "POST") return respond(create_token(req, who)), true;
    if (m == "GET") return respond(list_tokens(who)), true;
    return not_allowed("GET, POST");
  }
  const std::string tokens_prefix = "/v1/tokens/";
  if (p.rfind(tokens_prefix, 0) == 0) {
    std::string rest = p.substr(tokens_prefix.size());
    const std::string revoke_suffix = "/revoke";
    bool revoke_path =
        rest.size() > revoke_suffix.size() &&
        rest.compare(rest.size() - revoke_suffix.size(), revoke_suffix.size(), revoke_suffix) == 0;
    if (revoke_path && m != "POST") return not_allowed("POST");
    if (!revoke_path && m != "DELETE") return not_allowed("DELETE");
    if (revoke_path) rest.resize(rest.size() - revoke_suffix.size());
    return respond(revoke_token(rest, who)), true;
  }
  const std::string nodes_prefix = "/v1/nodes/";
  if (p.rfind(nodes_prefix, 0) == 0) {
    std::string rest = p.substr(nodes_prefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string::npos) return false;
    if (m != "POST") return not_allowed("POST");
    return respond(node_action(rest.substr(0, slash), rest.substr(slash + 1), who, req.body)), true;
  }
  return false;
}

net::HttpResponse Server::create_token(const net::HttpRequest& req, const Principal& who) {
  if (!who.is_admin()) return error_response(admin_only("creating tokens"));
  auto body = parse_json_body(req.body.empty() ? "{}" : req.body);
  if (!body) return error_response(body.error());
  if (!body->is_object()) return error_response(invalid("token: expected a JSON object"));
  for (const auto& [key, value] : body->items())
    if (key != "role" && key != "ttl" && key != "tenants")
      return error_response(invalid(fmt::format(
          "token: unknown field '{}'; a token has role, ttl and tenants", key.substr(0, 64))));
  if (!body->contains("role") || !(*body)["role"].is_string())
    return error_response(
        invalid("token role must be a string: \"agent\", \"member\" or \"admin\""));
  std::string role = (*body)["role"].get<std::string>();
  if (role != "agent" && role != "admin" && role != "member")
    return error_response(invalid(fmt::format(
        "token role '{}' is not agent, member or admin (--role agent makes a join token for "
        "new nodes)",
        role.substr(0, 64))));
  TimeMs now = clock_.now_ms();
  int64_t ttl_ms = kDefaultTokenTtlMs;
  if (body->contains("ttl")) {
    if (!(*body)["ttl"].is_string())
      return error_response(invalid("token ttl must be a string such as \"24h\" or \"0\""));
    std::string ttl = (*body)["ttl"].get<std::string>();
    if (ttl == "0" || ttl == "never") {
      ttl_ms = 0;
    } else {
      // Only "0" or "never" mean no expiry: a duration that comes out as 0 (0s, 0.1ms) is a
      // mistake, not a wish for a token that never expires.
      auto parsed = parse_duration_ms(ttl);
      if (!parsed || *parsed < 1000 || *parsed > kMaxTokenTtlMs)
        return error_response(invalid(fmt::format(
            "token ttl '{}' must be a duration from 1s to 3650d (e.g. 30m, 24h, 7d), or 0 or "
            "never for a token that does not expire",
            ttl.substr(0, 64))));
      ttl_ms = *parsed;
    }
  }
  store::TokenRecord record;
  record.role = role;
  if (body->contains("tenants") && role != "member")
    return error_response(
        invalid(fmt::format("tenants are for member tokens; a{} {} token acts for every tenant",
                            role == "admin" ? "n" : "", role)));
  if (role == "member") {
    if (!body->contains("tenants") || !(*body)["tenants"].is_array() || (*body)["tenants"].empty())
      return error_response(invalid("a member token needs \"tenants\": [\"team-a\", ...]"));
    if ((*body)["tenants"].size() > 1000)
      return error_response(invalid("a member token may name at most 1000 tenants"));
    for (const auto& t : (*body)["tenants"]) {
      if (!t.is_string()) return error_response(invalid("tenants must be strings"));
      std::string tenant = t.get<std::string>();
      if (auto st = check_tenant_name(tenant); !st.ok()) return error_response(st.error());
      record.tenants.push_back(tenant);
    }
  }
  std::string secret = random_token();
  record.sha256 = net::sha256_hex(secret);
  record.name = fmt::format("{}-{}", role == "agent" ? "join" : role, record.sha256.substr(0, 8));
  record.created_at = now;
  record.expires_at = ttl_ms == 0 ? 0 : now + ttl_ms;
  store::WriteBatch batch;
  batch.tokens.push_back(record);
  batch.audit.push_back(
      {now, who.name, "token.create", record.name,
       fmt::format("role {}, ttl {}", role, ttl_ms == 0 ? "none" : format_duration_ms(ttl_ms))});
  if (auto st = commit(batch); !st.ok()) return error_response(st.error());
  store_tokens_.push_back(record);
  apply_tokens();
  spdlog::info("{} created token {} (role {})", who.name, record.name, role);
  return json_response(201, {{"name", record.name},
                             {"role", role},
                             {"token", secret},
                             {"created_at_ms", record.created_at},
                             {"expires_at_ms", record.expires_at}});
}

Status Server::check_tenant_name(const std::string& tenant) const {
  bool valid = !tenant.empty() && tenant.size() <= 63;
  for (char c : tenant)
    valid &= std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  if (!valid)
    return invalid(
        fmt::format("tenant '{}' is not a tenant name: 1 to 63 letters, digits, '-', '_' or '.'",
                    tenant.substr(0, 64)));
  if (tenant == "default" || file_config_.tenants.empty()) return {};
  std::string known = "default";
  for (const auto& t : file_config_.tenants) {
    if (t.name == tenant) return {};
    known += ", " + t.name;
  }
  return invalid(fmt::format(
      "tenant '{}' does not exist (tenants: {}); add it to the server's --config file first",
      tenant, known));
}

net::HttpResponse Server::list_tokens(const Principal& who) {
  if (!who.is_admin()) return error_response(admin_only("listing tokens"));
  TimeMs now = clock_.now_ms();
  json out = json::array();
  for (const auto& t : store_tokens_)
    out.push_back({{"name", t.name},
                   {"role", t.role},
                   {"tenants", t.tenants},
                   {"state", token_state(t, now)},
                   {"created_at_ms", t.created_at},
                   {"expires_at_ms", t.expires_at}});
  return json_response(200, {{"tokens", out}});
}

net::HttpResponse Server::revoke_token(const std::string& name, const Principal& who) {
  if (!who.is_admin()) return error_response(admin_only("revoking tokens"));
  if (name == "admin")
    return error_response({ErrorCode::kConflict,
                           "the server's own admin token cannot be revoked over the API; delete "
                           "<data-dir>/admin.token and restart the server to replace it"});
  for (auto& t : store_tokens_) {
    if (t.name != name) continue;
    if (!t.revoked) {
      TimeMs now = clock_.now_ms();
      store::TokenRecord updated = t;
      updated.revoked = true;
      store::WriteBatch batch;
      batch.tokens.push_back(updated);
      batch.audit.push_back({now, who.name, "token.revoke", name, "role " + t.role});
      if (auto st = commit(batch); !st.ok()) return error_response(st.error());
      t.revoked = true;
      apply_tokens();
      spdlog::info("{} revoked token {}", who.name, name);
    }
    return json_response(200, {{"name", name}, {"state", "revoked"}});
  }
  return error_response(
      not_found(fmt::format("no token named '{}'; `gpucloud token list` shows the names", name)));
}

net::HttpResponse Server::node_action(const std::string& node, const std::string& action,
                                      const Principal& who, const std::string& body) {
  if (action != "cordon" && action != "uncordon" && action != "drain" && action != "replace" &&
      action != "interrupt" && action != "remove")
    return error_response(not_found(fmt::format(
        "no such node action '{}': use cordon, uncordon, drain, replace, interrupt or remove "
        "(see docs/api.md)",
        action.substr(0, 64))));
  if (!who.is_admin()) return error_response(admin_only(("node " + action).c_str()));
  store::NodeRecord* rec = nullptr;
  for (auto& [id, n] : nodes_)
    if (id == node || n.info.name == node) rec = &n;
  if (!rec)
    return error_response(
        not_found(fmt::format("no node named '{}'; `gpucloud nodes` lists them", node)));
  if (action == "interrupt") return interrupt_node(*rec, body, who);
  if (action == "remove") return remove_node(*rec, who);
  TimeMs now = clock_.now_ms();
  store::WriteBatch batch;
  if (action == "replace") {
    // The next agent that registers with this name and a join token takes the record over
    // (its replicas here are then marked lost): for a machine that lost its agent state.
    if (rec->state == "ready")
      return error_response(
          {ErrorCode::kConflict,
           fmt::format("node {} is ready (its agent is polling); stop that agent first, or "
                       "give the new machine another name",
                       rec->info.name)});
    rec->replace_approved = true;
    batch.nodes.push_back(*rec);
    batch.audit.push_back({now, who.name, "node.replace", rec->id, rec->info.name});
    if (auto st = commit(batch); !st.ok()) return error_response(st.error());
    spdlog::info("{}: node {} may be replaced by the next agent registering with its name",
                 who.name, rec->info.name);
    return json_response(200, {{"id", rec->id},
                               {"name", rec->info.name},
                               {"state", rec->state},
                               {"replace_approved", true}});
  }
  rec->cordoned = action != "uncordon";
  batch.nodes.push_back(*rec);
  batch.audit.push_back({now, who.name, "node." + action, rec->id, rec->info.name});
  int interrupted = 0;
  if (action == "drain") {
    // Each job with a replica here stops as a whole (a gang restarts together) and is
    // re-queued once its replicas have had their interruption signal and grace period.
    for (Job* job_here : jobs_on(rec->id)) {
      Job& job = *job_here;
      if (stop_requested(job) || is_terminal(job.state)) continue;
      job.interrupt_reason = fmt::format("node {} is draining", rec->info.name);
      job.message = job.interrupt_reason;
      stop_replicas(job, interrupt_cause::kDrain, job.interrupt_reason);
      batch.jobs.push_back(job);
      batch.audit.push_back({now, who.name, "job.interrupt", job.id, job.message});
      ++interrupted;
    }
  }
  if (auto st = commit(batch); !st.ok()) return error_response(st.error());
  spdlog::info("{}: node {} {}{}", who.name, rec->info.name, action,
               action == "drain" ? fmt::format(" ({} jobs interrupted)", interrupted) : "");
  node_changed(rec->id);  // the scheduler is told at its next pass
  record_node_event(
      rec->info.name,
      action == "drain"      ? "draining"
      : action == "uncordon" ? "uncordoned"
                             : "cordoned",
      fmt::format("by {}{}", who.name,
                  action == "drain" ? fmt::format(" ({} jobs interrupted)", interrupted) : ""));
  return json_response(200, {{"id", rec->id},
                             {"name", rec->info.name},
                             {"cordoned", rec->cordoned},
                             {"jobs_interrupted", interrupted}});
}

net::HttpResponse Server::remove_node(store::NodeRecord& node, const Principal& who) {
  if (node.state != "down" && node.state != "gone" && node.state != "left")
    return error_response(
        {ErrorCode::kConflict,
         fmt::format("node {} is {}; only a node that is down, gone or left can be removed (stop "
                     "its agent first, or wait until it is down)",
                     node.info.name, node.state)});
  for (Job* job : jobs_on(node.id))
    for (const auto& r : job->replicas)
      if (r.node_id == node.id && r.state != ReplicaState::kExited && !is_terminal(job->state))
        return error_response(
            {ErrorCode::kConflict, fmt::format("node {} still has a replica of job {} that has not "
                                               "ended; try again once it has",
                                               node.info.name, job->id)});
  TimeMs now = clock_.now_ms();
  store::WriteBatch batch;
  batch.removed_nodes.push_back(node.id);
  batch.audit.push_back({now, who.name, "node.remove", node.id, node.info.name});
  if (auto st = commit(batch); !st.ok()) return error_response(st.error());
  record_node_event(node.info.name, "removed", "by " + who.name);
  std::string id = node.id, name = node.info.name;
  if (auto named = node_ids_by_name_.find(name); named != node_ids_by_name_.end()) {
    named->second.erase(id);
    if (named->second.empty()) node_ids_by_name_.erase(named);
  }
  nodes_.erase(id);  // `node` is gone from here on
  runtime_.erase(id);
  auth_.remove_node_credential(id);  // its agent joins again with a join token
  node_builds_.reset();
  node_changed(id);  // the scheduler forgets it at its next pass
  spdlog::info("{}: removed node {} ({})", who.name, name, id);
  return json_response(200, {{"id", id}, {"name", name}, {"state", "removed"}});
}

int Server::begin_spot_interruption(store::NodeRecord& node, TimeMs deadline,
                                    const std::string& reason, const std::string& actor,
                                    store::WriteBatch& batch) {
  TimeMs now = clock_.now_ms();
  deadline = std::clamp<TimeMs>(deadline, now, now + kMaxSpotNoticeMs);
  int64_t in_ms = deadline - now;
  node.state = "interrupting";  // no new work from now on
  record_node_event(node.info.name, "interrupting",
                    fmt::format("spot notice: gone in {}: {}", format_duration_ms(in_ms), reason));
  batch.nodes.push_back(node);
  batch.audit.push_back({now, actor, "node.interrupt", node.id,
                         fmt::format("in {}: {}", format_duration_ms(in_ms), reason)});
  int interrupted = 0;
  std::string why = fmt::format("spot notice for node {}: {}", node.info.name, reason);
  for (Job* job_here : jobs_on(node.id)) {
    Job& job = *job_here;
    if (stop_requested(job) || is_terminal(job.state) || job.replicas.empty()) continue;
    job.interrupt_reason = why;
    job.message = fmt::format("{}; stopping by {}", why, format_time_iso(deadline));
    stop_replicas(job, interrupt_cause::kSpot, why, deadline);
    batch.jobs.push_back(job);
    batch.audit.push_back({now, actor, "job.interrupt", job.id, why});
    ++interrupted;
  }
  node_changed(node.id);
  spdlog::info("{}: spot notice for node {} ({} jobs interrupted, gone in {})", actor,
               node.info.name, interrupted, format_duration_ms(in_ms));
  std::string node_id = node.id;
  loop_.run_after(in_ms, [this, node_id] {
    auto it = nodes_.find(node_id);
    if (it == nodes_.end() || it->second.state != "interrupting") return;
    it->second.state = "gone";
    record_node_event(it->second.info.name, "gone", "spot notice ended");
    store::WriteBatch gone;
    gone.nodes.push_back(it->second);
    gone.audit.push_back({clock_.now_ms(), "server", "node.gone", node_id, "spot notice ended"});
    (void)commit(gone);
    node_changed(node_id);
  });
  return interrupted;
}

net::HttpResponse Server::interrupt_node(store::NodeRecord& node, const std::string& body,
                                         const Principal& who) {
  auto doc = parse_json_body(body.empty() ? "{}" : body);
  if (!doc) return error_response(doc.error());
  if (!doc->is_object()) return error_response(invalid("interrupt: expected a JSON object"));
  for (const auto& [key, value] : doc->items())
    if (key != "in" && key != "reason")
      return error_response(invalid(fmt::format(
          "interrupt: unknown field '{}'; a notice has in and reason", key.substr(0, 64))));
  int64_t in_ms = 120'000;  // the common provider notice
  if (doc->contains("in")) {
    const auto& in = (*doc)["in"];
    auto parsed = in.is_string() ? parse_duration_ms(in.get<std::string>())
                                 : Result<int64_t>(invalid("not a string"));
    if (!parsed || *parsed > kMaxSpotNoticeMs)
      return error_response(invalid(fmt::format(
          "interrupt: in {} must be a duration from 0s to 1h, e.g. \"120s\"", json_excerpt(in))));
    in_ms = *parsed;
  }
  std::string reason = "the provider reclaims this spot node";
  if (doc->contains("reason")) {
    if (!(*doc)["reason"].is_string() || (*doc)["reason"].get<std::string>().size() > 256)
      return error_response(invalid("interrupt: reason must be a string of at most 256 bytes"));
    reason = (*doc)["reason"].get<std::string>();
  }
  if (node.state == "gone" || node.state == "left")
    return error_response(
        {ErrorCode::kConflict, fmt::format("node {} is {} already", node.info.name, node.state)});
  TimeMs deadline = clock_.now_ms() + in_ms;
  store::WriteBatch batch;
  int interrupted = begin_spot_interruption(node, deadline, reason, who.name, batch);
  if (auto st = commit(batch); !st.ok()) return error_response(st.error());
  return json_response(200, {{"id", node.id},
                             {"name", node.info.name},
                             {"state", node.state},
                             {"deadline", format_time_iso(deadline)},
                             {"jobs_interrupted", interrupted}});
}

Status Server::prepare_tls(net::HttpServerConfig& http) {
  if (!config_.tls) return {};
  std::string cert = config_.tls_cert_file, key = config_.tls_key_file;
  if (cert.empty() != key.empty())
    return invalid(
        "give both --tls-cert FILE and --tls-key FILE, or neither (then a self-signed "
        "certificate is made in the data dir)");
  if (cert.empty()) {
    cert = layout_.tls_cert();
    key = layout_.tls_key();
    namespace fs = std::filesystem;
    if (!fs::exists(cert) || !fs::exists(key)) {
      std::error_code ec;
      fs::create_directories(layout_.root + "/tls", ec);
      // The key is written before it is made 0600: its directory is closed to others first.
      fs::permissions(layout_.root + "/tls", fs::perms::owner_all, ec);
      std::vector<std::string> ips = net::local_addresses();
      if (config_.listen_host != "0.0.0.0" && config_.listen_host != "::")
        ips.push_back(config_.listen_host);
      char hostname[256] = {};
      ::gethostname(hostname, sizeof hostname - 1);
      GPUCLOUD_TRY(net::generate_self_signed(cert, key, ips, {hostname}));
      spdlog::info("created a self-signed TLS certificate {}", cert);
    }
  }
  auto fp = net::certificate_fingerprint(cert);
  if (!fp) return fp.error();
  tls_fingerprint_ = *fp;
  auto not_after = net::certificate_not_after(cert);
  if (!not_after) return not_after.error();
  tls_not_after_s_ = *not_after;
  tls_cert_file_ = cert;
  http.tls_cert_file = cert;
  http.tls_key_file = key;
  return {};
}

}  // namespace gpucloud::server
