#include "cli/cli.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>

#include "cli/commands.h"

namespace gpucloud::cli {

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

  DevOptions dev;
  auto* dev_cmd =
      app.add_subcommand("dev", "run a server and simulated or real GPU agents in this process");
  dev_cmd->add_option("--data-dir", dev.data_dir, "where state, tokens and logs live")
      ->capture_default_str();
  dev_cmd->add_option("--listen", dev.listen, "HOST:PORT for the API (port 0: any free port)")
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
  run_cmd->add_option("--env", run.env, "K=V, repeatable");
  run_cmd->add_option("--selector", run.selector, "node label K=V the node must have, repeatable");
  run_cmd->add_option("--workdir", run.workdir, "working directory (default: this one)");
  run_cmd->add_option("--max-runtime", run.max_runtime, "stop the job after this long, e.g. 2h");
  run_cmd->add_option("--restart", run.restart, "never | on-lost (default) | on-failure | always");
  run_cmd->add_option("--grace", run.grace,
                      "time between SIGTERM and SIGKILL on stop (default 30s)");
  run_cmd->add_option("--tenant", run.tenant, "tenant to run as");
  run_cmd->add_option("--priority", run.priority, "low | normal | high");
  run_cmd->add_option("--capacity-class", run.capacity_class, "on-demand | spot | any");
  run_cmd->add_flag("--wait", run.wait,
                    "wait for the end; exit with the job's exit code (75 when lost)");
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

  bool follow = false;
  int rank = 0;
  auto* logs_cmd = app.add_subcommand("logs", "print a job's output (stdout and stderr)");
  logs_cmd->add_option("job", id, "job id or a unique prefix")->required();
  logs_cmd->add_flag("--follow,-f", follow, "keep printing until the job ends");
  logs_cmd->add_option("--rank", rank, "replica rank (default 0)");
  logs_cmd->callback([&] { code = cmd_logs(id, follow, rank); });

  auto* cancel_cmd =
      app.add_subcommand("cancel", "stop a job (SIGTERM, then SIGKILL after its grace period)");
  cancel_cmd->add_option("job", id, "job id or a unique prefix")->required();
  cancel_cmd->callback([&] { code = cmd_cancel(id); });

  auto* nodes_cmd = app.add_subcommand("nodes", "list nodes and their GPUs, free and used");
  nodes_cmd->add_flag("--json", as_json, "print a JSON array of nodes");
  nodes_cmd->callback([&] { code = cmd_nodes(as_json); });

  auto* tenants_cmd = app.add_subcommand("tenants", "list tenants: quota, GPUs in use, jobs");
  tenants_cmd->add_flag("--json", as_json, "print a JSON array of tenants");
  tenants_cmd->callback([&] { code = cmd_tenants(as_json); });

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
      "gen", "write a synthetic canonical trace to stdout: Poisson arrivals, sampled shapes");
  gen_cmd
      ->add_option("--trace-like", gen.trace_like,
                   "trace whose request shapes to sample (canonical CSV or Alibaba pod list)")
      ->required();
  gen_cmd->add_option("--jobs", gen.jobs, "number of jobs")->capture_default_str();
  gen_cmd->add_option("--rate", gen.rate, "mean arrivals per second")->capture_default_str();
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
  gen_cmd->callback([&] { code = cmd_sim_gen(gen); });

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
  replay_cmd->add_option("--seed", replay.seed, "seed for policies that draw random numbers")
      ->capture_default_str();
  replay_cmd->add_flag("--json", replay.json, "print one JSON object instead of the report");
  replay_cmd->add_option("--plot", replay.plot,
                         "write an SVG of queue length and GPU use over time to this file");
  replay_cmd->add_option("--prices", replay.prices,
                         "price catalog (CSV or YAML, $ per GPU-hour per model) for cost");
  replay_cmd->callback([&] { code = cmd_sim_replay(replay); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  return code;
}

}  // namespace gpucloud::cli
