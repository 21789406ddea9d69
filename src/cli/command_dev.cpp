// `gpucloud dev`: a server and N agents in one process, talking over loopback HTTP.
#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "agent/agent.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "common/units.h"
#include "server/server.h"

namespace gpucloud::cli {

namespace {

std::string binary_hint() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "gpucloud";
  auto cwd = std::filesystem::current_path(ec);
  auto rel = std::filesystem::relative(exe, cwd, ec);
  if (!ec && !rel.empty() && rel.native().rfind("..", 0) != 0) return "./" + rel.string();
  return exe.string();
}

std::string read_token(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  return token;
}

// True when other users can pass through every directory on the way to `path`.
bool passable_by_others(const std::string& path) {
  std::error_code ec;
  std::filesystem::path partial;
  for (const auto& part : std::filesystem::absolute(path, ec).lexically_normal()) {
    partial /= part;
    struct stat st {};
    if (::stat(partial.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) return false;
  }
  return true;
}

// Where the dev agents keep their state and their jobs' attempt dirs: beside the server's data
// dir, never inside it, so that the data dir (tokens, database, logs) stays 0700 and no job
// can reach it. When jobs could not pass through the directories above it (a data dir under
// root's 0700 home), it is /var/tmp/gpucloud-dev-<hash of the data dir's path> instead, the
// same at every start. A data dir from before this layout keeps its agents where they are
// (their running jobs are re-adopted from there), with a warning.
Result<std::string> dev_nodes_dir(const std::string& data_dir) {
  std::error_code ec;
  std::string root = std::filesystem::absolute(data_dir, ec).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  std::string legacy = root + "/agents";
  if (std::filesystem::is_directory(legacy, ec)) {
    spdlog::warn(
        "dev: the agents' job dirs lie inside the data dir ({}), from an older gpucloud; jobs "
        "cannot reach them as their own users. Stop gpucloud dev once no job runs and remove {} "
        "to move them out",
        legacy, legacy);
    return legacy;
  }
  std::string dir = root + "-nodes";
  if (::geteuid() == 0 && !passable_by_others(root.substr(0, root.rfind('/') + 1))) {
    uint64_t h = 14695981039346656037ull;  // FNV-1a of the data dir's path
    for (unsigned char c : root) h = (h ^ c) * 1099511628211ull;
    dir = fmt::format("/var/tmp/gpucloud-dev-{:016x}", h);
    if (::mkdir(dir.c_str(), 0711) != 0 && errno != EEXIST)
      return internal(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0)
      return internal(fmt::format(
          "{} is not a directory of root's; remove it, or give a --data-dir whose parent "
          "directories other users may pass (o+x)",
          dir));
  } else {
    std::filesystem::create_directories(dir, ec);
    if (ec) return internal(fmt::format("cannot create {}: {}", dir, ec.message()));
  }
  ::chmod(dir.c_str(), 0711);  // jobs pass through to their own attempt dirs, never list it
  return dir;
}

// What the banner says about the users jobs run as, when there is something to say.
std::string user_note() {
  if (::geteuid() != 0) {
    return "  warning:      not running as root: jobs run as your user and can read the\n"
           "                data dir, tokens and each other's files (docs/security.md)\n";
  }
  std::error_code ec;
  std::string cwd = std::filesystem::current_path(ec).string();
  if (!ec && !passable_by_others(cwd)) {
    return "  note:         jobs run as their tenant's user, who cannot enter " + cwd +
           ";\n"
           "                run the CLI from a directory others may pass (o+x) or give "
           "--workdir\n";
  }
  return "";
}

}  // namespace

int cmd_dev(const DevOptions& o) {
  auto listen = parse_listen(o.listen);
  if (!listen) return std::cerr << "error: " << listen.error().message << "\n", kExitUsage;
  double cpus_per_gpu = 0;
  try {
    cpus_per_gpu = std::stod(o.sim_cpus);
  } catch (...) {
  }
  if (!(cpus_per_gpu > 0) || cpus_per_gpu > 1024)
    return std::cerr << fmt::format(
               "error: --sim-cpus '{}' must be a number of CPUs per GPU in (0, 1024]\n",
               o.sim_cpus),
           kExitUsage;
  auto mem_per_gpu = parse_size_mib(o.sim_mem);
  if (!mem_per_gpu || *mem_per_gpu <= 0)
    return std::cerr << fmt::format("error: --sim-mem: {}\n",
                                    mem_per_gpu ? "must be above 0" : mem_per_gpu.error().message),
           kExitUsage;
  if (o.sim_nodes < 1 || o.sim_nodes > 256)
    return std::cerr << "error: --sim-nodes must be within 1..256\n", kExitUsage;
  if (o.spot_nodes < 0 || o.spot_nodes > o.sim_nodes)
    return std::cerr << fmt::format("error: --spot-nodes {} must be within 0..{} (--sim-nodes)\n",
                                    o.spot_nodes, o.sim_nodes),
           kExitUsage;
  {
    agent::AgentConfig check;  // the spot flags are checked before anything starts
    for (int i = 0; i < o.sim_nodes; ++i)
      if (auto st = apply_spot_flags(o.spot, i, o.sim_nodes, check); !st.ok())
        return std::cerr << "error: " << st.error().message << "\n", kExitUsage;
    if (auto st = apply_node_flags(o.node, check); !st.ok())
      return std::cerr << "error: " << st.error().message << "\n", kExitUsage;
  }

  // Signals are taken by one thread with sigwait, so no other thread is interrupted by them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  SystemClock clock;
  net::EventLoop loop;
  server::ServerConfig config;
  config.data_dir = o.data_dir;
  config.listen_host = listen->first;
  config.listen_port = listen->second;
  config.policy = o.policy;
  auto queue = queue_settings_from(o.queue);
  if (!queue) return std::cerr << "error: " << queue.error().message << "\n", kExitUsage;
  config.queue = *queue;
  config.poll_hold_ms = o.poll_hold_ms;
  config.max_connections = o.max_connections;
  config.max_connections_per_source = o.max_connections_per_source;
  config.metrics_token_file = o.metrics_token_file;
  config.metrics_public = o.metrics_public;
  config.config_file = o.config_file;
  config.catalog_file = o.catalog_file;
  auto dev_labels = parse_labels(o.labels);
  if (!dev_labels) return std::cerr << "error: " << dev_labels.error().message << "\n", kExitUsage;
  auto unreachable = parse_duration_ms(o.unreachable_after);
  auto down = parse_duration_ms(o.down_after);
  if (!unreachable || !down || *unreachable < 1000 || *down <= *unreachable)
    return std::cerr << fmt::format(
               "error: --unreachable-after '{}' and --down-after '{}' must be durations "
               "with 1s <= unreachable-after < down-after\n",
               o.unreachable_after, o.down_after),
           kExitUsage;
  config.unreachable_after_ms = *unreachable;
  config.down_after_ms = *down;
  auto server = server::Server::create(config, clock, loop);
  if (!server) return fail(server.error().message);
  auto port = (*server)->start();
  if (!port) return fail(port.error().message);

  auto uid_range = agent::parse_job_uid_range(o.job_uid_range);
  if (!uid_range) return std::cerr << "error: " << uid_range.error().message << "\n", kExitUsage;
  auto nodes = dev_nodes_dir(o.data_dir);
  if (!nodes) return fail(nodes.error().message);
  const std::string& nodes_dir = *nodes;

  std::vector<std::unique_ptr<agent::Agent>> agents;
  std::string join_token = read_token((*server)->layout().agent_token());
  std::string gpu_summary;
  for (int i = 0; i < o.sim_nodes; ++i) {
    agent::AgentConfig ac;
    ac.server_url = (*server)->url();
    ac.join_token = join_token;
    ac.name = fmt::format("dev-{}", i);
    ac.data_dir = fmt::format("{}/{}", nodes_dir, ac.name);
    ac.checkpoint_root = nodes_dir + "/checkpoints";  // shared: a job resumes on any dev node
    ac.registry_auth_dir = o.registry_auth_dir;
    ac.container_mount_allow = o.container_mount_allow;
    ac.job_uid_range = *uid_range;
    ac.gpu.kind = o.sim_gpus.empty() ? "auto" : "simulated";
    ac.gpu.sim_spec = o.sim_gpus;
    ac.sim_cpu_milli_per_gpu = static_cast<int64_t>(cpus_per_gpu * 1000);
    ac.sim_memory_mib_per_gpu = *mem_per_gpu;
    ac.poll_hold_ms = o.poll_hold_ms;
    ac.labels = *dev_labels;
    if (i >= o.sim_nodes - o.spot_nodes) ac.labels["capacity-class"] = "spot";
    (void)apply_spot_flags(o.spot, i, o.sim_nodes, ac);  // checked above
    (void)apply_node_flags(o.node, ac);
    // Each node's GPU metrics on a free loopback port, behind the server's metrics token.
    ac.metrics_enabled = true;
    ac.metrics_host = "127.0.0.1";
    ac.metrics_port = 0;
    ac.metrics_token_file = o.metrics_token_file;
    auto a = agent::Agent::create(ac, clock);
    if (!a) return fail(fmt::format("agent {}: {}", ac.name, a.error().message));
    if (auto st = (*a)->start(); !st.ok()) return fail(st.error().message);
    agents.push_back(std::move(*a));
  }
  {
    const NodeInfo& info = agents.front()->node_info();
    std::map<std::string, int> models;
    for (const auto& g : info.gpus) models[g.model]++;
    for (const auto& [model, count] : models)
      gpu_summary += fmt::format("{}{}x{}", gpu_summary.empty() ? "" : ",", count, model);
    gpu_summary =
        fmt::format("{} {}", gpu_summary.empty() ? "no GPUs" : gpu_summary, info.gpu_backend);
    if (o.sim_nodes > 1) gpu_summary += " each";
  }

  std::string agent_metrics;
  for (const auto& a : agents)
    agent_metrics +=
        fmt::format("{}{}", agent_metrics.empty() ? "" : ", ", a->node_info().metrics_address);
  std::string bin = binary_hint();
  std::cout
      << fmt::format(
             "gpucloud dev is running ({} node{}, GPUs: {})\n"
             "  API:          {}\n"
             "  admin token:  {}\n"
             "  data dir:     {}\n"
             "  GPU metrics:  {} (GET /metrics; all in GET /v1/sd/agents)\n"
             "  job dirs:     {}\n"
             "{}"
             "\n"
             "Try these from a second terminal in this directory (the CLI finds the server and "
             "the\n"
             "token in ./.gpucloud; elsewhere set GPUCLOUD_ADDR and GPUCLOUD_TOKEN):\n"
             "  {} run --gpus 2 -- sh -c 'nvidia-smi -L || echo $CUDA_VISIBLE_DEVICES'\n"
             "  {} ps --all\n"
             "  {} logs <job id>\n"
             "\n"
             "Stop with Ctrl-C; running jobs keep running and are re-adopted at the next start.\n",
             o.sim_nodes, o.sim_nodes == 1 ? "" : "s", gpu_summary, (*server)->url(),
             (*server)->layout().admin_token(), o.data_dir, agent_metrics, nodes_dir, user_note(),
             bin, bin, bin)
      << std::flush;

  std::thread signal_thread([&, srv = server->get()] {
    for (;;) {
      int sig = 0;
      sigwait(&signals, &sig);
      if (sig == SIGHUP) {  // reload the config file on the server's own thread
        loop.post([srv] { (void)srv->reload_config(); });
        continue;
      }
      spdlog::info("received signal {}; stopping", sig);
      loop.stop();
      return;
    }
  });
  loop.run();
  for (auto& a : agents) a->stop();
  // Wake the signal thread if the loop ended for another reason.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  return 0;
}

}  // namespace gpucloud::cli
