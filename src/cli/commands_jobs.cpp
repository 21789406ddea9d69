// run, submit, ps, show, logs, cancel, nodes.
#include <fmt/format.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "common/clock.h"
#include "common/units.h"
#include "model/job_spec.h"
#include "model/json_limits.h"
#include "model/spot_price.h"
#include "model/yaml_json.h"
#include "net/http_types.h"

namespace gpucloud::cli {

using json = nlohmann::json;

int fail(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return kExitError;
}

namespace {

// A flag value as JSON: a number when it reads as one, else the string (validation then says
// what is wrong with it, naming the field).
json number_or_string(const std::string& text) {
  if (text.empty()) return text;
  try {
    size_t used = 0;
    long long n = std::stoll(text, &used);
    if (used == text.size()) return n;
    double d = std::stod(text, &used);
    if (used == text.size()) return d;
  } catch (...) {
  }
  return text;
}

Result<std::map<std::string, std::string>> parse_pairs(const std::vector<std::string>& items,
                                                       const char* flag) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid(fmt::format("{} '{}' is not KEY=VALUE", flag, item));
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

std::string current_dir() {
  std::error_code ec;
  auto p = std::filesystem::current_path(ec);
  return ec ? std::string() : p.string();
}

int exit_code_of(const json& job) {
  std::string state = job.value("state", "");
  if (state == "succeeded") return 0;
  if (state == "lost") return kExitLost;
  if (state == "idle-reclaimed") return kExitError;  // whatever its exit code after SIGTERM
  if (job.contains("exit_code") && job["exit_code"].is_number_integer())
    return job["exit_code"].get<int>();
  return kExitError;
}

int wait_for(ApiClient& api, const std::string& id) {
  int delay_ms = 20;
  for (;;) {
    auto job = api.call("GET", "/v1/jobs/" + net::url_encode(id));
    if (!job) return fail(job.error().message);
    std::string state = job->value("state", "");
    if (state != "pending" && state != "running") {
      if (state != "succeeded" && !job->value("message", "").empty())
        std::cerr << fmt::format("job {} {}: {}\n", id, state, job->value("message", ""));
      return exit_code_of(*job);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 500);
  }
}

// Prints a dry run's answer: where the job would run now and its cost per hour, or why it
// would wait.
int print_dry_run(const json& answer) {
  if (!answer.value("would_run", false) && !answer.contains("replicas")) {
    std::cout << "would wait: " << answer.value("reason", "") << "\n";
    return 0;
  }
  // Held by the tenant's budget: where it fits now, and why it would still wait.
  const char* verb = answer.value("would_run", false) ? "would run on" : "fits on";
  for (const auto& r : answer["replicas"]) {
    double price = r.value("usd_per_hour", -1.0);
    std::cout << fmt::format(
        "replica {} {} {} at {}\n", r.value("rank", 0), verb, r.value("node", ""),
        price < 0 ? std::string("no known price")
                  : fmt::format("${:.4f}/h ({})", price, r.value("price_source", "")));
  }
  std::cout << fmt::format("cost: ${:.4f} per hour\n", answer.value("usd_per_hour", 0.0));
  if (answer.contains("max_runtime_usd"))
    std::cout << fmt::format("over its max_runtime: ${:.2f} here\n",
                             answer.value("max_runtime_usd", 0.0));
  if (answer.contains("budget_left_usd"))
    std::cout << fmt::format("budget: ${:.2f} left this month; its worst case is ${:.2f}\n",
                             answer.value("budget_left_usd", 0.0),
                             answer.value("worst_case_usd", 0.0));
  if (!answer.value("would_run", false))
    std::cout << "would wait: " << answer.value("reason", "") << "\n";
  return 0;
}

int submit_spec(json spec, bool wait, bool dry_run = false) {
  // A container's workdir is a path inside its image (its WORKDIR unless given).
  if (!spec.contains("workdir") && !spec.contains("image")) spec["workdir"] = current_dir();
  if (auto checked = job_spec_from_json(spec); !checked) {
    std::cerr << "error: " << checked.error().message << "\n";
    return kExitUsage;
  }
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  auto job = api->call("POST", dry_run ? "/v1/jobs?dry_run=1" : "/v1/jobs", &spec);
  if (!job) return fail(job.error().message);
  if (dry_run) return print_dry_run(*job);
  std::string id = job->value("id", "");
  std::cout << id << std::endl;
  return wait ? wait_for(*api, id) : 0;
}

std::string short_id(const std::string& id) {
  return id.substr(0, 12);
}

std::string gpus_column(const json& job) {
  const json& spec = job["spec"];
  int gpus = spec.value("gpus", 0), milli = spec.value("gpu_milli", 0),
      replicas = spec.value("replicas", 1);
  std::string model = spec.value("gpu_model", "");
  std::string per = milli > 0 ? fmt::format("{:g}", milli / 1000.0) : std::to_string(gpus);
  if (gpus == 0 && milli == 0) return "-";
  std::string s = per + (model.empty() ? "" : "×" + model);
  return replicas > 1 ? fmt::format("{}x{}", replicas, s) : s;
}

std::string age(const json& job) {
  TimeMs created = job.value("created_at_ms", TimeMs{0});
  TimeMs now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  int64_t s = std::max<TimeMs>(0, now - created) / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m", s / 60);
  if (s < 86400) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

/// A USD amount given to `flag`: above 0 and at most `max`, e.g. --max-price 2.50.
Result<double> parse_usd(const char* flag, const std::string& text, double max,
                         const char* unit_example) {
  double value = 0;
  size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(value > 0 && value <= max))
    return invalid(fmt::format("{} '{}' must be {} above 0 and at most {:g}", flag,
                               text.substr(0, 64), unit_example, max));
  return value;
}

}  // namespace

int cmd_run(const RunOptions& o) {
  json spec = json::object();
  if (o.command.empty() && o.image.empty()) {
    std::cerr << "error: command: nothing to run; put it after --, e.g. gpucloud run --gpus 1 -- "
                 "python train.py\n";
    return kExitUsage;
  }
  if (!o.command.empty()) spec["command"] = o.command;
  auto set = [&](const char* field, const std::string& value, bool numeric) {
    if (!value.empty()) spec[field] = numeric ? number_or_string(value) : json(value);
  };
  set("gpus", o.gpus, true);
  set("gpu_model", o.gpu_type, false);
  set("gpu_milli", o.gpu_milli, true);
  set("gpu_memory", o.gpu_memory, false);
  set("cpus", o.cpus, true);
  set("memory", o.mem, false);
  set("replicas", o.replicas, true);
  set("name", o.name, false);
  set("workdir", o.workdir, false);
  set("max_runtime", o.max_runtime, false);
  set("expected_runtime", o.expected_runtime, false);
  set("grace_period", o.grace, false);
  set("idle_timeout", o.idle_timeout, false);
  set("tenant", o.tenant, false);
  set("priority", o.priority, false);
  set("capacity_class", o.capacity_class, false);
  if (!o.max_price.empty()) {
    auto price =
        parse_usd("--max-price", o.max_price, kMaxPricePerGpuHour, "USD per GPU-hour (e.g. 2.50)");
    if (!price) return std::cerr << "error: " << price.error().message << "\n", kExitUsage;
    spec["max_price"] = *price;
  }
  if (!o.max_cost.empty()) {
    auto cost = parse_usd("--max-cost", o.max_cost, JobSpecLimits::kMaxCostUsd,
                          "USD for the whole job (e.g. 250)");
    if (!cost) return std::cerr << "error: " << cost.error().message << "\n", kExitUsage;
    spec["max_cost"] = *cost;
  }
  set("image", o.image, false);
  set("shm_size", o.shm_size, false);
  set("pull_policy", o.pull_policy, false);
  set("registry_auth", o.registry_auth, false);
  if (!o.entrypoint.empty()) spec["entrypoint"] = o.entrypoint;
  if (!o.mounts.empty()) {
    json mounts = json::array();
    for (const auto& text : o.mounts) {
      auto m = parse_mount_flag(text);
      if (!m) return std::cerr << "error: " << m.error().message << "\n", kExitUsage;
      mounts.push_back({{"source", m->source}, {"target", m->target}, {"read_only", m->read_only}});
    }
    spec["mounts"] = mounts;
  }
  if (!o.restart.empty()) spec["restart"] = {{"policy", o.restart}};
  auto env = parse_pairs(o.env, "--env");
  if (!env) return std::cerr << "error: " << env.error().message << "\n", kExitUsage;
  if (!env->empty()) spec["env"] = *env;
  auto selector = parse_pairs(o.selector, "--selector");
  if (!selector) return std::cerr << "error: " << selector.error().message << "\n", kExitUsage;
  if (!selector->empty()) spec["node_selector"] = *selector;
  return submit_spec(std::move(spec), o.wait, o.dry_run);
}

int cmd_submit(const std::string& file, bool wait) {
  std::ifstream in(file);
  if (!in) return std::cerr << fmt::format("error: cannot read {}\n", file), kExitUsage;
  std::stringstream text;
  text << in.rdbuf();
  bool is_json = file.size() > 5 && file.substr(file.size() - 5) == ".json";
  json spec;
  if (is_json) {
    auto parsed = parse_json_limited(text.str(), file);
    if (!parsed) return std::cerr << "error: " << parsed.error().message << "\n", kExitUsage;
    spec = std::move(*parsed);
  } else {
    auto parsed = yaml_to_json(text.str(), file);
    if (!parsed) return std::cerr << "error: " << parsed.error().message << "\n", kExitUsage;
    spec = std::move(*parsed);
  }
  if (!spec.is_object())
    return std::cerr << fmt::format("error: {}: a job file must be a mapping of job spec fields\n",
                                    file),
           kExitUsage;
  return submit_spec(std::move(spec), wait);
}

namespace {

/// How long a running job's GPUs have been idle ("-" when busy, unknown or not running).
std::string idle_column(const json& job) {
  TimeMs since = job.value("idle_since_ms", TimeMs{0});
  if (job.value("state", "") != "running" || since <= 0) return "-";
  TimeMs now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  return format_duration_ms(std::max<TimeMs>(0, now - since) / 1000 * 1000);
}

}  // namespace

int cmd_ps(bool all, bool as_json) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  // Pages come newest first; the table lists the oldest first, like before paging.
  json jobs = json::array();
  std::string cursor;
  for (;;) {
    std::string path = fmt::format("/v1/jobs?limit=1000{}{}", all ? "&all=1" : "",
                                   cursor.empty() ? "" : "&cursor=" + net::url_encode(cursor));
    auto r = api->call("GET", path);
    if (!r) return fail(r.error().message);
    if (!r->contains("jobs") || !(*r)["jobs"].is_array())
      return fail("the server's answer to GET /v1/jobs has no jobs list");
    for (auto& j : (*r)["jobs"]) jobs.push_back(std::move(j));
    if (!r->contains("next_cursor") || !(*r)["next_cursor"].is_string()) break;
    std::string next = (*r)["next_cursor"].get<std::string>();
    if (next.empty() || next == cursor) break;
    cursor = next;
  }
  std::reverse(jobs.begin(), jobs.end());
  if (as_json) {
    std::cout << jobs.dump(2) << "\n";
    return 0;
  }
  Table t({"ID", "NAME", "TENANT", "STATE", "GPUS", "NODE", "AGE", "IDLE", "REASON"});
  for (const auto& j : jobs) {
    std::string node;
    for (const auto& r2 : j["replicas"]) node += (node.empty() ? "" : ",") + r2.value("node", "");
    std::string state = j.value("state", "");
    std::string reason =
        state == "pending" ? j.value("pending_reason", "") : j.value("message", "");
    if (!j["exit_code"].is_null() && state != "running")
      state += fmt::format("({})", j["exit_code"].get<int>());
    t.add({short_id(j.value("id", "")), j.value("name", ""), j.value("tenant", ""), state,
           gpus_column(j), node.empty() ? "-" : node, age(j), idle_column(j), reason});
  }
  t.print(std::cout);
  return 0;
}

