// `gpucloud agent`: one node's agent, joining a server over the network.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>

#include "agent/agent.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "common/units.h"

namespace gpucloud::cli {

namespace {

int usage(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return kExitUsage;
}

}  // namespace

Result<std::map<std::string, std::string>> parse_labels(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return invalid(
          fmt::format("--labels: '{}' is not KEY=VALUE (e.g. zone=a,pool=spot-a100)", item));
    out[item.substr(0, eq)] = item.substr(eq + 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

namespace {

bool has_agent_state(const std::string& data_dir) {
  std::error_code ec;
  for (const char* suffix : {"", ".0", ".1"})
    if (std::filesystem::exists(data_dir + "/agent-state.json" + suffix, ec)) return true;
  return false;
}

}  // namespace

int cmd_agent(const AgentOptions& o) {
  if (o.server.empty())
    return usage("--server URL is required (e.g. --server https://10.0.0.1:8443)");
  if (!o.join_token.empty() && !o.join_token_file.empty())
    return usage("give --join-token or --join-token-file, not both");
  std::string join_token = o.join_token;
  if (!o.join_token_file.empty()) {
    std::ifstream in(o.join_token_file);
    if (!in || !std::getline(in, join_token))
      return usage(
          fmt::format("--join-token-file {}: cannot read a token from it", o.join_token_file));
    while (!join_token.empty() && std::isspace(static_cast<unsigned char>(join_token.back())))
      join_token.pop_back();
    if (join_token.empty())
      return usage(fmt::format("--join-token-file {} is empty", o.join_token_file));
  }
  if (join_token.empty())
    if (const char* env = std::getenv("GPUCLOUD_JOIN_TOKEN")) join_token = env;
  ::unsetenv("GPUCLOUD_JOIN_TOKEN");  // nothing this process starts inherits it
  if (join_token.empty() && !has_agent_state(o.data_dir))
    return usage(
        "a join token is required to join: --join-token-file FILE, GPUCLOUD_JOIN_TOKEN or "
        "--join-token T; make one on the server with `gpucloud token create --role agent`");
  if (!o.ca.empty() && !o.fingerprint.empty())
    return usage("give --ca FILE or --fingerprint SHA256, not both");
  agent::AgentConfig ac;
  ac.server_url = o.server;
  ac.join_token = join_token;
  ac.tls.ca_file = o.ca;
  ac.tls.fingerprint = o.fingerprint;
  ac.data_dir = o.data_dir;
  ac.name = o.name;
  ac.advertise_address = o.advertise_address;
  ac.gpu.kind = o.sim_gpus.empty() ? "auto" : "simulated";
  ac.gpu.sim_spec = o.sim_gpus;
  double cpus_per_gpu = 0;
  try {
    cpus_per_gpu = std::stod(o.sim_cpus);
  } catch (...) {
  }
  if (!(cpus_per_gpu > 0) || cpus_per_gpu > 1024)
    return usage(
        fmt::format("--sim-cpus '{}' must be a number of CPUs per GPU in (0, 1024]", o.sim_cpus));
  ac.sim_cpu_milli_per_gpu = static_cast<int64_t>(cpus_per_gpu * 1000);
  auto mem = parse_size_mib(o.sim_mem);
  if (!mem || *mem <= 0)
    return usage(fmt::format("--sim-mem '{}': {}", o.sim_mem,
                             mem ? "must be above 0" : mem.error().message));
  ac.sim_memory_mib_per_gpu = *mem;
  auto labels = parse_labels(o.labels);
  if (!labels) return usage(labels.error().message);
  ac.labels = *labels;
  if (auto st = apply_spot_flags(o.spot, 0, 1, ac); !st.ok()) return usage(st.error().message);
  if (auto st = apply_node_flags(o.node, ac); !st.ok()) return usage(st.error().message);
  auto hold = parse_duration_ms(o.poll_hold);
  if (!hold || *hold < 100 || *hold > 60'000)
    return usage(fmt::format("--poll-hold '{}' must be a duration within 100ms..60s", o.poll_hold));
  ac.poll_hold_ms = *hold;
  if (o.fence_after != "0") {
    auto fence = parse_duration_ms(o.fence_after);
    if (!fence || *fence < 1000)
      return usage(fmt::format(
          "--fence-after '{}' must be a duration of at least 1s (or 0 to never fence); keep it "
          "below the server's --down-after",
          o.fence_after));
    ac.fence_after_ms = *fence;
  }
  ac.registry_auth_dir = o.registry_auth_dir;
  ac.container_mount_allow = o.container_mount_allow;
  if (!o.checkpoint_root.empty()) {
    if (o.checkpoint_root.front() != '/')
      return usage(
          fmt::format("--checkpoint-root '{}' must be an absolute path", o.checkpoint_root));
    ac.checkpoint_root = o.checkpoint_root;
  }
  auto uid_range = agent::parse_job_uid_range(o.job_uid_range);
  if (!uid_range) return usage(uid_range.error().message);
  ac.job_uid_range = *uid_range;
  ac.metrics_enabled = !o.no_metrics;
  if (ac.metrics_enabled) {
    auto listen = parse_listen(o.metrics_listen);
    if (!listen)
      return usage(fmt::format(
          "--metrics-listen '{}' is not HOST:PORT (e.g. 0.0.0.0:9400, or 10.0.0.5:9400 for a "
          "management network)",
          o.metrics_listen));
    ac.metrics_host = listen->first;
    ac.metrics_port = listen->second;
    ac.metrics_token_file = o.metrics_token_file;
  }
  std::mutex mu;
  std::optional<Error> fatal;
  ac.on_fatal = [&](const Error& e) {
    {
      std::lock_guard lock(mu);
      fatal = e;
    }
    SignalWaiter::request_stop();
  };

  SignalWaiter signals;  // before the agent's threads start
  SystemClock clock;
  auto agent = agent::Agent::create(ac, clock);
  if (!agent) return usage(agent.error().message);
  if (auto st = (*agent)->start(); !st.ok()) return fail(st.error().message);
  const NodeInfo& info = (*agent)->node_info();
  std::cout << fmt::format("gpucloud agent {} is running: {} GPUs ({}), server {}, data dir {}\n",
                           info.name, info.gpus.size(), info.gpu_backend, o.server, o.data_dir)
            << std::flush;
  int sig = signals.wait();
  if (sig == SIGTERM || sig == SIGINT) {
    // systemd stop, reboot, scale-down: the node leaves, its jobs resume elsewhere. (kill -9
    // leaves the jobs running; a restarted agent adopts them.)
    spdlog::info("received signal {}; leaving: interrupting this node's jobs", sig);
    (*agent)->leave();
  }
  (*agent)->stop();
  std::lock_guard lock(mu);
  if (fatal) {
    std::cerr << "error: " << fatal->message << "\n";
    return kExitAuth;
  }
  spdlog::info("agent stopped (signal {})", sig);
  return 0;
}

}  // namespace gpucloud::cli
