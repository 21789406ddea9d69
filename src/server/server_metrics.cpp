#include "server/server_metrics.h"

#include "metrics/capped_family.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace gpucloud::server {

namespace {

using metrics::CappedFamily;
using prometheus::BuildCounter;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Histogram;

// Label sets per family at most: tenants and routes are bounded by the config and the API, but
// a family never grows past this whatever arrives.
constexpr size_t kMaxSeries = 1000;

// Seconds, from a fast API answer to a long queue wait.
const Histogram::BucketBoundaries kRequestBuckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                  0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const Histogram::BucketBoundaries kWaitBuckets{0.1, 0.5, 1,   2.5,  5,    10,   30,    60,
                                               120, 300, 600, 1800, 3600, 7200, 21600, 86400};
const Histogram::BucketBoundaries kPassBuckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                               0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};

bool is_id_segment(const std::string& s) {
  return !s.empty();
}

}  // namespace

std::string api_route_template(const std::string& path) {
  static const char* const kExact[] = {
      "/healthz",         "/metrics",           "/v1/jobs",       "/v1/tenants",   "/v1/nodes",
      "/v1/tokens",       "/v1/agent/register", "/v1/agent/poll", "/v1/sd/agents", "/v1/audit",
      "/v1/audit/verify", "/v1/cost",           "/v1/events"};
  for (const char* exact : kExact)
    if (path == exact) return exact;
  auto under = [&](const std::string& prefix, std::string& rest) {
    if (path.rfind(prefix, 0) != 0) return false;
    rest = path.substr(prefix.size());
    return true;
  };
  std::string rest;
  if (under("/v1/jobs/", rest)) {
    size_t slash = rest.find('/');
    if (!is_id_segment(rest.substr(0, slash))) return "other";
    if (slash == std::string::npos) return "/v1/jobs/{id}";
    std::string sub = rest.substr(slash + 1);
    if (sub == "cancel" || sub == "logs") return "/v1/jobs/{id}/" + sub;
    return "other";
  }
  if (under("/v1/tokens/", rest)) {
    size_t slash = rest.find('/');
    if (!is_id_segment(rest.substr(0, slash))) return "other";
    if (slash == std::string::npos) return "/v1/tokens/{name}";
    if (rest.substr(slash + 1) == "revoke") return "/v1/tokens/{name}/revoke";
    return "other";
  }
  if (under("/v1/nodes/", rest)) {
    size_t slash = rest.find('/');
    if (slash == std::string::npos || !is_id_segment(rest.substr(0, slash))) return "other";
    static const char* const kActions[] = {"cordon",  "uncordon",  "drain",
                                           "replace", "interrupt", "remove"};
    for (const char* action : kActions)
      if (rest.substr(slash + 1) == action) return std::string("/v1/nodes/{node}/") + action;
    return "other";
  }
  return "other";
}

