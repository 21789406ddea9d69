#include "agent/agent.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "agent/checkpoints.h"
#include "agent/doctor.h"
#include "agent/gpu_metrics.h"
#include "agent/mig_devices.h"
#include "common/units.h"
#include "exec/container/container_executor.h"
#include "exec/process/crash_point.h"
#include "metrics/token_file.h"
#include "model/json_limits.h"
#include "model/node_json.h"
#include "net/crypto.h"

namespace gpucloud::agent {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr int64_t kMaxLogChunk = 256 * 1024;
constexpr int64_t kMaxLogsPerPoll = 2 * 1024 * 1024;

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

std::string read_range(const std::string& path, int64_t offset, int64_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(offset);
  std::string out(static_cast<size_t>(max), '\0');
  in.read(out.data(), max);
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

unsigned mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// The first directory on the way to `path` (itself included) that other users cannot pass.
std::optional<std::string> closed_ancestor(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  fs::path partial;
  for (const auto& part : p) {
    partial /= part;
    if ((mode_of(partial.string()) & 01) == 0) return partial.string();
  }
  return std::nullopt;
}

std::string log_path(const LocalReplica& r) {
  return r.process.attempt_dir + "/output.log";
}

// This boot of the machine; "" when the kernel does not say.
std::string current_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  in >> id;
  return id;
}

}  // namespace

Agent::Agent(const AgentConfig& config, const Clock& clock) : config_(config), clock_(clock) {}

Agent::~Agent() {
  stop();
  executor_.reset();  // its exit callbacks use the members below: end its thread first
}

Result<std::unique_ptr<Agent>> Agent::create(const AgentConfig& config, const Clock& clock) {
  std::unique_ptr<Agent> agent(new Agent(config, clock));
  std::error_code ec;
  fs::create_directories(config.data_dir + "/attempts", ec);
  if (ec)
    return internal(
        fmt::format("cannot create agent data dir {}: {}", config.data_dir, ec.message()));
  // Job users may pass through these dirs to their own attempt dirs, never list them; the
  // state file in the data dir is 0600.
  for (const auto& dir : {config.data_dir, config.data_dir + "/attempts"}) {
    if (::chmod(dir.c_str(), 0711) != 0)
      return internal(fmt::format("cannot set the mode of {}: {}", dir, std::strerror(errno)));
  }
  agent->switch_users_ = ::geteuid() == 0;
  if (!agent->switch_users_) {
    spdlog::warn(
        "agent: running as uid {}, not root: jobs run as this same user and can read the "
        "agent's state, credentials and each other's files; run the agent as root to give "
        "each tenant its own user (docs/security.md)",
        ::geteuid());
  } else if (auto blocked = closed_ancestor(config.data_dir + "/attempts")) {
    spdlog::warn(
        "agent: {} is closed to other users (mode {:o}): jobs, which run as their tenant's user, "
        "cannot reach their attempt dirs under {}; choose a data dir whose parents are "
        "traversable (o+x)",
        *blocked, mode_of(*blocked), config.data_dir);
  }
  agent->state_path_ = config.data_dir + "/agent-state.json";
  auto state = AgentState::load(agent->state_path_);
  if (!state) return state.error();
  agent->state_ = std::move(*state);
  agent->machine_ = probe_machine();
  auto gpu_config = config.gpu;
  if (gpu_config.sim_node_name.empty()) gpu_config.sim_node_name = config.name;
  auto backend = gpu::create_gpu_backend(gpu_config);
  if (!backend) return backend.error();
  agent->gpus_ = std::move(*backend);
  auto executor = exec::create_process_executor(config.executor);
  if (!executor) return executor.error();
  exec::ContainerRuntime runtime = exec::detect_container_runtime();
  if (runtime.usable())
    spdlog::info("agent: container jobs run with {} --runtime {} ({}), init {}", runtime.podman,
                 runtime.runtime, runtime.reason,
                 runtime.init.empty() ? "none: a command that is PID 1 ignores SIGTERM unless it "
                                        "handles it (apt-get install catatonit)"
                                      : runtime.init);
  else
    spdlog::warn("agent: container jobs cannot run here: {}", runtime.reason);
  agent->executor_ =
      std::make_unique<exec::ContainerExecutor>(std::move(*executor), std::move(runtime));
  if (config.metrics_enabled && !config.metrics_token_file.empty()) {
    auto token = metrics::read_token_file(config.metrics_token_file, "--metrics-token-file");
    if (!token) return token.error();
    agent->metrics_token_sha256_ = net::sha256_hex(*token);
  }
  auto client = net::HttpClient::create(config.server_url, config.tls);
  if (!client) return client.error();
  agent->client_ = std::move(*client);

  auto discovered = agent->gpus_->discover();
  if (!discovered) return discovered.error();
  NodeInfo& info = agent->node_info_;
  info.name = config.name.empty() ? agent->machine_.hostname : config.name;
  info.hostname = agent->machine_.hostname;
  // A GPU in MIG mode is offered as its MIG devices (docs/containers.md, "MIG"), each reached
  // through its capability devices on real GPUs.
  info.gpus = offered_devices(*discovered);
  if (agent->gpus_->kind() != "simulated") agent->mig_caps_ = read_mig_caps();
  if (info.gpus.size() > 64)
    return invalid(fmt::format(
        "this machine offers {} GPUs and MIG devices; a node offers at most 64: split its GPUs "
        "into fewer MIG devices",
        info.gpus.size()));
  agent->physical_gpus_ = *discovered;
  info.gpu_backend = agent->gpus_->kind();
  {
    std::vector<int> indexes;  // of the physical GPUs, whose device nodes jobs get
    for (const auto& g : *discovered) indexes.push_back(g.index);
    auto devices =
        prepare_gpu_devices(info.gpu_backend == "simulated", config.data_dir + "/devices", indexes,
                            agent->gpus_->driver_version());
    if (!devices) {
      spdlog::warn("agent: container jobs get no GPU device nodes: {}", devices.error().message);
    } else {
      agent->gpu_devices_ = *devices;
      if (Status cdi = write_cdi_spec(*devices, indexes, config.data_dir + "/cdi"); !cdi.ok())
        spdlog::warn("agent: {}", cdi.error().message);
    }
  }
  info.driver_version = agent->gpus_->driver_version();
  info.cuda_version = agent->gpus_->cuda_version();
  info.labels = config.labels;
  info.address = config.advertise_address;
  info.price_per_hour = config.price_per_hour;
  if (!config.spot_notice_command.empty()) {
    agent->spot_source_ =
        command_spot_notices(config.spot_notice_command, config.spot_notice_interval_ms, info.name);
  } else if (config.sim_spot_interrupt_rate > 0) {
    auto cls = info.labels.find("capacity-class");
    if (cls != info.labels.end() && cls->second == "spot")
      agent->spot_source_ =
          simulated_spot_notices(config.sim_spot_interrupt_rate, config.sim_spot_notice_ms,
                                 config.sim_seed ? config.sim_seed : seed_from_name(info.name));
    else
      spdlog::info(
          "agent {}: --sim-spot-interrupt-rate applies only to nodes labelled "
          "capacity-class=spot; this one is not",
          info.name);
  }
  std::string mps_error;
  if (config.mps) {
    auto mps = start_mps_daemons(config.mps_control, config.data_dir + "/mps", info.gpus);
    if (mps) {
      agent->mps_ = std::move(*mps);
      info.gpu_sharing = "mps";
      spdlog::info("agent {}: GPU shares run under CUDA MPS ({} control daemons)", info.name,
                   agent->mps_.size());
    } else {
      mps_error = mps.error().message;
    }
  }
  agent->run_start_doctor(mps_error);
  if (info.gpu_backend == "simulated") {
    int64_t n = std::max<int64_t>(1, static_cast<int64_t>(discovered->size()));
    info.cpu_milli = config.sim_cpu_milli_per_gpu * n;
    info.memory_mib = config.sim_memory_mib_per_gpu * n;
  } else {
    info.cpu_milli = agent->machine_.cpu_count * 1000LL;
    info.memory_mib = agent->machine_.memory_mib;
  }
  return agent;
}

