// The options and entry points of each subcommand (wired up in cli.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/node_flags.h"
#include "cli/queue_flags.h"
#include "cli/spot_flags.h"
#include "common/result.h"

namespace gpucloud::cli {

/// Exit codes shared by the commands.
constexpr int kExitError = 1;  // the request failed (message on stderr)
constexpr int kExitUsage = 2;  // bad flags or arguments
constexpr int kExitLost = 75;  // --wait: the job was lost (EX_TEMPFAIL)
constexpr int kExitAuth = 77;  // the server refused the token or credential (EX_NOPERM)

struct RunOptions {
  std::string gpus, gpu_type, gpu_milli, gpu_memory, cpus, mem, replicas, name, workdir,
      max_runtime, expected_runtime, restart, grace, idle_timeout;
  std::string tenant, priority, capacity_class;
  std::string max_price;  // USD per GPU-hour; "" = no limit
  std::string max_cost;   // USD over all attempts; "" = no limit
  std::vector<std::string> env, selector, command;
  // Container jobs (docs/containers.md): the image and its options; mounts are SRC:DST[:ro].
  std::string image, shm_size, pull_policy, registry_auth;
  std::vector<std::string> mounts, entrypoint;
  bool wait = false;
  bool dry_run = false;  // print where it would run now and its cost per hour; submit nothing
};

struct DevOptions {
  std::string data_dir = ".gpucloud";
  std::string listen = "127.0.0.1:8080";
  std::string sim_gpus;
  int sim_nodes = 1;
  std::string sim_cpus = "16";
  std::string sim_mem = "128GiB";
  std::string policy = "default";
  QueuePolicyFlags queue;  // --queue-policy, --las-thresholds, --las-starvation
  std::string config_file;
  std::string unreachable_after = "15s";  // no poll for this long: node unreachable
  std::string down_after = "60s";         // no poll for this long: node down, attempts lost
  int64_t poll_hold_ms = 5000;
  int max_connections = 0;  // 0: the descriptor limit less a reserve
  int max_connections_per_source = 256;
  std::string job_uid_range = "200000-299999";  // docs/security.md, "Job code"
  SpotFlags spot;
  int spot_nodes = 0;              // the last N dev nodes are labelled capacity-class=spot
  std::string metrics_token_file;  // docs/metrics.md
  bool metrics_public = false;
  std::string catalog_file;  // --catalog (docs/cost.md); "" = none
  std::string labels;        // --labels K=V,... on every dev node
  // Container jobs (docs/containers.md), for every dev node.
  std::string registry_auth_dir;
  std::vector<std::string> container_mount_allow;
  NodeFlags node;  // --mps, --min-driver, ... for every dev node
};

/// `gpucloud server`: the control plane alone (docs/config.md).
struct ServerOptions {
  std::string data_dir = ".gpucloud";
  std::string listen = "0.0.0.0:8443";
  std::string tls_cert, tls_key;  // PEM files; none: a self-signed pair in the data dir
  bool plain_http = false;        // serve http:// (trusted networks and tests only)
  std::string policy = "default";
  QueuePolicyFlags queue;
  std::string config_file;
  std::string catalog_file;  // --catalog (docs/cost.md); "" = none
  std::string unreachable_after = "15s";
  std::string down_after = "60s";
  std::string poll_hold = "5s";
  int max_connections = 0;  // 0: the descriptor limit less a reserve
  int max_connections_per_source = 256;
  std::string metrics_token_file;  // docs/metrics.md
  bool metrics_public = false;
};

/// `gpucloud agent`: one node joining a server.
struct AgentOptions {
  std::string server;           // https://HOST:PORT
  std::string join_token;       // or GPUCLOUD_JOIN_TOKEN, or:
  std::string join_token_file;  // a file holding the join token
  std::string data_dir = ".gpucloud-agent";
  std::string name;  // default: the hostname
  std::string sim_gpus;
  std::string sim_cpus = "16";
  std::string sim_mem = "128GiB";
  std::string labels;  // k=v,k=v
  std::string ca, fingerprint;
  std::string advertise_address;
  std::string fence_after = "45s";
  std::string checkpoint_root;  // "" = <data-dir>/checkpoints
  std::string poll_hold = "5s";
  std::string job_uid_range = "200000-299999";  // docs/security.md, "Job code"
  SpotFlags spot;
  std::string metrics_listen = "0.0.0.0:9400";  // docs/metrics.md, "Agent metrics"
  bool no_metrics = false;
  std::string metrics_token_file;
  // Container jobs (docs/containers.md).
  std::string registry_auth_dir;
  std::vector<std::string> container_mount_allow;
  NodeFlags node;  // --mps, --min-driver, ...
};

/// `gpucloud sim fgd`: the FGD allocation experiment (shared/fgd-experiment.md).
struct SimFgdOptions {
  std::string nodes, pods;
  std::string policy = "all";
  std::string seeds = "42-51";
  double inflation = 1.3;
  bool json = false;
  std::string plot;  // SVG path; empty: no plot
};

/// `gpucloud sim gen`: a synthetic canonical trace on stdout (docs/sim.md, "sim gen").
struct SimGenOptions {
  std::string trace_like;  // a canonical trace or an Alibaba pod list: the request shapes
  int64_t jobs = 1000;
  double rate = 1;
  uint64_t seed = 42;
  int tenants = 0;
  double duration_median_s = 600;
  double duration_sigma = 1.9;
  bool rate_given = false;  // --rate was given (it conflicts with --load and bursts)
  double load = 0;          // --load: the offered GPU load on --cluster, as a fraction
  bool load_given = false;
  std::string cluster;     // --cluster: the cluster --load is a fraction of
  int64_t burst_size = 0;  // --burst-size: jobs per burst; 0: Poisson arrivals
  bool burst_size_given = false;
  std::string burst_interval;     // --burst-interval: time between bursts ("60s")
  double estimate_sigma = -1;     // --runtime-estimates: sigma of the users' estimates; < 0: none
  double max_runtime_factor = 0;  // --max-runtime-factor: limits as a multiple of the duration
};

/// `gpucloud sim replay`: a trace replayed through the scheduler (docs/sim.md, "sim replay").
struct SimReplayOptions {
  std::string cluster, trace;
  std::string policy = "default";
  QueuePolicyFlags queue;
  uint64_t seed = 42;
  bool json = false;
  std::string plot;                 // SVG path; empty: no plot
  std::string prices;               // price catalog path; empty: no cost
  bool progress = false;            // a progress line on stderr even when it is not a terminal
  std::string until;                // stop at this virtual time ("36h"); empty: run to the end
  std::string checkpoint_interval;  // --checkpoint-interval ("10m"); empty: none
  std::string restart_cost;         // --restart-cost ("30s"); empty: none
  double spot_interrupt_rate = 0;   // --spot-interrupt-rate: per spot node per hour
  std::string spot_downtime;        // --spot-downtime ("10m"); empty: the default
  std::string tenants_config;       // --tenants-config: a server config file's tenants and quotas
  std::string start;                // --start: the UTC time of trace time 0 (quota windows)
};

/// `gpucloud sim variant`: a variant of an Alibaba pod list (docs/sim.md, "sim variant").
struct SimVariantOptions {
  std::string pods;
  std::string kind;
  double percent = -1;  // required
  uint64_t seed = 42;
  std::string out;    // empty: stdout
  std::string nodes;  // node list for gpuspec's models; empty: the pod list's own gpu_spec values
};

/// "zone=a,pool=spot" -> map (--labels); keys and values must be non-empty.
Result<std::map<std::string, std::string>> parse_labels(const std::string& text);

/// `gpucloud cost`: the ledger summed by tenant, job, node, gpu-model or day (docs/cost.md).
struct CostOptions {
  std::string by = "tenant";
  std::string since, until, tenant;
  bool json = false;
  bool csv = false;
};
int cmd_cost(const CostOptions& o);

int cmd_run(const RunOptions& o);
int cmd_submit(const std::string& file, bool wait);
int cmd_ps(bool all, bool json);
int cmd_show(const std::string& id, bool json);

struct AuditOptions {
  std::string since, tenant, action;
  int limit = 100;
  bool json = false;
};
/// `gpucloud audit`: the audit log's entries (the newest `limit`, shown oldest first).
int cmd_audit(const AuditOptions& options);
/// `gpucloud audit verify`: checks the hash chain; exit 1 naming the first broken entry.
int cmd_audit_verify(bool json);
/// `gpucloud events [JOB] [-f] [--node N] [--tenant T] [--kind job|node] [--last N] [--json]`.
struct EventsOptions {
  std::string job;  // a job id or prefix: its whole history (stored with the job)
  std::string node, tenant, kind;
  bool follow = false;  // keep printing events as they happen
  int last = 20;        // without a job: how many recent events of the feed to show first
  bool json = false;    // a JSON array; with follow, one JSON object per line
};
/// Without -f and with a job: every step of the job (submitted, placed, running, interrupt,
/// exited, requeued, ended, ...) with its time, oldest first. Otherwise the cluster's feed of
/// job and node events (docs/api.md, "Events"); with -f it follows them as they happen, until
/// the job ends (with a job) or Ctrl-C.
int cmd_events(const EventsOptions& options);
int cmd_logs(const std::string& id, bool follow, int rank);
int cmd_cancel(const std::string& id);
/// `gpucloud node interrupt NODE --in D [--reason TEXT]`: a spot notice (docs/interruptions.md).
int cmd_node_interrupt(const std::string& node, const std::string& in, const std::string& reason);
/// `gpucloud checkpoint commit [--dir DIR]`: marks the checkpoint in DIR (default
/// $GPUCLOUD_CHECKPOINT_DIR) as complete, atomically.
int cmd_checkpoint_commit(const std::string& dir);
int cmd_nodes(bool json);
int cmd_tenants(bool json);
int cmd_dev(const DevOptions& o);
int cmd_server(const ServerOptions& o);
int cmd_agent(const AgentOptions& o);
int cmd_token_create(const std::string& role, const std::string& ttl,
                     const std::vector<std::string>& tenants);
int cmd_token_list(bool json);
int cmd_token_revoke(const std::string& name);
/// `gpucloud node cordon|uncordon|drain NODE`.
int cmd_node_action(const std::string& action, const std::string& node);
int cmd_sim_fgd(const SimFgdOptions& o);
int cmd_sim_gen(const SimGenOptions& o);
int cmd_sim_replay(const SimReplayOptions& o);
int cmd_sim_variant(const SimVariantOptions& o);

/// `gpucloud doctor`: checks this machine (agent/doctor.h); exit 1 when a check fails.
struct DoctorCliOptions {
  std::string data_dir = ".gpucloud-agent";  // the agent's, for its disk and CDI spec
  std::string image;                         // also check this image's CUDA version
  std::string min_driver;                    // default 470.57.02
  std::string nvml_library;                  // default libnvidia-ml.so.1
  bool json = false;
};
int cmd_doctor(const DoctorCliOptions& options);

/// Prints "error: message" to stderr and returns kExitError.
int fail(const std::string& message);
/// Prints "error: message" to stderr and returns kExitAuth for a refused token, else
/// kExitError.
int fail(const Error& error);

}  // namespace gpucloud::cli