namespace {

std::string human_bytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  if (bytes < int64_t{1} << 30) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  return fmt::format("{:.1f} GiB", bytes / 1073741824.0);
}

/// The job's ended attempts, one line each: where, when, how long, what ended it and what its
/// checkpoint saved (docs/interruptions.md).
void print_attempts(const json& job) {
  const json& attempts = job.contains("attempts") ? job["attempts"] : json::array();
  if (attempts.empty()) return;
  std::cout << "attempts:\n";
  for (const auto& a : attempts) {
    std::string nodes;
    for (const auto& n : a["nodes"]) nodes += (nodes.empty() ? "" : ",") + n.get<std::string>();
    TimeMs started = a.value("started_at_ms", TimeMs{0}), ended = a.value("ended_at_ms", TimeMs{0});
    std::string ran = started > 0 ? format_duration_ms(ended - started) : "never started";
    std::string checkpoint = "no checkpoint";
    if (a.value("checkpoint_at_ms", TimeMs{0}) > 0)
      checkpoint =
          fmt::format("checkpoint {} ({} old at the end{})",
                      human_bytes(a.value("checkpoint_bytes", int64_t{0})),
                      format_duration_ms(ended - a.value("checkpoint_at_ms", TimeMs{0})),
                      a.value("checkpoint_committed", false) ? "" : ", from an earlier attempt");
    std::string lost = a.value("cause", "").empty()
                           ? ""
                           : fmt::format(", {:.0f} GPU-s lost", a.value("gpu_seconds_lost", 0.0));
    std::cout << fmt::format("  #{:<3} {:<16} {:>10}  {}; {}{}\n", a.value("attempt", 0), nodes,
                             ran, a.value("end", ""), checkpoint, lost);
  }
}

}  // namespace