void Agent::run_start_doctor(const std::string& mps_error) {
  DoctorOptions options;
  options.data_dir = config_.data_dir;
  options.min_driver = config_.doctor_min_driver;
  options.min_free_disk_mib = config_.doctor_min_free_disk_mib;
  options.backend = gpus_.get();
  std::vector<DoctorCheck> checks = run_doctor(options);
  if (!mps_error.empty())
    checks.push_back({"mps", "fail", mps_error,
                      "install the NVIDIA driver's nvidia-cuda-mps-control (or give its path with "
                      "--mps-control), or start the agent without --mps"});
  else if (config_.mps)
    checks.push_back(
        {"mps", "ok", fmt::format("{} control daemon(s) serve GPU shares", mps_.size()), ""});
  node_info_.doctor.clear();
  for (auto& c : checks) {
    if (c.status == "fail")
      spdlog::error(
          "agent {}: doctor: {} failed: {}; fix: {}. The server gives this node no jobs "
          "until an agent start passes (docs/doctor.md)",
          node_info_.name, c.name, c.why, c.fix);
    else if (c.status == "warn")
      spdlog::warn("agent {}: doctor: {}: {}; {}", node_info_.name, c.name, c.why, c.fix);
    node_info_.doctor.push_back(
        {std::move(c.name), std::move(c.status), std::move(c.why), std::move(c.fix)});
  }
  // Within what the server accepts (it adds its clock check): never a refused registration.
  clip_node_checks(node_info_.doctor, kMaxNodeChecks - 1);
}

Result<std::vector<int>> Agent::mig_caps_minors(const Allocation& a) const {
  std::vector<int> minors;
  if (mig_caps_.major < 0) return minors;
  for (const auto& share : a.gpus)
    for (const auto& device : node_info_.gpus) {
      if (device.index != share.index || device.mig_parent < 0) continue;
      std::vector<int> found;
      for (const auto& gpu : physical_gpus_)
        for (const auto& m : gpu.mig)
          if (gpu.index == device.mig_parent && m.uuid == device.uuid)
            found = mig_caps_.for_device(gpu.index, m.gpu_instance, m.compute_instance);
      if (found.empty())
        return internal(fmt::format(
            "MIG device {} has no capability devices in /proc/driver/nvidia-caps/mig-minors (or "
            "NVML did not name its GPU and compute instances); restart the agent after changing "
            "MIG instances",
            device.uuid));
      minors.insert(minors.end(), found.begin(), found.end());
    }
  return minors;
}

int Agent::physical_gpu(int index) const {
  for (const auto& g : node_info_.gpus)
    if (g.index == index) return physical_index(g);
  return index;
}

Status Agent::start() {
  executor_->set_exit_callback([this](const exec::ExitInfo& info) { on_exit(info); });
  std::vector<std::pair<std::string, int64_t>> to_stop;
  {
    std::lock_guard lock(mu_);
    // Events are saved only along with other changes: those of a previous agent process are
    // derived again below (starts) or by the executor (ends). Numbers keep growing across
    // restarts, so none is mistaken for one the server has already seen.
    state_.next_seq = std::max(state_.next_seq, clock_.now_ms() * 1000);
    std::string boot = current_boot_id();
    bool rebooted = !state_.boot_id.empty() && !boot.empty() && boot != state_.boot_id;
    state_.boot_id = boot;
    for (auto& [key, r] : state_.replicas) {
      r.before_reboot = rebooted;
      if (!r.exited && r.process.shim_pid == 0) {
        // The previous agent stopped between recording the replica and saving its shim's pid:
        // the attempt's claim tells whether the command started.
        recover_start(key, r);
        continue;
      }
      if (r.exited) continue;
      if (auto st = executor_->adopt(r.process); !st.ok()) {
        spdlog::warn("agent: cannot re-adopt {}: {}; reporting it lost", key, st.error().message);
        r.exited = true;
        push_event({0, key, "exited", 0, 0, true, false, false,
                    "cannot re-adopt: " + st.error().message, clock_.now_ms()});
        continue;
      }
      spdlog::info("agent: re-adopted {} (shim pid {})", key, r.process.shim_pid);
      push_event({0, key, "started", 0, 0, false, false, false, "", r.started_at});
      // A stop that was under way when the previous agent ended: its SIGKILL timer went with
      // it, so stop again.
      if (r.stop_sent) to_stop.push_back({key, r.allocation.grace_ms});
    }
  }
  for (const auto& [key, grace] : to_stop) (void)executor_->stop(key, grace);
  if (config_.metrics_enabled && !metrics_) {
    MetricsEndpointConfig mc;
    mc.host = config_.metrics_host;
    mc.port = config_.metrics_port;
    mc.token_sha256 = metrics_token_sha256_;
    auto endpoint =
        MetricsEndpoint::start(mc, [this](metrics::Format f) { return render_metrics(f); });
    if (!endpoint) return endpoint.error();
    metrics_ = std::move(*endpoint);
    node_info_.metrics_address = metrics_address(config_.metrics_host, metrics_->port());
    bool wildcard = node_info_.metrics_address.front() == ':';
    if (metrics_token_sha256_.empty() && wildcard)
      spdlog::warn(
          "agent {}: GET /metrics on port {} of every address, without a token: anyone who "
          "reaches this node sees its GPUs, jobs and tenants; give --metrics-token-file, or "
          "--metrics-listen with an address only scrapers reach (docs/metrics.md)",
          node_info_.name, metrics_->port());
    spdlog::info("agent {}: GPU metrics on {}/metrics", node_info_.name,
                 node_info_.metrics_address);
  }
  last_contact_ = clock_.now_ms();
  running_ = true;
  for (int i = 0; i < kStarters; ++i) starters_.emplace_back([this] { starter(); });
  loop_thread_ = std::thread([this] { loop(); });
  watch_thread_ = std::thread([this] { watch(); });
  if (spot_source_) spot_thread_ = std::thread([this] { watch_spot_notices(); });
  return {};
}

