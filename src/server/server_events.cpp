// The cluster's events feed (docs/api.md, "Events"): job lifecycle and node changes as they
// happen, read with GET /v1/events and followed by long-poll (`gpucloud events -f`).
#include <fmt/format.h>

#include "model/json_fields.h"
#include "server/http_util.h"
#include "server/server.h"

namespace gpucloud::server {

using nlohmann::json;

namespace {

json event_json(const FeedEvent& e) {
  json j = {{"seq", e.seq},   {"at", format_time_iso(e.at)}, {"at_ms", e.at}, {"kind", e.kind},
            {"type", e.type}, {"message", e.message}};
  if (!e.job.empty()) j["job"] = e.job;
  if (!e.tenant.empty()) j["tenant"] = e.tenant;
  if (!e.node.empty()) j["node"] = e.node;
  return j;
}

}  // namespace

void Server::record_job_event(Job& job, TimeMs at, std::string type, std::string message) {
  // The node, when every replica is on one (most jobs); replicas on several name none.
  bool one_node = !job.replicas.empty();
  for (const auto& r : job.replicas) one_node = one_node && r.node_id == job.replicas[0].node_id;
  std::string node_name;
  if (one_node)
    if (auto node = nodes_.find(job.replicas[0].node_id); node != nodes_.end())
      node_name = node->second.info.name;
  feed_.publish({0, at, "job", type, job.id, job.spec.tenant, node_name, message});
  add_job_event(job, at, std::move(type), std::move(message));
}

void Server::record_node_event(const std::string& node, std::string type, std::string message) {
  feed_.publish({0, clock_.now_ms(), "node", std::move(type), "", "", node, std::move(message)});
}

void Server::list_events(const net::HttpRequest& req, const Principal& who,
                         net::Responder respond) {
  static const char* kParams = "after, job, node, tenant, kind, limit, wait_ms";
  for (const auto& [name, value] : req.query)
    if (name != "after" && name != "job" && name != "node" && name != "tenant" && name != "kind" &&
        name != "limit" && name != "wait_ms")
      return respond(error_response(
          invalid(fmt::format("{}: unknown parameter; expected {}", name.substr(0, 64), kParams))));
  auto param = [&](const char* name) {
    auto it = req.query.find(name);
    return it == req.query.end() ? std::string() : it->second;
  };
  auto number = [&](const char* name, int64_t def, int64_t lo, int64_t hi) -> Result<int64_t> {
    std::string v = param(name);
    if (v.empty()) return def;
    auto n = parse_whole_param(v, hi);
    if (!n || *n < lo)
      return invalid(fmt::format("{}: '{}' is not a whole number from {} to {}", name,
                                 v.substr(0, 32), lo, hi));
    return *n;
  };
  auto limit = number("limit", 100, 1, 1000);
  auto wait_ms = number("wait_ms", 0, 0, 60'000);
  auto after = number("after", -1, 0, kJsonInt64Max);
  for (auto* r : {&limit, &wait_ms, &after})
    if (!r->ok()) return respond(error_response(r->error()));

  FeedFilter filter;
  filter.kind = param("kind");
  if (!filter.kind.empty() && filter.kind != "job" && filter.kind != "node")
    return respond(error_response(
        invalid(fmt::format("kind: '{}' is not job or node", filter.kind.substr(0, 32)))));
  filter.node = param("node");
  if (filter.node.size() > 253)
    return respond(error_response(invalid("node: longer than 253 characters")));
  filter.tenant = param("tenant");
  if (!filter.tenant.empty())
    if (Status s = check_tenant_name(filter.tenant); !s.ok())
      return respond(error_response(s.error()));
  if (std::string id = param("job"); !id.empty()) {
    auto job = find_visible_job(id, who);  // a prefix is resolved; another tenant's job is 404
    if (!job) return respond(error_response(job.error()));
    filter.job = job->id;
  }
  filter.may_see_tenant = [who](const std::string& tenant) { return who.may_act_for(tenant); };

  // A follower whose `after` is from before a restart (the feed began anew) starts over.
  bool restarted = *after > feed_.head();
  auto answer = [this, filter, limit = static_cast<size_t>(*limit), after = *after,
                 restarted](net::Responder& respond) {
    FeedPage page = after < 0 ? feed_.read_newest(filter, limit)
                              : feed_.read_after(restarted ? 0 : after, filter, limit);
    json events = json::array();
    for (const auto& e : page.events) events.push_back(event_json(e));
    json body = {{"events", std::move(events)},
                 {"next", page.next},
                 {"missed", page.missed},
                 {"feed", feed_started_}};
    if (restarted) body["restarted"] = true;
    respond(json_response(200, body));
  };
  bool has_news = *after < 0 || restarted || !feed_.read_after(*after, filter, 1).events.empty();
  if (has_news || *wait_ms == 0 || feed_.waiter_count() >= kMaxEventWaiters) return answer(respond);

  // Held until a matching event arrives or wait_ms passes. Events that do not match re-arm it.
  struct Hold {
    net::Responder respond;
    bool done = false;
    uint64_t waiter = 0;
  };
  auto hold = std::make_shared<Hold>();
  hold->respond = std::move(respond);
  auto finish = [hold, answer]() mutable {
    if (hold->done) return;
    hold->done = true;
    answer(hold->respond);
  };
  auto arm = std::make_shared<std::function<void()>>();
  auto scanned = std::make_shared<int64_t>(*after);  // events up to here did not match
  *arm = [this, hold, finish, arm, filter, scanned]() mutable {
    if (hold->done) return;
    FeedPage page = feed_.read_after(*scanned, filter, 1);
    if (!page.events.empty()) return finish();
    *scanned = page.next;
    std::weak_ptr<std::function<void()>> again = arm;
    hold->waiter = feed_.on_next_publish([again] {
      if (auto fn = again.lock(); fn && *fn) (*fn)();
    });
  };
  (*arm)();
  loop_.run_after(*wait_ms, [this, hold, finish, arm]() mutable {
    feed_.cancel_waiter(hold->waiter);
    finish();
    *arm = nullptr;  // breaks the cycle arm -> lambda -> arm
  });
}

}  // namespace gpucloud::server
