#include "cli/cli.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"

namespace gpucloud::cli {

namespace {

// Overwrites the values of --join-token in argv with 'x'.
void hide_secret_flags(int argc, char** argv) {
  const std::string flag = "--join-token";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") return;
    char* value = nullptr;
    if (arg == flag && i + 1 < argc)
      value = argv[++i];
    else if (arg.rfind(flag + "=", 0) == 0)
      value = argv[i] + flag.size() + 1;
    if (value)
      for (char* c = value; *c; ++c) *c = 'x';
  }
}

// --metrics-token-file and --metrics-public, of `gpucloud server` and `gpucloud dev`.
void add_metrics_access(CLI::App* cmd, std::string& token_file, bool& is_public) {
  cmd->add_option("--metrics-token-file", token_file,
                  "a file holding a token that may read GET /metrics (besides the admin token)");
  cmd->add_flag("--metrics-public", is_public,
                "serve GET /metrics without a token (bind to an address only scrapers reach)");
}

// --max-connections and --max-connections-per-source, of `gpucloud server` and `gpucloud dev`.
void add_connection_limits(CLI::App* cmd, int& max_connections, int& per_source) {
  cmd->add_option("--max-connections", max_connections,
                  "open API connections at most (0: the open-file limit less a reserve)")
      ->check(CLI::Range(0, 1'000'000));
  cmd->add_option("--max-connections-per-source", per_source,
                  "open API connections per client address (16 times as many for addresses "
                  "nodes poll from); raise it when many users share one NAT address")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
}

}  // namespace