int cmd_show(const std::string& id, bool as_json) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  auto j = api->call("GET", "/v1/jobs/" + net::url_encode(id));
  if (!j) return fail(j.error().message);
  if (as_json) {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  auto line = [](const char* k, const std::string& v) {
    std::cout << fmt::format("{:<15}{}\n", k, v);
  };
  auto or_dash = [](const json& v) {
    return v.is_null() ? std::string("-") : v.is_string() ? v.get<std::string>() : v.dump();
  };
  line("id:", j->value("id", ""));
  line("name:", j->value("name", ""));
  line("tenant:", j->value("tenant", ""));
  line("state:", j->value("state", ""));
  if (j->value("state", "") == "pending") line("reason:", j->value("pending_reason", ""));
  if (!j->value("message", "").empty()) line("message:", j->value("message", ""));
  if (std::string idle = idle_column(*j); idle != "-") line("idle for:", idle);
  line("exit code:", or_dash((*j)["exit_code"]));
  line("attempt:", std::to_string(j->value("attempt", 1)));
  std::string cmd;
  for (const auto& a : (*j)["spec"]["command"])
    cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
  line("command:", cmd);
  line("gpus:", gpus_column(*j));
  line("created:", or_dash((*j)["created_at"]));
  line("started:", or_dash((*j)["started_at"]));
  line("finished:", or_dash((*j)["finished_at"]));
  if (j->contains("cost")) {
    const json& c = (*j)["cost"];
    double per_hour = c.value("running_usd_per_hour", 0.0);
    line("cost:",
         fmt::format("${:.4f} so far{}", c.value("total_usd", 0.0),
                     per_hour > 0 ? fmt::format(" (running at ${:.4f}/h)", per_hour) : ""));
  }
  for (const auto& r : (*j)["replicas"]) {
    std::string gpus;
    // A share says how it is enforced: by MPS, or not at all (best-effort).
    std::string sharing = r.value("gpu_sharing", "best-effort");
    for (const auto& g : r["gpus"])
      gpus += (gpus.empty() ? "" : ", ") +
              fmt::format(
                  "{}{}", g.value("uuid", ""),
                  g.value("milli", 1000) < 1000
                      ? fmt::format(" ({}m, {})", g.value("milli", 0),
                                    sharing == "mps" ? "MPS limits" : "best-effort: not enforced")
                      : "");
    line(fmt::format("replica {}:", r.value("rank", 0)).c_str(),
         fmt::format("{} [{}] {}{}", r.value("node", ""), r.value("state", ""),
                     gpus.empty() ? "no GPUs" : gpus,
                     r.value("message", "").empty() ? "" : " — " + r.value("message", "")));
  }
  print_attempts(*j);
  return 0;
}