void Agent::stop() {
  metrics_.reset();  // its thread renders from this agent's state: end it first
  {
    std::lock_guard lock(mu_);  // under the lock, so no waiter misses the change
    if (!running_.exchange(false)) return;
  }
  client_->interrupt();
  cv_.notify_all();
  if (loop_thread_.joinable()) loop_thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  if (spot_thread_.joinable()) spot_thread_.join();
  for (auto& t : starters_) t.join();
  starters_.clear();
}

Status Agent::register_node(bool with_credential) {
  // sent_at_ms: the server checks this node's clock against its own (docs/doctor.md).
  json body = {{"node", node_info_to_json(node_info_)}, {"sent_at_ms", clock_.now_ms()}};
  std::string bearer = config_.join_token;
  {
    std::lock_guard lock(mu_);
    if (!state_.node_id.empty()) {
      body["node_id"] = state_.node_id;
      body["credential"] = state_.credential;
      // The node's own credential from then on: a join token may expire or be revoked.
      if (with_credential && !state_.credential.empty()) bearer = state_.credential;
    }
  }
  auto r = client_->request("POST", "/v1/agent/register", body.dump(),
                            {{"Authorization", "Bearer " + bearer}}, 10'000);
  if (!r) return r.error();
  auto parsed = parse_json_limited(r->body, "register reply", {kMaxDocumentDepth, 0});
  if (!parsed)
    return internal(fmt::format("register: server answered {} with a body that is not JSON: {}",
                                r->status, parsed.error().message));
  json reply = std::move(*parsed);
  if (r->status != 200) {
    std::string msg = r->body.substr(0, 300);
    if (reply.is_object() && reply.contains("error") && reply["error"].is_object() &&
        reply["error"].contains("message") && reply["error"]["message"].is_string())
      msg = reply["error"]["message"].get<std::string>();
    ErrorCode code = r->status == 401   ? ErrorCode::kUnauthenticated
                     : r->status == 403 ? ErrorCode::kPermissionDenied
                                        : ErrorCode::kUnavailable;
    return Error{code, fmt::format("register: {} {}", r->status, msg)};
  }
  if (!reply.is_object() || !reply.contains("node_id") || !reply["node_id"].is_string() ||
      !reply.contains("credential") || !reply["credential"].is_string())
    return Error{ErrorCode::kUnavailable,
                 "register: the server's answer has no node_id and credential"};
  std::lock_guard lock(mu_);
  state_.node_id = reply["node_id"].get<std::string>();
  state_.credential = reply["credential"].get<std::string>();
  save();
  spdlog::info("agent {}: registered as node {} with {} {} GPUs", node_info_.name, state_.node_id,
               node_info_.gpus.size(), node_info_.gpu_backend);
  return {};
}

void Agent::loop() {
  bool registered = false;
  bool use_credential = true;
  int64_t backoff_ms = 100;
  while (running_) {
    if (!registered) {
      auto st = register_node(use_credential);
      bool refused = !st.ok() && (st.error().code == ErrorCode::kUnauthenticated ||
                                  st.error().code == ErrorCode::kPermissionDenied);
      bool had_credential = false;
      {
        std::lock_guard lock(mu_);
        had_credential = use_credential && !state_.credential.empty();
      }
      if (refused && had_credential) {
        // The server no longer knows this node's credential: join afresh with the token.
        spdlog::warn("agent {}: {}; joining again with the join token", node_info_.name,
                     st.error().message);
        use_credential = false;
        continue;
      }
      if (refused) {
        spdlog::error("agent {}: the server refused to let this node join: {}", node_info_.name,
                      st.error().message);
        if (config_.on_fatal) config_.on_fatal(st.error());
        return;
      }
      if (!st.ok()) {
        spdlog::warn("agent {}: {}; retrying in {} ms", node_info_.name, st.error().message,
                     backoff_ms);
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(backoff_ms), [this] { return !running_; });
        backoff_ms = std::min<int64_t>(backoff_ms * 2, 5000);
        continue;
      }
      registered = true;
      use_credential = true;
      backoff_ms = 100;
    }
    // GPU readings ride along at most every 5 s; read outside the lock (NVML is not free).
    std::vector<GpuReading> readings;
    TimeMs now = clock_.now_ms();
    if (now - last_readings_at_ >= 5000) {
      last_readings_at_ = now;
      if (auto r = gpu_readings(now); r.ok()) {
        for (const auto& t : *r)
          readings.push_back(
              {t.index, t.utilization_pct, t.memory_used_mib, t.temperature_c, t.power_w});
      } else {
        spdlog::warn("agent {}: GPU readings: {}", node_info_.name, r.error().message);
      }
    }
    PollRequest req;
    std::string credential;
    {
      std::lock_guard lock(mu_);
      req = build_poll();
      req.gpus = std::move(readings);
      credential = state_.credential;
      poll_in_flight_ = true;
      inflight_has_news_ = !req.events.empty() || !req.logs.empty();
      dirty_ = false;
    }
    auto r = client_->request("POST", "/v1/agent/poll", poll_request_to_json(req).dump(),
                              {{"Authorization", "Bearer " + credential}}, req.hold_ms + 15'000);
    {
      std::lock_guard lock(mu_);
      poll_in_flight_ = false;
    }
    if (!running_) break;
    if (!r) {
      if (r.error().message == "interrupted") continue;
      spdlog::warn("agent {}: poll failed: {}; retrying in {} ms", node_info_.name,
                   r.error().message, backoff_ms);
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(backoff_ms), [this] { return !running_; });
      backoff_ms = std::min<int64_t>(backoff_ms * 2, 5000);
      continue;
    }
    if (r->status == 401 || r->status == 404) {
      spdlog::warn("agent {}: server does not know this node ({}); registering again",
                   node_info_.name, r->status);
      registered = false;
      continue;
    }
    if (r->status != 200) {
      spdlog::warn("agent {}: poll answered {}: {}", node_info_.name, r->status,
                   r->body.substr(0, 200));
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(backoff_ms), [this] { return !running_; });
      backoff_ms = std::min<int64_t>(backoff_ms * 2, 5000);
      continue;
    }
    backoff_ms = 100;
    {
      std::lock_guard lock(mu_);
      last_contact_ = clock_.now_ms();
      if (fenced_) {
        spdlog::info("agent {}: the server is reachable again", node_info_.name);
        fenced_ = false;
      }
    }
    auto parsed = parse_json_limited(r->body, "poll reply", {kMaxDocumentDepth, 0});
    if (!parsed) continue;
    json reply = std::move(*parsed);
    auto response = poll_response_from_json(reply);
    if (!response) {
      spdlog::warn("agent {}: {}", node_info_.name, response.error().message);
      continue;
    }
    spdlog::debug("agent {}: poll answered (version {}, {} allocations)", node_info_.name,
                  response->version, response->allocations.size());
    apply_response(*response);
  }
}

