// The server's own instruments (counters and histograms), fed by hooks in the request path,
// the scheduling pass and the store; the gauges are computed at scrape time from the server's
// state (Server::serve_metrics). docs/metrics.md lists every family.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "prometheus/metric_family.h"

namespace gpucloud::server {

/// The route template of a request path, bounded to the API's routes: "/v1/jobs/{id}/logs"
/// for "/v1/jobs/3f2a/logs", "other" for a path that is not one of them.
std::string api_route_template(const std::string& path);

/// Counters and histograms of one server. Thread-safe: api_request may be called from any
/// thread (some answers are made on background threads), the rest from the server's loop.
class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();

  /// An API request answered: its route template, method, HTTP status and time to answer.
  void api_request(const std::string& route, const std::string& method, int status, double seconds);
  /// A job accepted by POST /v1/jobs.
  void job_submitted(const std::string& tenant);
  /// An attempt's replicas all run: `queue_wait_s` since it became pending (submit or requeue);
  /// `first_start_s` since submit when this is the job's first attempt to run (else < 0).
  void job_started(double queue_wait_s, double first_start_s);
  /// A job reached a terminal state (succeeded, failed, cancelled, lost).
  void job_finished(const std::string& tenant, const std::string& state);
  /// An ended attempt's replica charged `usd` to the ledger.
  void cost(const std::string& tenant, const std::string& gpu_model, double usd);
  /// A tenant's spend this month reached its budget's alert share.
  void budget_alert(const std::string& tenant);
  /// A scheduling pass: its duration and its decisions (jobs placed, left pending, preempted).
  void scheduling_pass(double seconds, size_t placed, size_t pending, size_t preempted);
  /// A job placed by the scheduler (one attempt starting).
  void placement(const std::string& tenant);
  /// A running job chosen by the scheduler to make room (its tenant).
  void preemption(const std::string& tenant);
  /// A running job interrupted, with its cause (one of interrupt_cause).
  void interruption(const std::string& cause);
  /// An agent's poll received.
  void agent_poll();
  /// A store transaction written, and how long it took.
  void store_commit(double seconds);
  /// The current values of every instrument.
  std::vector<prometheus::MetricFamily> collect() const;

 private:
  struct Instruments;
  std::unique_ptr<Instruments> in_;
};

}  // namespace gpucloud::server