struct ServerMetrics::Instruments {
  prometheus::Registry registry;
  CappedFamily<Counter> requests{
      BuildCounter()
          .Name("gpucloud_api_requests_total")
          .Help("API requests answered, by route template, method and HTTP status code.")
          .Register(registry),
      kMaxSeries};
  CappedFamily<Histogram> request_seconds{
      BuildHistogram()
          .Name("gpucloud_api_request_duration_seconds")
          .Help("Time from a request's arrival to its answer, by route template (agent polls "
                "include the time they are held).")
          .Register(registry),
      kMaxSeries};
  CappedFamily<Counter> submitted{BuildCounter()
                                      .Name("gpucloud_jobs_submitted_total")
                                      .Help("Jobs accepted by the API, by tenant.")
                                      .Register(registry),
                                  kMaxSeries};
  CappedFamily<Counter> finished{
      BuildCounter()
          .Name("gpucloud_jobs_finished_total")
          .Help("Jobs that reached a terminal state, by state and tenant.")
          .Register(registry),
      kMaxSeries};
  Histogram& queue_wait = BuildHistogram()
                              .Name("gpucloud_job_queue_wait_seconds")
                              .Help(
                                  "Time an attempt waited from pending (submit or re-queue) "
                                  "until all its replicas ran.")
                              .Register(registry)
                              .Add({}, kWaitBuckets);
  Histogram& submit_to_running =
      BuildHistogram()
          .Name("gpucloud_job_submit_to_running_seconds")
          .Help("Time from a job's submission until its first attempt ran.")
          .Register(registry)
          .Add({}, kWaitBuckets);
  Histogram& pass_seconds = BuildHistogram()
                                .Name("gpucloud_scheduler_pass_duration_seconds")
                                .Help(
                                    "Time of a scheduling pass that had pending jobs to "
                                    "decide (sync, plan and commit).")
                                .Register(registry)
                                .Add({}, kPassBuckets);
  prometheus::Family<Counter>& decisions =
      BuildCounter()
          .Name("gpucloud_scheduler_decisions_total")
          .Help("Decisions of scheduling passes: jobs placed, left pending, preempted.")
          .Register(registry);
  Counter& placed = decisions.Add({{"decision", "placed"}});
  Counter& left_pending = decisions.Add({{"decision", "pending"}});
  Counter& preempted = decisions.Add({{"decision", "preempted"}});
  CappedFamily<Counter> cost{
      BuildCounter()
          .Name("gpucloud_cost_usd_total")
          .Help("USD charged for ended attempts (the ledger; running attempts are added when "
                "they end), by tenant and GPU model (docs/cost.md).")
          .Register(registry),
      kMaxSeries};
  CappedFamily<Counter> budget_alerts{
      BuildCounter()
          .Name("gpucloud_budget_alerts_total")
          .Help("Budget alerts raised (a tenant's spend this month reached its alert share; at "
                "most once a month per tenant), by tenant.")
          .Register(registry),
      kMaxSeries};
  CappedFamily<Counter> placements{
      BuildCounter()
          .Name("gpucloud_placements_total")
          .Help("Jobs placed on nodes by the scheduler (attempts started), by tenant.")
          .Register(registry),
      kMaxSeries};
  CappedFamily<Counter> preemptions{
      BuildCounter()
          .Name("gpucloud_preemptions_total")
          .Help("Running jobs preempted by the scheduler to make room, by the preempted job's "
                "tenant.")
          .Register(registry),
      kMaxSeries};
  CappedFamily<Counter> interruptions{
      BuildCounter()
          .Name("gpucloud_interruptions_total")
          .Help("Running jobs interrupted, by cause (preemption, drain, spot, agent-shutdown, "
                "cancel, ...).")
          .Register(registry),
      64};
  Counter& polls = BuildCounter()
                       .Name("gpucloud_agent_polls_total")
                       .Help("Polls received from node agents.")
                       .Register(registry)
                       .Add({});
  Histogram& commit_seconds = BuildHistogram()
                                  .Name("gpucloud_store_commit_duration_seconds")
                                  .Help("Time to write one store transaction durably.")
                                  .Register(registry)
                                  .Add({}, kPassBuckets);
};

ServerMetrics::ServerMetrics() : in_(std::make_unique<Instruments>()) {}
ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::api_request(const std::string& route, const std::string& method, int status,
                                double seconds) {
  in_->requests.with({{"route", route}, {"method", method}, {"code", std::to_string(status)}})
      .Increment();
  in_->request_seconds.with({{"route", route}}, kRequestBuckets).Observe(seconds);
}

void ServerMetrics::job_submitted(const std::string& tenant) {
  in_->submitted.with({{"tenant", tenant}}).Increment();
}

void ServerMetrics::job_started(double queue_wait_s, double first_start_s) {
  in_->queue_wait.Observe(queue_wait_s);
  if (first_start_s >= 0) in_->submit_to_running.Observe(first_start_s);
}

void ServerMetrics::job_finished(const std::string& tenant, const std::string& state) {
  in_->finished.with({{"state", state}, {"tenant", tenant}}).Increment();
}

void ServerMetrics::cost(const std::string& tenant, const std::string& gpu_model, double usd) {
  if (usd > 0) in_->cost.with({{"gpu_model", gpu_model}, {"tenant", tenant}}).Increment(usd);
}

void ServerMetrics::budget_alert(const std::string& tenant) {
  in_->budget_alerts.with({{"tenant", tenant}}).Increment();
}

void ServerMetrics::scheduling_pass(double seconds, size_t placed, size_t pending,
                                    size_t preempted) {
  in_->pass_seconds.Observe(seconds);
  in_->placed.Increment(static_cast<double>(placed));
  in_->left_pending.Increment(static_cast<double>(pending));
  in_->preempted.Increment(static_cast<double>(preempted));
}

void ServerMetrics::placement(const std::string& tenant) {
  in_->placements.with({{"tenant", tenant}}).Increment();
}

void ServerMetrics::preemption(const std::string& tenant) {
  in_->preemptions.with({{"tenant", tenant}}).Increment();
}

void ServerMetrics::interruption(const std::string& cause) {
  in_->interruptions.with({{"cause", cause}}).Increment();
}

void ServerMetrics::agent_poll() {
  in_->polls.Increment();
}

void ServerMetrics::store_commit(double seconds) {
  in_->commit_seconds.Observe(seconds);
}

std::vector<prometheus::MetricFamily> ServerMetrics::collect() const {
  return in_->registry.Collect();
}

}  // namespace gpucloud::server