int cmd_logs(const std::string& id, bool follow, int rank) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  // Pin the attempt: a re-queued job's next attempt starts a new log, followed from its start.
  auto job = api->call("GET", "/v1/jobs/" + net::url_encode(id));
  if (!job) return fail(job.error().message);
  std::string job_id = job->value("id", id);
  int attempt = job->value("attempt", 1);
  int64_t offset = 0;
  for (;;) {
    auto r = api->raw(
        "GET",
        fmt::format("/v1/jobs/{}/logs?offset={}&rank={}&attempt={}{}", net::url_encode(job_id),
                    offset, rank, attempt, follow ? "&follow=1&wait_ms=20000" : ""),
        follow ? 40'000 : 30'000);
    if (!r) return fail(r.error().message);
    if (r->status != 200) return fail(error_from_response(*r).message);
    std::cout.write(r->body.data(), static_cast<std::streamsize>(r->body.size()));
    std::cout.flush();
    int64_t next = offset + static_cast<int64_t>(r->body.size());
    bool done = false;
    for (const auto& [name, value] : r->headers) {
      if (strcasecmp(name.c_str(), "X-Gpucloud-Offset") == 0) next = std::stoll(value);
      if (strcasecmp(name.c_str(), "X-Gpucloud-Done") == 0) done = value == "1";
    }
    offset = next;
    if (!follow && (done || r->body.empty())) break;
    if (!done) continue;
    // This attempt's output is complete. If the job went on with another attempt, follow it.
    auto now = api->call("GET", "/v1/jobs/" + net::url_encode(job_id));
    if (!now) return fail(now.error().message);
    int latest = now->value("attempt", attempt);
    if (latest == attempt) break;
    std::cerr << fmt::format("--- attempt {} ({}) ---\n", latest, now->value("message", ""));
    attempt = latest;
    offset = 0;
  }
  return 0;
}