PollRequest Agent::build_poll() {
  PollRequest req;
  req.node_id = state_.node_id;
  req.applied_version = applied_version_;
  req.hold_ms = config_.poll_hold_ms;
  int64_t budget = kMaxLogsPerPoll;
  std::set<std::string> behind;      // replicas with output still unshipped after this poll
  std::set<std::string> unreported;  // replicas whose end the server has not recorded yet
  for (const auto& e : state_.unacked) unreported.insert(e.key);
  for (auto& [key, r] : state_.replicas) {
    // An ended replica counts as running until its exit event is delivered, so the server
    // never mistakes a held-back end for a vanished process.
    if (!r.exited || unreported.count(key)) req.running.push_back(key);
    if (r.process.attempt_dir.empty()) continue;
    std::string path = log_path(r);
    int64_t size = file_size(path);
    if (size > r.log_shipped) {
      std::string data = budget > 0
                             ? read_range(path, r.log_shipped,
                                          std::min({kMaxLogChunk, size - r.log_shipped, budget}))
                             : "";
      budget -= static_cast<int64_t>(data.size());
      if (r.log_shipped + static_cast<int64_t>(data.size()) < size) behind.insert(key);
      if (!data.empty()) req.logs.push_back({key, r.log_shipped, net::base64_encode(data)});
    }
  }
  // A replica's end travels only once its output has: the server then has the whole log when
  // it reports the job ended. Until then its logs go ahead, and the server answers at once.
  // Events go in order (the server acknowledges them by seq): up to the first held-back end.
  for (const auto& e : state_.unacked) {
    if (e.type == "exited" && behind.count(e.key)) break;
    req.events.push_back(e);
  }
  if (!req.events.empty() || !req.logs.empty()) req.hold_ms = 0;
  if (spot_notice_ && !spot_notice_acted_on_) {
    req.spot_notice = *spot_notice_;
    req.hold_ms = 0;  // the answer says whether the server has acted on it
  }
  if (leaving_) {
    req.leaving = true;
    req.hold_ms = std::min<int64_t>(req.hold_ms, 200);  // ends go out as they happen
  }
  return req;
}

void Agent::watch_spot_notices() {
  while (running_) {
    auto notice = spot_source_->check(clock_.now_ms());  // outside the lock: it may take seconds
    std::unique_lock lock(mu_);
    if (notice) {
      spdlog::warn("agent {}: spot notice: {}; the node is gone in {}", node_info_.name,
                   notice->reason,
                   format_duration_ms(std::max<int64_t>(0, notice->deadline_ms - clock_.now_ms())));
      spot_notice_ = std::move(notice);
      wake();  // a held poll goes out again, carrying the notice
      return;  // a node gets one notice
    }
    cv_.wait_for(lock, std::chrono::milliseconds(spot_source_->interval_ms()),
                 [this] { return !running_; });
  }
}

