// `gpucloud events`: a job's history, and the cluster's feed of job and node events, followed
// with -f by long-polling GET /v1/events (docs/api.md, "Events").
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "net/http_types.h"

namespace gpucloud::cli {

using json = nlohmann::json;

namespace {

// One feed event as a line: time, what happened, what it is about, details.
void print_line(const json& e) {
  std::string about =
      e.value("kind", "") == "node" ? "node " + e.value("node", "") : "job " + e.value("job", "");
  if (e.value("kind", "") == "job" && e.contains("node")) about += " on " + e.value("node", "");
  std::cout << fmt::format("{}  {:<24} {}: {}\n", e.value("at", ""), e.value("type", ""), about,
                           e.value("message", ""));
}

std::string feed_query(const EventsOptions& o, const std::string& job_id) {
  std::string q;
  auto add = [&](const char* name, const std::string& v) {
    if (!v.empty()) q += fmt::format("&{}={}", name, net::url_encode(v));
  };
  add("job", job_id);
  add("node", o.node);
  add("tenant", o.tenant);
  add("kind", o.kind);
  return q;
}

// A job's stored history: complete, also from before the server's last start.
int print_job_history(const json& job, const EventsOptions& o) {
  json events = job.value("events", json::array());
  if (o.json && !o.follow) {
    std::cout << events.dump(2) << "\n";
    return 0;
  }
  if (o.follow) {
    for (auto e : events) {
      e["kind"] = "job";
      e["job"] = job.value("id", "");
      if (o.json)
        std::cout << e.dump() << "\n";
      else
        print_line(e);
    }
    std::cout.flush();
    return 0;
  }
  Table t({"TIME", "EVENT", "DETAILS"});
  for (const auto& e : events)
    t.add({e.value("at", ""), e.value("type", ""), e.value("message", "")});
  t.print(std::cout);
  return 0;
}

}  // namespace

int cmd_events(const EventsOptions& o) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  std::string job_id;
  json job;
  // The feed's head before the job is read: what follows it is not in the job's history yet.
  int64_t after = -1;
  if (o.follow) {
    auto head = api->call("GET", "/v1/events?limit=1" + feed_query(o, ""));
    if (!head) return fail(head.error());
    after = head->value("next", int64_t{0});
  }
  if (!o.job.empty()) {
    auto j = api->call("GET", "/v1/jobs/" + net::url_encode(o.job));
    if (!j) return fail(j.error());
    job = *j;
    job_id = job.value("id", o.job);
    if (int code = print_job_history(job, o); code != 0 || !o.follow) return code;
  }
  // Events already printed from the job's history (by time and type), not to repeat them.
  std::set<std::pair<int64_t, std::string>> shown;
  int64_t shown_until = 0;
  for (const auto& e : job.is_object() ? job.value("events", json::array()) : json::array()) {
    shown.insert({e.value("at_ms", int64_t{0}), e.value("type", "")});
    shown_until = std::max(shown_until, e.value("at_ms", int64_t{0}));
  }
  std::string query = feed_query(o, job_id);
  if (job_id.empty()) {
    auto recent = api->call("GET", fmt::format("/v1/events?limit={}{}", o.last, query));
    if (!recent) return fail(recent.error());
    json events = recent->value("events", json::array());
    if (o.json && !o.follow) {
      std::cout << events.dump(2) << "\n";
      return 0;
    }
    for (const auto& e : events) o.json ? void(std::cout << e.dump() << "\n") : print_line(e);
    std::cout.flush();
    if (!o.follow) return 0;
    after = recent->value("next", after);
  }
  bool ended =
      !job.is_null() && job.value("state", "") != "pending" && job.value("state", "") != "running";
  int64_t feed = 0;
  while (!ended) {
    auto page = api->call(
        "GET", fmt::format("/v1/events?after={}&wait_ms=20000&limit=1000{}", after, query), nullptr,
        40'000);
    if (!page) return fail(page.error());
    int64_t this_feed = page->value("feed", int64_t{0});
    if (page->value("restarted", false) || (feed != 0 && this_feed != feed))
      std::cerr << "(the server restarted: events while it was away are not shown)\n";
    feed = this_feed;
    if (int64_t missed = page->value("missed", int64_t{0}); missed > 0)
      std::cerr << fmt::format("({} events were dropped before they could be shown)\n", missed);
    for (const auto& e : page->value("events", json::array())) {
      int64_t at = e.value("at_ms", int64_t{0});
      if (at < shown_until || shown.count({at, e.value("type", "")})) continue;
      o.json ? void(std::cout << e.dump() << "\n") : print_line(e);
      if (!job_id.empty() && e.value("type", "") == "ended") ended = true;
    }
    std::cout.flush();
    after = page->value("next", after);
  }
  return 0;
}

}  // namespace gpucloud::cli
