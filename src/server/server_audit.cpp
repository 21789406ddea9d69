// The audit log's API (docs/audit.md): who did what, as the store's hash chain keeps it.
// GET /v1/audit reads pages of it; GET /v1/audit/verify checks the chain against the head the
// server last recorded in <data-dir>/audit.head (outside the database, so that a cut tail
// shows).
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/json_fields.h"
#include "server/http_util.h"
#include "server/server.h"

namespace gpucloud::server {

using json = nlohmann::json;

namespace {

json entry_json(const store::AuditEntry& e) {
  return {{"seq", e.seq},       {"at", format_time_iso(e.at)},
          {"at_ms", e.at},      {"actor", e.actor},
          {"role", e.role},     {"source", e.source},
          {"action", e.action}, {"object", e.object},
          {"tenant", e.tenant}, {"outcome", e.outcome},
          {"detail", e.detail}, {"prev_hash", e.prev_hash},
          {"hash", e.hash}};
}

bool valid_action(const std::string& a) {
  if (a.empty() || a.size() > 64) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              (c == '*' && i + 1 == a.size());
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void Server::complete_audit(store::WriteBatch& batch) const {
  for (auto& e : batch.audit) {
    if (e.role.empty()) {
      if (request_ && e.actor == request_->actor) {
        e.role = request_->role;
        e.source = request_->source;
      } else if (e.actor == "server" || e.actor == "scheduler") {
        e.role = "system";
      }
    }
    // Active and just-ended jobs are in jobs_; a job being submitted is only in the batch.
    if (auto it = jobs_.find(e.object); e.tenant.empty() && it != jobs_.end())
      e.tenant = it->second.spec.tenant;
    for (size_t i = 0; e.tenant.empty() && i < batch.jobs.size(); ++i)
      if (batch.jobs[i].id == e.object) e.tenant = batch.jobs[i].spec.tenant;
  }
  if (!batch.audit.empty()) audit_written_ = true;
}

// A client that sends bad requests in a loop must not fill the log: the first ones each minute
// are kept, the rest counted in the server's log.
constexpr int kRefusalsAuditedPerMinute = 30;

void Server::audit_refusal(const RequestContext& ctx, const std::string& what, int status,
                           const std::string& body) {
  TimeMs now = clock_.now_ms();
  RefusalWindow& window = refusals_[ctx.actor];
  if (now - window.started >= 60'000) {
    if (window.dropped > 0)
      spdlog::warn("audit: {} more refused requests of {} in the minute from {} were not written",
                   window.dropped, ctx.actor, format_time_iso(window.started));
    window = {now, 0, 0};
  }
  if (++window.written > kRefusalsAuditedPerMinute) {
    ++window.dropped;
    return;
  }
  std::string message;
  json parsed = json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object())
    message = parsed["error"].value("message", "");
  if (message.size() > 300) message = message.substr(0, 297) + "...";
  store::AuditEntry e{now, ctx.actor, "request.refused", what.substr(0, 128), message};
  e.role = ctx.role;
  e.source = ctx.source;
  e.outcome = fmt::format("refused ({})", status);
  store::WriteBatch batch;
  batch.audit.push_back(std::move(e));
  if (auto st = commit(batch); !st.ok())
    spdlog::warn("audit: cannot write a refused request: {}", st.error().message);
}

void Server::record_audit_head() {
  if (!audit_written_) return;
  audit_written_ = false;
  auto head = store_->audit_head();
  if (!head || head->seq == 0) return;
  // The head recorded before must still be in the chain; if the log was cut and rewritten,
  // keep the old record so that `audit verify` shows it.
  if (auto recorded = read_audit_head_file()) {
    auto check = store_->audit_page({0, recorded->seq + 1, {}, "", 1});
    if (check && (check->empty() || check->front().seq != recorded->seq ||
                  check->front().hash != recorded->hash)) {
      spdlog::critical(
          "audit: entry {} recorded as the head in {} is no longer in the log as it was: the "
          "audit log was tampered with; `gpucloud audit verify` names the first broken entry",
          recorded->seq, layout_.audit_head());
      return;
    }
  }
  std::string text = json{{"seq", head->seq}, {"hash", head->hash}}.dump() + "\n";
  std::string tmp = layout_.audit_head() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (fd >= 0) ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), layout_.audit_head().c_str()) != 0)
    spdlog::warn("audit: cannot record the head in {}", layout_.audit_head());
}

