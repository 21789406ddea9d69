// Operator commands: join tokens and node cordon/uncordon/drain.
#include <fmt/format.h>

#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "net/http_types.h"

namespace gpucloud::cli {

using json = nlohmann::json;

namespace {

std::string format_time(int64_t ms) {
  if (ms == 0) return "never";
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

int fail(const Error& error) {
  std::cerr << "error: " << error.message << "\n";
  return error.code == ErrorCode::kUnauthenticated || error.code == ErrorCode::kPermissionDenied
             ? kExitAuth
             : kExitError;
}

int cmd_token_create(const std::string& role, const std::string& ttl,
                     const std::vector<std::string>& tenants) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error());
  json body = {{"role", role}};
  if (!ttl.empty()) body["ttl"] = ttl;
  if (!tenants.empty()) body["tenants"] = tenants;
  auto r = api->call("POST", "/v1/tokens", &body);
  if (!r)
    return r.error().code == ErrorCode::kInvalidArgument ? (fail(r.error()), kExitUsage)
                                                         : fail(r.error());
  // The secret alone on stdout, so that $(gpucloud token create --role agent) works.
  std::cout << r->value("token", "") << std::endl;
  std::cerr << fmt::format("token {} (role {}), expires {}; it is shown only now\n",
                           r->value("name", ""), r->value("role", ""),
                           format_time(r->value("expires_at_ms", int64_t{0})));
  return 0;
}

int cmd_token_list(bool as_json) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error());
  auto r = api->call("GET", "/v1/tokens");
  if (!r) return fail(r.error());
  const json& tokens = (*r)["tokens"];
  if (as_json) {
    std::cout << tokens.dump(2) << "\n";
    return 0;
  }
  Table t({"NAME", "ROLE", "STATE", "CREATED", "EXPIRES"});
  for (const auto& tok : tokens)
    t.add({tok.value("name", ""), tok.value("role", ""), tok.value("state", ""),
           format_time(tok.value("created_at_ms", int64_t{0})),
           format_time(tok.value("expires_at_ms", int64_t{0}))});
  t.print(std::cout);
  return 0;
}

int cmd_token_revoke(const std::string& name) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error());
  auto r = api->call("POST", "/v1/tokens/" + net::url_encode(name) + "/revoke");
  if (!r) return fail(r.error());
  std::cout << fmt::format("token {} revoked\n", name);
  return 0;
}

int cmd_node_interrupt(const std::string& node, const std::string& in, const std::string& reason) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error());
  nlohmann::json body = {{"in", in}};
  if (!reason.empty()) body["reason"] = reason;
  auto r = api->call("POST", "/v1/nodes/" + net::url_encode(node) + "/interrupt", &body);
  if (!r) return fail(r.error());
  std::cout << fmt::format(
      "node {} is being reclaimed by {}: {} job(s) interrupted, to resume elsewhere\n",
      r->value("name", node), r->value("deadline", ""), r->value("jobs_interrupted", 0));
  return 0;
}

int cmd_node_action(const std::string& action, const std::string& node) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error());
  auto r = api->call("POST", "/v1/nodes/" + net::url_encode(node) + "/" + action);
  if (!r) return fail(r.error());
  if (action == "drain")
    std::cout << fmt::format(
        "node {} drained: no new work; {} job(s) interrupted and re-queued once stopped\n",
        r->value("name", node), r->value("jobs_interrupted", 0));
  else if (action == "remove")
    std::cout << fmt::format("node {} removed\n", r->value("name", node));
  else if (action == "replace")
    std::cout << fmt::format(
        "node {}: the next agent that joins with this name and a join token takes it over; its "
        "jobs' replicas there are marked lost\n",
        r->value("name", node));
  else
    std::cout << fmt::format("node {} {}\n", r->value("name", node),
                             action == "cordon" ? "cordoned: no new work" : "uncordoned");
  return 0;
}

}  // namespace gpucloud::cli