void Agent::leave(int64_t extra_ms) {
  std::vector<std::pair<std::string, int64_t>> to_stop;
  int64_t longest = 0;
  {
    std::lock_guard lock(mu_);
    leaving_ = true;
    TimeMs now = clock_.now_ms();
    for (auto& [key, r] : state_.replicas) {
      if (r.exited || r.stop_sent || r.starting) continue;
      longest = std::max(longest, r.allocation.grace_ms);
      // At once, not after the server's answer: the server may be out of reach.
      interrupt(key, r,
                {interrupt_cause::kAgentShutdown, now + r.allocation.grace_ms,
                 "the node's agent is stopping"},
                to_stop);
    }
    dirty_ = true;
  }
  spdlog::info("agent {}: leaving; interrupting {} replicas", node_info_.name, to_stop.size());
  for (const auto& [key, grace] : to_stop) (void)executor_->stop(key, grace);
  client_->interrupt();  // the held poll goes out again, saying that the node leaves
  TimeMs until = clock_.now_ms() + longest + extra_ms;
  std::unique_lock lock(mu_);
  while (running_ && clock_.now_ms() < until) {
    bool settled =
        state_.unacked.empty() && std::all_of(state_.replicas.begin(), state_.replicas.end(),
                                              [](const auto& kv) { return kv.second.exited; });
    if (settled) break;
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

void Agent::apply_response(const PollResponse& response) {
  bool queued = false;
  std::vector<std::pair<std::string, int64_t>> to_stop;
  {
    std::lock_guard lock(mu_);
    bool acked_any = false, forgot_any = false;
    if (spot_notice_ && !spot_notice_acted_on_ &&
        (response.node_state == "interrupting" || response.node_state == "gone")) {
      spot_notice_acted_on_ = true;
      spdlog::info("agent {}: the server has acted on the spot notice (node {})", node_info_.name,
                   response.node_state);
    }
    while (!state_.unacked.empty() && state_.unacked.front().seq <= response.acked_seq) {
      state_.unacked.pop_front();
      acked_any = true;
    }
    for (const auto& [key, offset] : response.log_offsets) {
      auto it = state_.replicas.find(key);
      if (it != state_.replicas.end()) it->second.log_shipped = offset;
    }
    std::set<std::string> desired;
    for (const auto& a : response.allocations) {
      desired.insert(a.key);
      if (state_.replicas.count(a.key) || leaving_) continue;
      LocalReplica& r = state_.replicas[a.key];  // listed as running from now on
      r.allocation = a;
      r.starting = true;
      start_queue_.push_back(a);
      queued = true;
    }
    apply_warnings(response, desired);
    for (auto it = state_.replicas.begin(); it != state_.replicas.end();) {
      auto& r = it->second;
      if (!desired.count(it->first) && !r.exited && !r.stop_sent && !r.starting) {
        if (auto notice = response.interrupts.find(it->first);
            notice != response.interrupts.end()) {
          interrupt(it->first, r, notice->second, to_stop);
        } else {
          r.stop_sent = true;
          to_stop.push_back({it->first, r.allocation.grace_ms});
        }
      }
      // Forget replicas that ended, whose end the server has recorded and whose log it has.
      bool acked = std::none_of(state_.unacked.begin(), state_.unacked.end(),
                                [&](const ReplicaEvent& e) { return e.key == it->first; });
      if (r.exited && !r.starting && acked && !desired.count(it->first) &&
          r.log_shipped >= file_size(log_path(r))) {
        std::error_code ec;
        if (!r.process.attempt_dir.empty()) fs::remove_all(r.process.attempt_dir, ec);
        it = state_.replicas.erase(it);
        forgot_any = true;
      } else {
        ++it;
      }
    }
    bool changed = queued || !to_stop.empty() || applied_version_ != response.version ||
                   acked_any || forgot_any;
    applied_version_ = response.version;
    // Durable when replicas are about to start: whatever crashes, a restarted agent knows it
    // may have started them, and settles them through their attempts' claims.
    if (changed) save(queued);
  }
  for (const auto& [key, grace] : to_stop) {
    spdlog::info("agent {}: stopping {} (grace {})", node_info_.name, key,
                 format_duration_ms(grace));
    (void)executor_->stop(key, grace);
  }
  if (queued) cv_.notify_all();
}

void Agent::apply_warnings(const PollResponse& response, const std::set<std::string>& desired) {
  for (auto& [key, r] : state_.replicas) {
    if (!desired.count(key) || r.exited || r.stop_sent || r.process.attempt_dir.empty()) continue;
    std::string path = r.process.attempt_dir + "/" + kInterruptFile;
    auto warning = response.warnings.find(key);
    if (warning != response.warnings.end() && warning->second.deadline_ms != r.warned_deadline) {
      if (auto st = write_interrupt_file(path, warning->second, r.job_gid); !st.ok()) {
        spdlog::warn("agent {}: {}: cannot write the idle warning: {}", node_info_.name, key,
                     st.error().message);
        continue;
      }
      r.warned_deadline = warning->second.deadline_ms;
      spdlog::info("agent {}: warned {}: {}", node_info_.name, key, warning->second.message);
    } else if (warning == response.warnings.end() && r.warned_deadline != 0) {
      std::error_code ec;
      fs::remove(path, ec);  // the warning is withdrawn: the job is busy again
      r.warned_deadline = 0;
    }
  }
}

int Agent::metrics_port() const {
  return metrics_ ? metrics_->port() : 0;
}

Result<std::vector<gpu::GpuTelemetry>> Agent::gpu_readings(TimeMs now) {
  std::lock_guard lock(readings_mu_);
  if (have_readings_ && now - readings_at_ < kReadingsMaxAgeMs) return readings_;
  if (gpus_->utilization_from_processes()) gpus_->set_process_load(process_load_by_gpu(now));
  auto r = gpus_->telemetry();
  if (!r) return r.error();
  readings_ = std::move(*r);
  readings_at_ = now;
  have_readings_ = true;
  return readings_;
}

std::string Agent::render_metrics(metrics::Format format) {
  auto readings = gpu_readings(clock_.now_ms());
  if (!readings)
    spdlog::warn("agent {}: GPU readings for /metrics: {}", node_info_.name,
                 readings.error().message);
  std::vector<GpuHolder> holders;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, r] : state_.replicas) {
      if (r.exited) continue;
      for (const auto& g : r.allocation.gpus)
        holders.push_back({physical_gpu(g.index), r.allocation.job_id, r.allocation.tenant});
    }
  }
  // Readings are of physical GPUs, MIG or not (only the name and GPUs are read: other fields
  // may be written by start() while a scrape runs).
  NodeInfo physical;
  physical.name = node_info_.name;
  physical.gpus = physical_gpus_;
  return metrics::render(
      gpu_metric_families(physical, readings ? *readings : std::vector<gpu::GpuTelemetry>{},
                          holders),
      format);
}

std::map<int, int> Agent::process_load_by_gpu(TimeMs now) {
  struct Bound {
    std::string key;
    std::vector<GpuShare> gpus;
    TimeMs started_at;
  };
  std::vector<Bound> bound;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, r] : state_.replicas)
      if (!r.exited && !r.starting && r.started_at > 0 && !r.allocation.gpus.empty())
        bound.push_back({key, r.allocation.gpus, r.started_at});
  }
  std::map<int, int> load;
  std::map<std::string, std::pair<double, TimeMs>> samples;
  for (const auto& b : bound) {
    auto stats = executor_->stats(b.key);
    if (!stats.ok()) continue;
    auto last = cpu_samples_.find(b.key);
    auto [cpu_before, at_before] =
        last != cpu_samples_.end() ? last->second : std::pair<double, TimeMs>{0.0, b.started_at};
    samples[b.key] = {stats->cpu_seconds, now};
    double wall_s = static_cast<double>(now - at_before) / 1000;
    if (wall_s <= 0) continue;
    double pct = std::clamp(100 * (stats->cpu_seconds - cpu_before) / wall_s, 0.0, 100.0);
    for (const auto& g : b.gpus) {
      int& gpu_load = load[physical_gpu(g.index)];
      gpu_load = std::min(100, gpu_load + static_cast<int>(std::lround(pct * g.milli / 1000)));
    }
  }
  cpu_samples_ = std::move(samples);  // replicas that ended are dropped
  return load;
}

void Agent::starter() {
  for (;;) {
    Allocation next;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !running_ || !start_queue_.empty(); });
      if (!running_) return;
      next = std::move(start_queue_.front());
      start_queue_.pop_front();
    }
    start_replica(next);
  }
}