std::optional<store::AuditHead> Server::read_audit_head_file() const {
  std::ifstream in(layout_.audit_head());
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    json j = json::parse(text.str());
    return store::AuditHead{j.at("seq").get<int64_t>(), j.at("hash").get<std::string>()};
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

void Server::list_audit(const net::HttpRequest& req, const Principal& who, net::Responder respond) {
  store::AuditQuery query;
  auto param = [&](const char* name) {
    auto it = req.query.find(name);
    return it == req.query.end() ? std::string() : it->second;
  };
  for (const auto& [name, value] : req.query)
    if (name != "since_ms" && name != "before_seq" && name != "tenant" && name != "action" &&
        name != "limit")
      return respond(error_response(invalid(
          fmt::format("{}: unknown parameter; expected since_ms, before_seq, tenant, action, limit",
                      name.substr(0, 64)))));
  if (std::string v = param("since_ms"); !v.empty()) {
    auto n = parse_whole_param(v, kJsonInt64Max);
    if (!n)
      return respond(error_response(invalid(
          fmt::format("since_ms: '{}' is not a time in ms since the epoch", v.substr(0, 32)))));
    query.since = *n;
  }
  if (std::string v = param("before_seq"); !v.empty()) {
    auto n = parse_whole_param(v, kJsonInt64Max);
    if (!n)
      return respond(error_response(
          invalid(fmt::format("before_seq: '{}' is not an entry number", v.substr(0, 32)))));
    query.before_seq = *n;
  }
  if (std::string v = param("limit"); !v.empty()) {
    auto n = parse_whole_param(v, 1000);
    if (!n || *n < 1)
      return respond(error_response(invalid(
          fmt::format("limit: '{}' is not a whole number from 1 to 1000", v.substr(0, 32)))));
    query.limit = static_cast<int>(*n);
  }
  if (std::string v = param("action"); !v.empty()) {
    if (!valid_action(v))
      return respond(error_response(invalid(
          fmt::format("action: '{}' is not an action like job.submit or a prefix like job.*",
                      v.substr(0, 64)))));
    query.action = v;
  }
  // A member reads only its tenants' entries; asking for another tenant gives nothing.
  std::string tenant = param("tenant");
  if (!tenant.empty()) {
    if (!who.may_act_for(tenant)) return respond(json_response(200, {{"entries", json::array()}}));
    query.tenants = {tenant};
  } else if (!who.is_admin()) {
    query.tenants = who.tenants;
    if (query.tenants.empty()) return respond(json_response(200, {{"entries", json::array()}}));
  }
  auto answer = std::make_shared<net::Responder>(std::move(respond));
  bool queued = background_->post([this, query, answer] {
    auto page = read_store_->audit_page(query);
    if (!page) return (*answer)(error_response(page.error()));
    json out = {{"entries", json::array()}};
    for (const auto& e : *page) out["entries"].push_back(entry_json(e));
    if (static_cast<int>(page->size()) == query.limit && !page->empty())
      out["next_before_seq"] = page->back().seq;
    (*answer)(json_response(200, out));
  });
  if (!queued)
    (*answer)(error_response(
        {ErrorCode::kUnavailable, "too many large reads in progress; retry in a moment"}));
}

void Server::verify_audit(const Principal& who, net::Responder respond) {
  if (!who.is_admin())
    return respond(error_response(
        {ErrorCode::kPermissionDenied, "verifying the audit log needs the admin token"}));
  record_audit_head();  // what was written up to now counts
  auto expected = read_audit_head_file();
  auto answer = std::make_shared<net::Responder>(std::move(respond));
  bool queued = background_->post([this, expected, answer] {
    auto v = read_store_->verify_audit(expected);
    if (!v) return (*answer)(error_response(v.error()));
    json out = {{"ok", v->ok},
                {"entries", v->entries},
                {"unchained", v->unchained},
                {"head", {{"seq", v->head.seq}, {"hash", v->head.hash}}},
                {"recorded_head", expected ? json{{"seq", expected->seq}, {"hash", expected->hash}}
                                           : json(nullptr)}};
    if (!v->ok) {
      out["broken_seq"] = v->broken_seq;
      out["problem"] = v->problem;
    }
    (*answer)(json_response(200, out));
  });
  if (!queued)
    (*answer)(error_response(
        {ErrorCode::kUnavailable, "too many large reads in progress; retry in a moment"}));
}

}  // namespace gpucloud::server