int cmd_cancel(const std::string& id) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  auto j = api->call("DELETE", "/v1/jobs/" + net::url_encode(id));
  if (!j) return fail(j.error().message);
  std::string state = j->value("state", "");
  if (state == "cancelled")
    std::cout << fmt::format("cancelled {}\n", j->value("id", ""));
  else
    std::cout << fmt::format("cancelling {} ({})\n", j->value("id", ""), j->value("message", ""));
  return 0;
}

int cmd_nodes(bool as_json) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  auto r = api->call("GET", "/v1/nodes");
  if (!r) return fail(r.error().message);
  const json& nodes = (*r)["nodes"];
  if (as_json) {
    std::cout << nodes.dump(2) << "\n";
    return 0;
  }
  Table t({"NAME", "STATE", "GPUS", "FREE", "CPUS", "MEMORY", "PRICE/GPU-H", "BACKEND", "SHARES",
           "DOCTOR"});
  std::vector<std::string> unhealthy;  // why nodes take no jobs, printed under the table
  for (const auto& n : nodes) {
    std::map<std::string, int> models;
    int free = 0, total = 0;
    for (const auto& g : n["gpus"]) {
      std::string model = g.value("model", "");
      // "A100-80GB"; a MIG device's model names its profile ("A100/3g.40gb") instead.
      bool sized = g.value("memory_mib", 0) > 0 && model.find('/') == std::string::npos;
      models[model +
             (sized ? "-" + std::to_string((g.value("memory_mib", 0) + 512) / 1024) + "GB" : "")]++;
      free += g.value("used_milli", 0) == 0 ? 1 : 0;
      ++total;
    }
    std::string gpus;
    for (const auto& [m, c] : models)
      gpus += (gpus.empty() ? "" : ",") + fmt::format("{}x{}", c, m);
    t.add(
        {n.value("name", ""),
         n.value("state", "") + (n.value("cordoned", false) ? ",cordoned" : ""),
         gpus.empty() ? "-" : gpus, fmt::format("{}/{}", free, total),
         fmt::format("{:g}/{:g}", (n.value("cpu_milli", 0) - n.value("cpu_used_milli", 0)) / 1000.0,
                     n.value("cpu_milli", 0) / 1000.0),
         fmt::format("{}/{}",
                     format_size_mib(n.value("memory_mib", 0) - n.value("memory_used_mib", 0)),
                     format_size_mib(n.value("memory_mib", 0))),
         n.contains("price_per_gpu_hour")
             ? fmt::format("${:.2f}", n["price_per_gpu_hour"].get<double>())
             : "-",
         n.value("gpu_backend", ""), n.value("gpu_sharing", "best-effort"),
         n.value("doctor_status", "-")});
    if (n.contains("unschedulable_reason"))
      unhealthy.push_back(
          fmt::format("{}: no jobs: {}", n.value("name", ""), n.value("unschedulable_reason", "")));
  }
  t.print(std::cout);
  for (const auto& line : unhealthy) std::cout << "\n" << line;
  if (!unhealthy.empty())
    std::cout << "\nOnce fixed, restart the node's agent: its doctor runs again at start.\n";
  return 0;
}