void Agent::start_replica(const Allocation& a) {
  spdlog::debug("agent {}: starting {}", node_info_.name, a.key);
  exec::LaunchSpec spec;
  spec.key = a.key;
  spec.argv = a.command;
  spec.attempt_dir = config_.data_dir + "/attempts/" + a.key;
  std::string job_dir = exec::job_dir_of(spec.attempt_dir);
  const bool container = !a.container.image.empty();
  // A container's workdir is inside its image: its WORKDIR unless the job gives one.
  spec.workdir = container ? a.workdir : a.workdir.empty() ? job_dir : a.workdir;
  spec.memory_limit_mib = a.memory_mib;
  std::string uuids;
  std::vector<int> numa;
  for (const auto& g : a.gpus) {
    uuids += (uuids.empty() ? "" : ",") + g.uuid;
    for (const auto& gpu : node_info_.gpus)
      if (gpu.index == g.index) numa.push_back(gpu.numa_node);
  }
  spec.cpus = cpus_for_gpus(machine_, numa);
  spec.env = a.env;
  if (!container && !spec.env.count("PATH"))  // a container has its image's PATH
    spec.env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  auto user = set_job_user(a, spec);
  if (!user.ok()) return refuse_start(a.key, user.error().message);
  if (!*user) {
    if (const passwd* pw = ::getpwuid(::getuid())) {
      if (!spec.env.count("HOME")) spec.env["HOME"] = pw->pw_dir;
      if (!spec.env.count("USER")) spec.env["USER"] = pw->pw_name;
    }
  }
  // The job's checkpoint directory, kept across its attempts (docs/interruptions.md).
  auto checkpoints = ensure_checkpoint_dir(checkpoint_root(), a.job_id, *user ? spec.uid : -1,
                                           *user ? spec.gid : -1);
  if (!checkpoints.ok())
    return refuse_start(a.key, "checkpoint directory: " + checkpoints.error().message);
  spec.env["GPUCLOUD_CHECKPOINT_DIR"] = *checkpoints;
  spec.env["GPUCLOUD_RESUMED"] = read_checkpoint(*checkpoints).committed_at > 0 ? "1" : "0";
  spec.env["GPUCLOUD_INTERRUPT"] = spec.attempt_dir + "/" + kInterruptFile;
  spec.env["CUDA_VISIBLE_DEVICES"] = uuids;
  if (container) {
    // A container sees only its GPUs' device nodes, which CUDA numbers from 0. MIG devices are
    // named by their uuids: the parent GPU's node reaches all of its MIG devices.
    std::string ordinals;
    bool mig = false;
    for (size_t i = 0; i < a.gpus.size(); ++i) {
      ordinals += (i == 0 ? "" : ",") + std::to_string(i);
      mig |= physical_gpu(a.gpus[i].index) != a.gpus[i].index;
    }
    spec.env["CUDA_VISIBLE_DEVICES"] = mig ? uuids : ordinals;
    if (Status set = set_container(a, *checkpoints, spec); !set.ok())
      return refuse_start(a.key, set.error().message);
  }
  if (!container) {
    // Its GPUs' device nodes only (docs/security.md, "GPU devices"): /dev/nvidiaN is minor N,
    // and a MIG device is reached through its GPU's node.
    std::set<int> minors;
    for (const auto& g : a.gpus) minors.insert(physical_gpu(g.index));
    spec.gpu_device_minors = std::vector<int>(minors.begin(), minors.end());
    // And of the MIG capability devices, its MIG devices' only (docs/security.md).
    auto caps = mig_caps_minors(a);
    if (!caps.ok()) return refuse_start(a.key, caps.error().message);
    spec.gpu_caps_major = mig_caps_.major;
    spec.gpu_caps_minors = std::move(*caps);
    // A share on an MPS GPU runs as an MPS client with its limits (docs/containers.md).
    if (a.gpus.size() == 1 && a.gpus.front().milli < 1000)
      if (auto mps = mps_.find(physical_gpu(a.gpus.front().index)); mps != mps_.end())
        for (auto& [k, v] : mps_client_env(mps->second, a.gpus.front().milli, a.gpu_memory_mib))
          spec.env[k] = v;
  }
  spec.env["NVIDIA_VISIBLE_DEVICES"] = uuids.empty() ? "void" : uuids;
  spec.env["GPUCLOUD_JOB_ID"] = a.job_id;
  spec.env["GPUCLOUD_ATTEMPT"] = std::to_string(a.attempt);
  spec.env["GPUCLOUD_ATTEMPT_DIR"] = job_dir;
  spec.env["GPUCLOUD_REPLICA"] = std::to_string(a.rank);
  spec.env["GPUCLOUD_REPLICAS"] = std::to_string(a.replicas);
  // The rendezvous torchrun and NCCL expect (docs/jobspec.md): one node rank per replica.
  spec.env["WORLD_SIZE"] = std::to_string(a.replicas);
  spec.env["RANK"] = std::to_string(a.rank);
  spec.env["NODE_RANK"] = std::to_string(a.rank);
  spec.env["LOCAL_WORLD_SIZE"] = std::to_string(std::max<size_t>(1, a.gpus.size()));
  spec.env["MASTER_ADDR"] = a.master_addr.empty() ? "127.0.0.1" : a.master_addr;
  if (a.master_port > 0) spec.env["MASTER_PORT"] = std::to_string(a.master_port);
  spec.env["GPUCLOUD_NODE"] = node_info_.name;
  if (!a.gpus.empty() && a.gpus.front().milli < 1000)
    spec.env["GPUCLOUD_GPU_MILLI"] = std::to_string(a.gpus.front().milli);
  {
    std::lock_guard lock(mu_);
    auto& local = state_.replicas[a.key];
    local.started_at = clock_.now_ms();
    local.process.key = a.key;
    local.process.attempt_dir = spec.attempt_dir;
    local.job_gid = *user ? spec.gid : -1;
    // Already saved (by apply_response, durably) with no shim pid: after a crash from here
    // until the save below, the next agent settles it with recover_start().
  }
  exec::crash_point("agent.before_start");
  auto started = executor_->start(spec);
  exec::crash_point("agent.started");
  std::lock_guard lock(mu_);
  auto& r = state_.replicas[a.key];
  r.starting = false;
  if (!started && started.error().code == ErrorCode::kConflict) {
    // The attempt was started before (its claim exists): never run it again, settle it.
    spdlog::warn("agent {}: {}", node_info_.name, started.error().message);
    recover_start(a.key, r);
    return;
  }
  if (!started) {
    r.exited = true;
    push_event(
        {0, a.key, "exited", 127, 0, false, true, false, started.error().message, clock_.now_ms()});
    return;
  }
  if (!r.exited) r.process = *started;
  save();  // the shim's pid: what a restarted agent re-adopts
  exec::crash_point("agent.start_saved");
  spdlog::info("agent {}: started {} (GPUs {})", node_info_.name, a.key,
               uuids.empty() ? "none" : uuids);
  if (!r.start_reported)
    push_event({0, a.key, "started", 0, 0, false, false, false, "", r.started_at});
}