int run_cli(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  auto logger = spdlog::stderr_color_mt("gpucloud");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  if (const char* level = std::getenv("GPUCLOUD_LOG"))
    spdlog::set_level(spdlog::level::from_str(level));

  CLI::App app{"gpucloud: a multi-tenant GPU cloud in one binary (docs: README.md, docs/)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpucloud 0.1.0");
  int code = 0;
  // Trust options of every client command (same as GPUCLOUD_CA / GPUCLOUD_FINGERPRINT).
  app.add_option_function<std::string>(
      "--ca", [](const std::string& v) { ::setenv("GPUCLOUD_CA", v.c_str(), 1); },
      "client commands: trust the server via this CA certificate (PEM)");
  app.add_option_function<std::string>(
      "--fingerprint", [](const std::string& v) { ::setenv("GPUCLOUD_FINGERPRINT", v.c_str(), 1); },
      "client commands: trust the server certificate with this SHA-256 fingerprint");
  app.fallthrough();

  DevOptions dev;
  auto* dev_cmd =
      app.add_subcommand("dev", "run a server and simulated or real GPU agents in this process");
  dev_cmd->add_option("--data-dir", dev.data_dir, "where state, tokens and logs live")
      ->capture_default_str();
  dev_cmd->add_option("--listen", dev.listen, "HOST:PORT for the API (port 0: any free port)")
      ->capture_default_str();
  dev_cmd
      ->add_option("--job-uid-range", dev.job_uid_range,
                   "FIRST-LAST: uids (and gids) given to tenants without a configured uid")
      ->capture_default_str();
  dev_cmd->add_option("--sim-gpus", dev.sim_gpus,
                      "simulate GPUs, e.g. 8xA100-80GB, 4xT4, 2xH100-80GB,2xL4");
  dev_cmd->add_option("--sim-nodes", dev.sim_nodes, "number of in-process agents")
      ->capture_default_str();
  dev_cmd->add_option("--sim-cpus", dev.sim_cpus, "CPUs per GPU a simulated node advertises")
      ->capture_default_str();
  dev_cmd->add_option("--sim-mem", dev.sim_mem, "memory per GPU a simulated node advertises")
      ->capture_default_str();
  dev_cmd->add_option("--poll-hold-ms", dev.poll_hold_ms, "longest an agent's long-poll is held")
      ->capture_default_str();
  dev_cmd->add_option("--config", dev.config_file,
                      "tenants and tokens (docs/config.md); reloaded on SIGHUP");
  dev_cmd
      ->add_option("--unreachable-after", dev.unreachable_after,
                   "a silent node is unreachable after this long")
      ->capture_default_str();
  dev_cmd
      ->add_option("--down-after", dev.down_after,
                   "a silent node is down (its attempts lost) after this long")
      ->capture_default_str();
  dev_cmd
      ->add_option("--policy", dev.policy,
                   "placement policy: default, first-fit, random, dot-product, clustering, "
                   "packing, best-fit or fgd")
      ->capture_default_str();
  add_queue_policy_flags(dev_cmd, dev.queue);
  add_connection_limits(dev_cmd, dev.max_connections, dev.max_connections_per_source);
  add_spot_flags(dev_cmd, dev.spot, true);
  add_node_flags(dev_cmd, dev.node);
  dev_cmd
      ->add_option("--spot-nodes", dev.spot_nodes,
                   "label the last N nodes capacity-class=spot (the others are on-demand)")
      ->capture_default_str();
  add_metrics_access(dev_cmd, dev.metrics_token_file, dev.metrics_public);
  dev_cmd->add_option("--catalog", dev.catalog_file,
                      "instance price catalog CSV (docs/cost.md), e.g. "
                      "deploy/catalog/gpu-prices.csv; nodes are priced by their labels");
  dev_cmd->add_option("--registry-auth-dir", dev.registry_auth_dir,
                      "directory of registry credentials files (TENANT/NAME.json) that container "
                      "jobs name with registry_auth (docs/containers.md)");
  dev_cmd
      ->add_option("--container-mount-allow", dev.container_mount_allow,
                   "a host path under which container jobs may mount host directories; "
                   "repeatable (default: none, only named volumes)")
      ->allow_extra_args(false);
  dev_cmd->add_option("--labels", dev.labels,
                      "labels of every dev node, e.g. cloud=aws,instance-type=p4d.24xlarge,"
                      "region=us-east-1");
  dev_cmd->callback([&] { code = cmd_dev(dev); });

  RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "submit a job: gpucloud run [flags] -- CMD [ARG...]");
  run_cmd->add_option("--gpus", run.gpus, "whole GPUs per replica");
  run_cmd->add_option("--gpu-type", run.gpu_type, "GPU models, e.g. A100|H100 or A100-80GB");
  run_cmd->add_option("--gpu-milli", run.gpu_milli, "a share of one GPU, 1..999");
  run_cmd->add_option("--gpu-memory", run.gpu_memory, "GPU memory per GPU or share, e.g. 20GiB");
  run_cmd->add_option("--cpus", run.cpus, "CPUs per replica (default 1)");
  run_cmd->add_option("--mem", run.mem, "memory per replica, e.g. 16GiB (default: no reservation)");
  run_cmd->add_option("--replicas", run.replicas, "replicas, started together (default 1)");
  run_cmd->add_option("--name", run.name, "job name (default: the command's name)");
  // One value per occurrence: `--env X=1 -- sh -c ...` must not read past `--`.
  run_cmd->add_option("--env", run.env, "K=V, repeatable")->allow_extra_args(false);
  run_cmd->add_option("--selector", run.selector, "node label K=V the node must have, repeatable")
      ->allow_extra_args(false);
  run_cmd->add_option("--workdir", run.workdir, "working directory (default: this one)");
  run_cmd->add_option("--max-runtime", run.max_runtime, "stop the job after this long, e.g. 2h");
  run_cmd->add_option("--expected-runtime", run.expected_runtime,
                      "how long you expect it to run, e.g. 40m: queue policy sjf starts shorter "
                      "jobs first (stops nothing)");
  run_cmd->add_option("--restart", run.restart, "never | on-lost (default) | on-failure | always");
  run_cmd->add_option("--grace", run.grace,
                      "time between SIGTERM and SIGKILL on stop (default 30s)");
  run_cmd->add_option("--idle-timeout", run.idle_timeout,
                      "hand the job's GPUs back after they sit idle this long, e.g. 30m, or off "
                      "(default: the tenant's or server's window)");
  run_cmd->add_option("--tenant", run.tenant, "tenant to run as");
  run_cmd->add_option("--priority", run.priority, "low | normal | high");
  run_cmd->add_option("--capacity-class", run.capacity_class, "on-demand | spot | any");
  run_cmd->add_option("--max-price", run.max_price,
                      "the most the job pays per GPU-hour, in USD (e.g. 2.50); nodes whose price "
                      "is higher are not used for it");
  run_cmd->add_option("--max-cost", run.max_cost,
                      "the most the job may cost over all its attempts, in USD (e.g. 250): it "
                      "is stopped before passing it; with --max-runtime it only runs where "
                      "that run time cannot pass it");
  run_cmd->add_option("--image", run.image,
                      "run in this container image (podman on the node); the command is "
                      "optional then: the image's CMD");
  run_cmd
      ->add_option("--mount", run.mounts,
                   "SRC:DST[:ro], repeatable: a host path or volume name mounted at DST")
      ->allow_extra_args(false);
  run_cmd->add_option("--shm-size", run.shm_size, "the container's /dev/shm size, e.g. 1GiB");
  run_cmd->add_option("--pull-policy", run.pull_policy,
                      "if-not-present (default) | always | never");
  run_cmd
      ->add_option("--entrypoint", run.entrypoint,
                   "replaces the image's ENTRYPOINT; repeat for each of its arguments")
      ->allow_extra_args(false);
  run_cmd->add_option(
      "--registry-auth", run.registry_auth,
      "NAME of a credentials file on the node (<registry-auth-dir>/<tenant>/NAME.json)");
  run_cmd->add_flag("--wait", run.wait,
                    "wait for the end; exit with the job's exit code (75 when lost)");
  run_cmd->add_flag("--dry-run", run.dry_run,
                    "submit nothing: print where the job would run now and its cost per hour, "
                    "or why it would wait");
  run_cmd->add_option("command", run.command, "the command and its arguments, after --");
  run_cmd->callback([&] { code = cmd_run(run); });

  std::string file;
  bool submit_wait = false;
  auto* submit_cmd =
      app.add_subcommand("submit", "submit a job described in a YAML (or .json) file");
  submit_cmd->add_option("file", file, "job file")->required();
  submit_cmd->add_flag("--wait", submit_wait, "wait for the end; exit with the job's exit code");
  submit_cmd->callback([&] { code = cmd_submit(file, submit_wait); });

  bool all = false, as_json = false;
  auto* ps_cmd = app.add_subcommand("ps", "list pending and running jobs");
  ps_cmd->add_flag("--all,-a", all, "include jobs that have ended");
  ps_cmd->add_flag("--json", as_json, "print a JSON array of jobs");
  ps_cmd->callback([&] { code = cmd_ps(all, as_json); });

  std::string id;
  auto* show_cmd = app.add_subcommand("show", "show one job");
  show_cmd->add_option("job", id, "job id or a unique prefix")->required();
  show_cmd->add_flag("--json", as_json, "print the job's JSON");
  show_cmd->callback([&] { code = cmd_show(id, as_json); });
  AuditOptions audit;
  auto* audit_cmd = app.add_subcommand(
      "audit", "who changed what: the audit log, newest entries (admin: all; member: its tenants)");
  audit_cmd->add_option("--since", audit.since, "entries since, e.g. 2h or 2026-12-01T10:00:00Z");
  audit_cmd->add_option("--tenant", audit.tenant, "only this tenant's entries");
  audit_cmd->add_option("--action", audit.action, "only this action, e.g. job.cancel, or job.*");
  audit_cmd->add_option("--limit", audit.limit, "at most this many entries (1..1000)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  audit_cmd->add_flag("--json", audit.json, "print the entries as JSON");
  audit_cmd->callback([&] {
    if (audit_cmd->get_subcommands().empty()) code = cmd_audit(audit);
  });
  auto* verify_cmd = audit_cmd->add_subcommand(
      "verify", "check the audit log's hash chain; names the first edited or deleted entry");
  verify_cmd->add_flag("--json", audit.json, "print the result as JSON");
  verify_cmd->callback([&] { code = cmd_audit_verify(audit.json); });
  EventsOptions events;
  auto* events_cmd = app.add_subcommand(
      "events",
      "job and node events as they happen (-f), or one job's history: placements, starts, "
      "interruptions, exits");
  events_cmd->add_option("job", events.job, "a job id or a unique prefix: only its events");
  events_cmd->add_flag("--follow,-f", events.follow,
                       "keep printing events as they happen (until the job ends, or Ctrl-C)");
  events_cmd->add_option("--job", events.job, "the same as the job argument");
  events_cmd->add_option("--node", events.node, "only events about this node (or on it)");
  events_cmd->add_option("--tenant", events.tenant, "only this tenant's job events");
  events_cmd->add_option("--kind", events.kind, "only job or only node events")
      ->check(CLI::IsMember({"job", "node"}));
  events_cmd->add_option("--last", events.last, "how many recent events to show first")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  events_cmd->add_flag("--json", events.json, "JSON: an array, or with -f one object per line");
  events_cmd->callback([&] { code = cmd_events(events); });

  bool follow = false;
  int rank = 0;
  auto* logs_cmd = app.add_subcommand("logs", "print a job's output (stdout and stderr)");
  logs_cmd->add_option("job", id, "job id or a unique prefix")->required();
  logs_cmd->add_flag("--follow,-f", follow, "keep printing until the job ends");
  logs_cmd->add_option("--rank", rank, "replica rank (default 0)");
  logs_cmd->callback([&] { code = cmd_logs(id, follow, rank); });

  std::string checkpoint_dir;
  DoctorCliOptions doctor;
  auto* doctor_cmd = app.add_subcommand(
      "doctor",
      "check that this machine can run jobs: driver, GPUs, cgroups, podman, CDI, "
      "limits, disk; exit 1 when a check fails (docs/doctor.md)");
  doctor_cmd->add_option("--data-dir", doctor.data_dir, "the agent's data dir")
      ->capture_default_str();
  doctor_cmd->add_option("--image", doctor.image,
                         "also check that this node's driver runs this image's CUDA version");
  doctor_cmd->add_option("--min-driver", doctor.min_driver,
                         "the oldest NVIDIA driver accepted (default 470.57.02)");
  doctor_cmd->add_option("--nvml-library", doctor.nvml_library,
                         "the NVML library to load (default libnvidia-ml.so.1)");
  doctor_cmd->add_flag("--json", doctor.json, "print the checks as JSON");
  doctor_cmd->callback([&] { code = cmd_doctor(doctor); });

  auto* checkpoint_cmd = app.add_subcommand(
      "checkpoint",
      "inside a job: mark the files in $GPUCLOUD_CHECKPOINT_DIR as a complete checkpoint");
  auto* commit_cmd = checkpoint_cmd->add_subcommand(
      "commit", "write the COMMITTED marker atomically (after the checkpoint's files are written)");
  commit_cmd->add_option("--dir", checkpoint_dir,
                         "the checkpoint directory (default: $GPUCLOUD_CHECKPOINT_DIR)");
  commit_cmd->callback([&] { code = cmd_checkpoint_commit(checkpoint_dir); });
  checkpoint_cmd->require_subcommand(1);
  auto* cancel_cmd =
      app.add_subcommand("cancel", "stop a job (SIGTERM, then SIGKILL after its grace period)");
  cancel_cmd->add_option("job", id, "job id or a unique prefix")->required();
  cancel_cmd->callback([&] { code = cmd_cancel(id); });

  CostOptions cost;
  auto* cost_cmd = app.add_subcommand(
      "cost", "what jobs cost: the ledger by tenant, job, node, GPU model or day (docs/cost.md)");
  cost_cmd->add_option("--by", cost.by, "tenant | job | node | gpu-model | day")
      ->capture_default_str();
  cost_cmd->add_option("--since", cost.since,
                       "from this date (2026-12-01), UTC time (2026-12-01T10:00:00Z) or "
                       "duration back (7d)");
  cost_cmd->add_option("--until", cost.until, "up to this date, time or duration back");
  cost_cmd->add_option("--tenant", cost.tenant, "only this tenant");
  cost_cmd->add_flag("--json", cost.json, "print the report's JSON");
  cost_cmd->add_flag("--csv", cost.csv, "print CSV");
  cost_cmd->callback([&] { code = cmd_cost(cost); });

  auto* nodes_cmd = app.add_subcommand("nodes", "list nodes and their GPUs, free and used");
  nodes_cmd->add_flag("--json", as_json, "print a JSON array of nodes");
  nodes_cmd->callback([&] { code = cmd_nodes(as_json); });

  auto* tenants_cmd = app.add_subcommand("tenants", "list tenants: quota, GPUs in use, jobs");
  tenants_cmd->add_flag("--json", as_json, "print a JSON array of tenants");
  tenants_cmd->callback([&] { code = cmd_tenants(as_json); });

  ServerOptions srv;
  auto* server_cmd = app.add_subcommand(
      "server", "run the control plane alone; agents on other machines join it (docs/config.md)");
  server_cmd->add_option("--data-dir", srv.data_dir, "where state, tokens, TLS files and logs live")
      ->capture_default_str();
  server_cmd->add_option("--listen", srv.listen, "HOST:PORT for the API (port 0: any free port)")
      ->capture_default_str();
  server_cmd->add_option("--tls-cert", srv.tls_cert,
                         "PEM certificate (chain); default: a self-signed one in the data dir");
  server_cmd->add_option("--tls-key", srv.tls_key, "PEM private key of --tls-cert");
  server_cmd->add_flag("--plain-http", srv.plain_http,
                       "serve plain http:// (loopback or a trusted network only)");
  server_cmd->add_option("--config", srv.config_file,
                         "tenants and tokens (docs/config.md); reloaded on SIGHUP");
  server_cmd
      ->add_option("--unreachable-after", srv.unreachable_after,
                   "a silent node is unreachable after this long")
      ->capture_default_str();
  server_cmd
      ->add_option("--down-after", srv.down_after,
                   "a silent node is down (its attempts lost, jobs re-queued) after this long")
      ->capture_default_str();
  server_cmd->add_option("--poll-hold", srv.poll_hold, "longest an agent's long-poll is held")
      ->capture_default_str();
  server_cmd
      ->add_option("--policy", srv.policy,
                   "placement policy: default, first-fit, random, dot-product, clustering, "
                   "packing, best-fit or fgd")
      ->capture_default_str();
  add_queue_policy_flags(server_cmd, srv.queue);
  add_connection_limits(server_cmd, srv.max_connections, srv.max_connections_per_source);
  add_metrics_access(server_cmd, srv.metrics_token_file, srv.metrics_public);
  server_cmd->add_option("--catalog", srv.catalog_file,
                         "instance price catalog CSV (docs/cost.md), e.g. "
                         "deploy/catalog/gpu-prices.csv; nodes are priced by their labels");
  server_cmd->callback([&] { code = cmd_server(srv); });

  AgentOptions agent;
  auto* agent_cmd =
      app.add_subcommand("agent", "run this machine's agent, joined to a server over the network");
  agent_cmd->add_option("--server", agent.server, "the server, e.g. https://10.0.0.1:8443");
  agent_cmd->add_option("--join-token", agent.join_token,
                        "a join token (gpucloud token create --role agent); prefer "
                        "--join-token-file or GPUCLOUD_JOIN_TOKEN, which `ps` does not show");
  agent_cmd->add_option("--join-token-file", agent.join_token_file,
                        "a file holding the join token (keep it 0600)");
  agent_cmd->add_option("--data-dir", agent.data_dir, "the agent's state and job files")
      ->capture_default_str();
  agent_cmd->add_option("--name", agent.name, "node name (default: the hostname)");
  agent_cmd->add_option("--sim-gpus", agent.sim_gpus, "simulate GPUs, e.g. 8xA100-80GB");
  agent_cmd->add_option("--sim-cpus", agent.sim_cpus, "CPUs per GPU a simulated node advertises")
      ->capture_default_str();
  agent_cmd->add_option("--sim-mem", agent.sim_mem, "memory per GPU a simulated node advertises")
      ->capture_default_str();
  agent_cmd->add_option("--labels", agent.labels, "node labels, e.g. zone=a,pool=spot-a100");
  agent_cmd->add_option("--ca", agent.ca, "trust the server's certificate via this CA (PEM)");
  agent_cmd->add_option("--fingerprint", agent.fingerprint,
                        "trust exactly the server certificate with this SHA-256 fingerprint");
  agent_cmd->add_option("--advertise-address", agent.advertise_address,
                        "address other nodes reach this one at (default: as the server sees it)");
  agent_cmd
      ->add_option("--job-uid-range", agent.job_uid_range,
                   "FIRST-LAST: uids (and gids) given to tenants without a configured uid; ids "
                   "the host already uses are skipped")
      ->capture_default_str();
  agent_cmd
      ->add_option("--fence-after", agent.fence_after,
                   "stop this node's jobs after this long without the server (0: never); keep "
                   "it below the server's --down-after")
      ->capture_default_str();
  agent_cmd->add_option("--poll-hold", agent.poll_hold, "longest the server may hold a poll")
      ->capture_default_str();
  agent_cmd->add_option("--registry-auth-dir", agent.registry_auth_dir,
                        "directory of registry credentials files (TENANT/NAME.json) that container "
                        "jobs name with registry_auth (docs/containers.md)");
  agent_cmd
      ->add_option("--container-mount-allow", agent.container_mount_allow,
                   "a host path under which container jobs may mount host directories; "
                   "repeatable (default: none, only named volumes)")
      ->allow_extra_args(false);
  agent_cmd->add_option("--checkpoint-root", agent.checkpoint_root,
                        "absolute path of the jobs' checkpoint directories (default "
                        "<data-dir>/checkpoints); a path all nodes share lets jobs resume on "
                        "any node (docs/interruptions.md)");
  add_spot_flags(agent_cmd, agent.spot, false);
  add_node_flags(agent_cmd, agent.node);
  agent_cmd
      ->add_option("--metrics-listen", agent.metrics_listen,
                   "where to serve the node's GPU metrics (GET /metrics, dcgm-exporter names)")
      ->capture_default_str();
  agent_cmd->add_flag("--no-metrics", agent.no_metrics, "serve no GPU metrics");
  agent_cmd->add_option("--metrics-token-file", agent.metrics_token_file,
                        "a file holding the token scrapers must send to read GET /metrics");
  agent_cmd->callback([&] { code = cmd_agent(agent); });

  std::string token_role, token_ttl;
  std::vector<std::string> token_tenants;
  auto* token_cmd = app.add_subcommand("token", "create, list and revoke API and join tokens");
  token_cmd->require_subcommand(1);
  auto* token_create = token_cmd->add_subcommand("create", "create a token; prints its secret");
  token_create->add_option("--role", token_role, "agent (a join token for nodes), member or admin")
      ->required();
  token_create->add_option("--ttl", token_ttl, "lifetime, e.g. 24h (default), 7d; 0: no expiry");
  token_create->add_option("--tenant", token_tenants, "tenant a member token acts for, repeatable");
  token_create->callback([&] { code = cmd_token_create(token_role, token_ttl, token_tenants); });
  auto* token_list = token_cmd->add_subcommand("list", "list tokens (never their secrets)");
  token_list->add_flag("--json", as_json, "print a JSON array");
  token_list->callback([&] { code = cmd_token_list(as_json); });
  std::string token_name;
  auto* token_revoke = token_cmd->add_subcommand("revoke", "revoke a token by name");
  token_revoke->add_option("name", token_name, "the token's name (see token list)")->required();
  token_revoke->callback([&] { code = cmd_token_revoke(token_name); });

  std::string node_name;
  auto* node_cmd =
      app.add_subcommand("node", "cordon, uncordon, drain, replace or interrupt a node");
  node_cmd->require_subcommand(1);
  const std::vector<std::pair<const char*, const char*>> node_actions = {
      {"cordon", "place no new work on the node"},
      {"uncordon", "allow new work on the node again"},
      {"drain", "cordon, and stop and re-queue its jobs"},
      {"replace",
       "let the next agent that joins with this node's name take it over (a machine that "
       "lost its agent state); the node must not be ready"},
      {"remove", "delete a node that is down, gone or left (its agent stopped for good)"}};
  for (const auto& [action, help] : node_actions) {
    auto* sub = node_cmd->add_subcommand(action, help);
    sub->add_option("node", node_name, "node name or id")->required();
    sub->callback([&, action] { code = cmd_node_action(action, node_name); });
  }
  std::string notice_in = "120s", notice_reason;
  auto* interrupt_cmd = node_cmd->add_subcommand(
      "interrupt",
      "deliver a spot notice: interrupt the node's jobs with this deadline (they checkpoint and "
      "resume elsewhere); the node takes no new work and is gone after the deadline");
  interrupt_cmd->add_option("node", node_name, "node name or id")->required();
  interrupt_cmd->add_option("--in", notice_in, "time until the node is taken, 0s..1h")
      ->capture_default_str();
  interrupt_cmd->add_option("--reason", notice_reason, "why, for the jobs and the audit log");
  interrupt_cmd->callback([&] { code = cmd_node_interrupt(node_name, notice_in, notice_reason); });

  SimFgdOptions fgd;
  auto* sim_cmd = app.add_subcommand("sim", "simulate placement on real GPU-cluster traces");
  sim_cmd->require_subcommand(1);
  auto* fgd_cmd = sim_cmd->add_subcommand(
      "fgd", "the FGD allocation experiment: policies x seeds, unallocated GPUs vs. load");
  fgd_cmd->add_option("--nodes", fgd.nodes, "node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
      ->required();
  fgd_cmd->add_option("--pods", fgd.pods, "pod list CSV (Alibaba openb_pod_list_*.csv)")
      ->required();
  fgd_cmd->add_option("--policy", fgd.policy, "a policy name, or all")->capture_default_str();
  fgd_cmd->add_option("--seeds", fgd.seeds, "seeds, e.g. 42-51 or 1,2,3")->capture_default_str();
  fgd_cmd->add_option("--inflation", fgd.inflation, "arrivals up to this x GPU capacity")
      ->capture_default_str();
  fgd_cmd->add_flag("--json", fgd.json, "print JSON instead of the table");
  fgd_cmd->add_option("--plot", fgd.plot, "write an SVG of allocation vs. load to this file");
  fgd_cmd->callback([&] { code = cmd_sim_fgd(fgd); });

  SimGenOptions gen;
  auto* gen_cmd = sim_cmd->add_subcommand(
      "gen",
      "write a synthetic canonical trace to stdout: Poisson or burst arrivals, sampled shapes");
  gen_cmd
      ->add_option("--trace-like", gen.trace_like,
                   "trace whose request shapes to sample (canonical CSV or Alibaba pod list)")
      ->required();
  gen_cmd->add_option("--jobs", gen.jobs, "number of jobs")->capture_default_str();
  auto* gen_rate = gen_cmd->add_option("--rate", gen.rate, "mean arrivals per second (Poisson)")
                       ->capture_default_str();
  auto* gen_load = gen_cmd->add_option(
      "--load", gen.load,
      "choose the rate so that the offered GPU load on --cluster is this fraction (e.g. 0.9)");
  gen_cmd->add_option("--cluster", gen.cluster, "the cluster --load refers to (as in sim replay)");
  auto* gen_burst = gen_cmd->add_option(
      "--burst-size", gen.burst_size, "jobs arriving together in each burst (instead of Poisson)");
  gen_cmd->add_option("--burst-interval", gen.burst_interval,
                      "time between bursts, e.g. 60s or 5m (or seconds)");
  gen_cmd->add_option("--seed", gen.seed, "random seed")->capture_default_str();
  gen_cmd
      ->add_option("--tenants", gen.tenants,
                   "spread jobs over tenant-1..tenant-K (0: keep the sampled job's tenant)")
      ->capture_default_str();
  gen_cmd
      ->add_option("--duration-median", gen.duration_median_s,
                   "median job duration in seconds (log-normal)")
      ->capture_default_str();
  gen_cmd->add_option("--duration-sigma", gen.duration_sigma, "sigma of ln(duration) (log-normal)")
      ->capture_default_str();
  gen_cmd->add_option("--runtime-estimates", gen.estimate_sigma,
                      "write each job's expected_runtime_s, its duration × e^N(0, SIGMA): users' "
                      "estimates for queue policy sjf (0: exact; default: none)");
  gen_cmd->add_option("--max-runtime-factor", gen.max_runtime_factor,
                      "write each job's max_runtime_s as its duration × F (F >= 1: users' "
                      "limits, which backfill plans with; default: the sampled shape's)");
  gen_cmd->callback([&] {
    gen.rate_given = gen_rate->count() > 0;
    gen.load_given = gen_load->count() > 0;
    gen.burst_size_given = gen_burst->count() > 0;
    code = cmd_sim_gen(gen);
  });

  SimReplayOptions replay;
  auto* replay_cmd = sim_cmd->add_subcommand(
      "replay", "replay a trace on a cluster through the scheduler: delays, GPU use, cost");
  replay_cmd
      ->add_option("--cluster", replay.cluster,
                   "cluster: canonical CSV, YAML, or an Alibaba node list (docs/sim.md)")
      ->required();
  replay_cmd->add_option("--trace", replay.trace, "trace: canonical CSV or an Alibaba pod list")
      ->required();
  replay_cmd->add_option("--policy", replay.policy, "placement policy")->capture_default_str();
  add_queue_policy_flags(replay_cmd, replay.queue);
  replay_cmd->add_option("--checkpoint-interval", replay.checkpoint_interval,
                         "a running job checkpoints after every this much work, e.g. 10m; a "
                         "preempted job resumes from its last one (default: it starts over)");
  replay_cmd->add_option("--spot-interrupt-rate", replay.spot_interrupt_rate,
                         "interruptions per hour of each node labelled capacity-class=spot "
                         "(Poisson, from --seed); its jobs resume elsewhere from their checkpoints "
                         "(default 0: none)");
  replay_cmd->add_option("--tenants-config", replay.tenants_config,
                         "a server config file (docs/config.md): its tenants' quotas, borrowing "
                         "limits and quota windows apply to the replay");
  replay_cmd->add_option("--start", replay.start,
                         "the UTC time trace time 0 stands for, e.g. 2026-03-02T07:00Z (quota "
                         "windows are read in it; default 1970-01-01, a Thursday)");
  replay_cmd->add_option("--spot-downtime", replay.spot_downtime,
                         "how long a taken spot node is away before its replacement joins "
                         "(default 10m)");
  replay_cmd->add_option("--restart-cost", replay.restart_cost,
                         "time a job spends restarting after a preemption before its work goes "
                         "on, e.g. 30s (default 0)");
  replay_cmd->add_option("--seed", replay.seed, "seed for policies that draw random numbers")
      ->capture_default_str();
  replay_cmd->add_flag("--json", replay.json, "print one JSON object instead of the report");
  replay_cmd->add_option("--plot", replay.plot,
                         "write an SVG of queue length and GPU use over time to this file");
  replay_cmd->add_option("--prices", replay.prices,
                         "price catalog (CSV or YAML, $ per GPU-hour per model) for cost");
  replay_cmd->add_flag("--progress", replay.progress,
                       "print progress on stderr about once a second (default: only when stderr "
                       "is a terminal and --json is not given)");
  replay_cmd->add_option("--until", replay.until,
                         "stop at this simulated time (e.g. 90m, 36h, 2d, or seconds) and "
                         "report what was simulated so far");
  replay_cmd->callback([&] { code = cmd_sim_replay(replay); });

  SimVariantOptions variant;
  auto* variant_cmd = sim_cmd->add_subcommand(
      "variant",
      "write a variant of an Alibaba pod list as the FGD paper builds its traces (docs/sim.md)");
  variant_cmd->add_option("--pods", variant.pods, "pod list CSV (Alibaba openb_pod_list_*.csv)")
      ->required();
  variant_cmd
      ->add_option("--kind", variant.kind,
                   "gpuspec | multigpu | gpushare (N % of GPU requests) or cpu (N % of pods)")
      ->required();
  variant_cmd->add_option("--percent", variant.percent, "N, within 0..100")->required();
  variant_cmd->add_option("--seed", variant.seed, "random seed")->capture_default_str();
  variant_cmd->add_option("--out", variant.out, "write here instead of stdout");
  variant_cmd->add_option("--nodes", variant.nodes,
                          "gpuspec: node list whose GPU models the limits are drawn from");
  variant_cmd->callback([&] { code = cmd_sim_variant(variant); });

  // Secrets given as flags are copied for the parser, then blanked in argv, so that other
  // users do not read them in `ps` or /proc/PID/cmdline.
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char*> arg_pointers;
  for (auto& a : args) arg_pointers.push_back(a.data());
  arg_pointers.push_back(nullptr);
  hide_secret_flags(argc, argv);
  try {
    app.parse(argc, arg_pointers.data());
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  return code;
}

}  // namespace gpucloud::cli