int cmd_tenants(bool as_json) {
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  auto r = api->call("GET", "/v1/tenants");
  if (!r) return fail(r.error().message);
  const json& tenants = (*r)["tenants"];
  if (as_json) {
    std::cout << tenants.dump(2) << "\n";
    return 0;
  }
  auto counts = [](const json& m) {
    std::string out;
    for (const auto& [model, n] : m.items())
      out += (out.empty() ? "" : ",") + fmt::format("{}:{:g}", model, n.get<double>());
    return out.empty() ? std::string("-") : out;
  };
  Table t({"TENANT", "WEIGHT", "COHORT", "QUOTA", "BORROW LIMIT", "GPUS IN USE", "BORROWED",
           "PENDING", "RUNNING"});
  for (const auto& x : tenants)
    t.add({x.value("name", ""), fmt::format("{:g}", x.value("weight", 1.0)),
           x.value("cohort", "").empty() ? "-" : x.value("cohort", ""), counts(x["quota"]),
           counts(x["borrowing_limit"]), counts(x["gpus_in_use"]),
           counts(x.value("borrowed", json::object())), std::to_string(x.value("pending_jobs", 0)),
           std::to_string(x.value("running_jobs", 0))});
  t.print(std::cout);
  // Tenants with quota windows: the window in force and the next change.
  for (const auto& x : tenants) {
    if (!x.contains("quota_windows")) continue;
    const json& now = x.value("quota_window", json());
    std::cout << "\n"
              << x.value("name", "") << ": quota " << counts(x["quota"]) << " ("
              << (now.is_object() ? "window " + now.value("window", "") : "outside its windows")
              << ")";
    if (x.contains("next_quota_change")) {
      const json& next = x["next_quota_change"];
      std::cout << "; from " << next.value("at", "") << ": " << counts(next["quota"]) << " ("
                << (next["window"].is_string() ? "window " + next["window"].get<std::string>()
                                               : "outside its windows")
                << ")";
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace gpucloud::cli