void Agent::refuse_start(const std::string& key, const std::string& message) {
  spdlog::warn("agent {}: cannot start {}: {}", node_info_.name, key, message);
  std::lock_guard lock(mu_);
  auto& r = state_.replicas[key];
  r.starting = false;
  r.exited = true;
  push_event({0, key, "exited", 1, 0, false, true, false, message, clock_.now_ms()});
  save();
}

Status Agent::set_container(const Allocation& a, const std::string& checkpoints,
                            exec::LaunchSpec& spec) {
  const ContainerSpec& c = a.container;
  exec::ContainerLaunch launch;
  launch.image = c.image;
  launch.entrypoint = c.entrypoint;
  launch.shm_size_mib = c.shm_size_mib;
  launch.pull = c.pull_policy == PullPolicy::kAlways  ? "always"
                : c.pull_policy == PullPolicy::kNever ? "never"
                                                      : "missing";
  for (const auto& m : c.mounts) {
    if (m.source[0] == '/') {
      std::string source = fs::path(m.source).lexically_normal().string();
      bool allowed = false;
      for (const auto& prefix : config_.container_mount_allow) {
        std::string p = fs::path(prefix).lexically_normal().string();
        if (source == p ||
            (source.rfind(p, 0) == 0 && (p.back() == '/' || source[p.size()] == '/')))
          allowed = true;
      }
      if (!allowed)
        return invalid(fmt::format(
            "mounts: host path {} is not under a path this node allows jobs to mount ({}); "
            "use a named volume, or ask the operator to add it to --container-mount-allow",
            m.source,
            config_.container_mount_allow.empty()
                ? std::string("none")
                : fmt::format("{}", fmt::join(config_.container_mount_allow, ", "))));
    }
    // A named volume belongs to the job's tenant: podman's volume names are global on the
    // node, so another tenant's job naming the same volume gets its own.
    std::string source = m.source[0] == '/' ? m.source : "gpucloud." + a.tenant + "." + m.source;
    launch.mounts.push_back({source, m.target, m.read_only});
  }
  if (!c.registry_auth.empty()) {
    if (config_.registry_auth_dir.empty())
      return invalid("registry_auth: " + c.registry_auth +
                     " names a credentials file, but this node has no --registry-auth-dir");
    // Credentials belong to a tenant: a job may name only its own tenant's files.
    std::string file = config_.registry_auth_dir + "/" + a.tenant + "/" + c.registry_auth + ".json";
    if (!fs::exists(file))
      return invalid("registry_auth: " + file + " does not exist on node " + node_info_.name +
                     "; put the registry's credentials there (podman login --authfile " + file +
                     ")");
    launch.auth_file = file;
  }
  std::set<int> physical;
  for (const auto& g : a.gpus) physical.insert(physical_gpu(g.index));
  launch.devices = gpu_devices_.device_args({physical.begin(), physical.end()});
  // A MIG device is used through its capability devices, which CUDA opens in the container.
  auto caps = mig_caps_minors(a);
  if (!caps.ok()) return caps.error();
  for (int minor : *caps) {
    std::string node = "/dev/nvidia-caps/nvidia-cap" + std::to_string(minor);
    if (!fs::exists(node))
      return invalid(node + " does not exist on node " + node_info_.name +
                     ": the driver makes MIG capability nodes on demand (`nvidia-ctk system "
                     "create-device-nodes` makes them all)");
    launch.devices.push_back(node + ":" + node);
  }
  // The driver's libraries and tools, which images built for NVIDIA's toolkit do not carry.
  if (!a.gpus.empty())
    for (const auto& file : gpu_devices_.driver_files) launch.mounts.push_back({file, file, true});
  launch.shared_paths.push_back(checkpoints);
  spec.container = std::move(launch);
  return {};
}

Result<bool> Agent::set_job_user(const Allocation& a, exec::LaunchSpec& spec) {
  if (!switch_users_) return false;
  Result<JobIds> ids = Error{ErrorCode::kInternal, ""};
  {
    std::lock_guard lock(mu_);
    ids = job_ids_for(a, config_.job_uid_range, state_.tenant_uids, host_id_taken);
  }
  if (!ids.ok()) return ids.error();
  spec.uid = ids->uid;
  spec.gid = ids->gid;
  if (spec.uid == 0) return false;  // allow_root: root's HOME and USER
  std::string name = "gpucloud-" + (a.tenant.empty() ? std::string("job") : a.tenant);
  if (const passwd* pw = ::getpwuid(static_cast<uid_t>(spec.uid))) name = pw->pw_name;
  if (!spec.env.count("HOME")) spec.env["HOME"] = exec::job_dir_of(spec.attempt_dir);
  if (!spec.env.count("USER")) spec.env["USER"] = name;
  if (!spec.env.count("LOGNAME")) spec.env["LOGNAME"] = name;
  return true;
}

void Agent::on_exit(const exec::ExitInfo& info) {
  std::string job_id;
  {
    std::lock_guard lock(mu_);
    auto it = state_.replicas.find(info.key);
    if (it == state_.replicas.end() || it->second.exited) return;
    job_id = it->second.allocation.job_id;
  }
  // Outside the lock: it walks the job's checkpoint files. (One exit callback per process.)
  CheckpointState checkpoint = read_checkpoint(checkpoint_root() + "/" + job_id);
  // A job that failed on a full disk is told so, not just its exit code.
  std::optional<std::string> disk_full =
      info.exit_code != 0 ? checkpoint_space_problem(checkpoint_root() + "/" + job_id)
                          : std::nullopt;
  std::lock_guard lock(mu_);
  auto it = state_.replicas.find(info.key);
  if (it == state_.replicas.end() || it->second.exited) return;
  auto& r = it->second;
  r.exited = true;
  std::string message = info.message;
  bool lost = info.lost;
  if (r.fenced) {
    lost = true;  // not the job's failure: the server re-queues it
    message = fmt::format("stopped by the agent: no contact with the server for over {}",
                          format_duration_ms(config_.fence_after_ms));
  } else if (r.over_runtime) {
    message = fmt::format("stopped after exceeding max_runtime {}",
                          format_duration_ms(r.allocation.max_runtime_ms));
  } else if (disk_full && !lost) {
    message = *disk_full + (message.empty() ? "" : "; " + message);
  }
  spdlog::info("agent {}: {} exited with code {}{}", node_info_.name, info.key, info.exit_code,
               message.empty() ? "" : " (" + message + ")");
  // A command that ended while start_replica() was still recording its start: its start goes
  // out first, so that the server sees the attempt run (events are applied in order).
  if (r.starting && !info.failed_to_start && !info.never_started) {
    push_event({0, info.key, "started", 0, 0, false, false, false, "",
                r.started_at ? r.started_at : clock_.now_ms()});
    r.start_reported = true;
  }
  ReplicaEvent event{0, info.key, "exited", info.exit_code, info.signal, lost};
  event.failed_to_start = info.failed_to_start;
  event.over_runtime = r.over_runtime;
  event.message = message;
  event.at = clock_.now_ms();
  // A claim lost in a machine crash does not prove that the command never ran.
  event.not_started = info.never_started && !r.before_reboot;
  event.checkpoint_at = checkpoint.committed_at;
  event.checkpoint_bytes = checkpoint.bytes;
  event.interrupt_cause = r.interrupt_cause;
  push_event(std::move(event));
}

void Agent::recover_start(const std::string& key, LocalReplica& r) {
  std::string dir =
      r.process.attempt_dir.empty() ? config_.data_dir + "/attempts/" + key : r.process.attempt_dir;
  auto found = executor_->recover_start(key, dir);
  r.process.key = key;
  r.process.attempt_dir = dir;  // removed with the replica once the server has its end
  if (!found || found->never_started) {
    r.exited = true;
    ReplicaEvent event{0, key, "exited", -1, 0, true};
    event.at = clock_.now_ms();
    if (found && r.before_reboot) {
      // Its claim may have been lost with the page cache: nothing proves it did not run.
      spdlog::warn("agent {}: the machine restarted while {} was starting; reporting it lost",
                   node_info_.name, key);
      event.message = "the machine restarted while it was starting";
    } else if (found) {
      spdlog::info("agent {}: {} never started; reporting it so", node_info_.name, key);
      event.not_started = true;
      event.message = "its start was cut short before the command ran (it never did)";
    } else {
      spdlog::warn("agent {}: cannot tell whether {} started: {}; reporting it lost",
                   node_info_.name, key, found.error().message);
      event.message = "cannot tell whether it started: " + found.error().message;
    }
    push_event(std::move(event));
    return;
  }
  r.process = found->ref;
  if (r.started_at == 0) r.started_at = clock_.now_ms();
  save();
  spdlog::info("agent {}: re-adopted {} (shim pid {}) from its claim", node_info_.name, key,
               r.process.shim_pid);
  push_event({0, key, "started", 0, 0, false, false, false, "", r.started_at});
}

void Agent::push_event(ReplicaEvent event) {
  event.seq = state_.next_seq++;
  // An end frees resources for waiting jobs: it travels at once. A start can wait for the
  // watcher's next round (or ride along with the next end).
  bool urgent = event.type != "started";
  state_.unacked.push_back(std::move(event));
  if (urgent) wake();
}

void Agent::wake() {
  // Called with mu_ held: abort a held poll so the news travels now.
  dirty_ = true;
  if (poll_in_flight_) client_->interrupt();
}

void Agent::save(bool durable) {
  if (auto st = state_.save(state_path_, durable); !st.ok())
    spdlog::error("agent {}: {}", node_info_.name, st.error().message);
}

void Agent::watch() {
  while (running_) {
    std::vector<std::pair<std::string, int64_t>> to_stop;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return !running_; });
      if (!running_) break;
      TimeMs now = clock_.now_ms();
      bool grew = false;
      for (auto& [key, r] : state_.replicas) {
        if (!r.process.attempt_dir.empty() && file_size(log_path(r)) > r.log_shipped) grew = true;
        if (!r.exited && !r.stop_sent && !r.starting && r.started_at > 0 &&
            r.allocation.max_runtime_ms > 0 && now - r.started_at > r.allocation.max_runtime_ms) {
          r.over_runtime = true;
          interrupt(key, r,
                    {interrupt_cause::kMaxRuntime, now + r.allocation.grace_ms,
                     "ran longer than its max_runtime " +
                         format_duration_ms(r.allocation.max_runtime_ms)},
                    to_stop);
        }
      }
      // News that did not cut the held poll short by itself (output, starts) goes out within
      // 50 ms; a poll that already carries news is answered at once anyway.
      if ((grew || !state_.unacked.empty()) && poll_in_flight_ && !inflight_has_news_ && !dirty_)
        wake();
      fence_if_cut_off(now, to_stop);
    }
    for (const auto& [key, grace] : to_stop) (void)executor_->stop(key, grace);
  }
}

std::string Agent::checkpoint_root() const {
  return config_.checkpoint_root.empty() ? config_.data_dir + "/checkpoints"
                                         : config_.checkpoint_root;
}

void Agent::interrupt(const std::string& key, LocalReplica& r, const InterruptNotice& notice,
                      std::vector<std::pair<std::string, int64_t>>& to_stop) {
  r.stop_sent = true;
  r.interrupt_cause = notice.cause;
  if (!r.process.attempt_dir.empty()) {
    if (auto st =
            write_interrupt_file(r.process.attempt_dir + "/" + kInterruptFile, notice, r.job_gid);
        !st.ok())
      spdlog::warn("agent {}: {}: cannot write the interrupt file: {}", node_info_.name, key,
                   st.error().message);
  }
  int64_t grace = std::max<int64_t>(0, notice.deadline_ms - clock_.now_ms());
  spdlog::info("agent {}: interrupting {} ({}: {}), SIGKILL in {}", node_info_.name, key,
               notice.cause, notice.message, format_duration_ms(grace));
  to_stop.push_back({key, grace});
}

void Agent::fence_if_cut_off(TimeMs now, std::vector<std::pair<std::string, int64_t>>& to_stop) {
  // Called with mu_ held. A held poll is answered within poll_hold_ms: silence counts from then.
  if (config_.fence_after_ms <= 0 ||
      now - last_contact_ <= config_.fence_after_ms + config_.poll_hold_ms)
    return;
  for (auto& [key, r] : state_.replicas) {
    if (r.exited || r.stop_sent || r.starting) continue;
    r.fenced = true;
    interrupt(key, r,
              {interrupt_cause::kFenced, now + r.allocation.grace_ms,
               "the node lost contact with the server"},
              to_stop);
  }
  if (!fenced_)
    spdlog::warn("agent {}: no contact with the server for {}; stopping {} replicas (fencing)",
                 node_info_.name, format_duration_ms(now - last_contact_), to_stop.size());
  fenced_ = true;
}

}  // namespace gpucloud::agent
