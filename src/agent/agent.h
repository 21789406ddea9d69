// Agent: runs on each GPU server. It registers with the server, then keeps one long-poll
// open that carries its status, events and logs up and its desired replicas down, and starts
// and stops processes to match. Jobs outlive the agent: a restarted agent re-adopts them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_state.h"
#include "agent/gpu_devices.h"
#include "agent/job_users.h"
#include "agent/machine.h"
#include "agent/metrics_endpoint.h"
#include "agent/mig_caps.h"
#include "agent/mps.h"
#include "agent/spot_notice.h"
#include "common/clock.h"
#include "exec/executor.h"
#include "gpu/gpu_backend.h"
#include "net/http_client.h"

namespace gpucloud::agent {

struct AgentConfig {
  std::string server_url;  // https://HOST:PORT or http://HOST:PORT
  net::TlsClientOptions tls;
  std::string join_token;  // agent join token (or the admin token)
  std::string data_dir;    // state file and attempt dirs
  std::string name;        // node name; default: the hostname
  gpu::GpuBackendConfig gpu;
  int64_t sim_cpu_milli_per_gpu = 16'000;  // simulated nodes advertise these, not the host's
  int64_t sim_memory_mib_per_gpu = 128 * 1024;
  std::map<std::string, std::string> labels;
  int64_t poll_hold_ms = 5000;
  exec::ProcessExecutorConfig executor;
  // Tenants without a configured uid get one of these (docs/security.md, "Job code"). Used
  // only when the agent runs as root; otherwise jobs run as the agent's user.
  JobUidRange job_uid_range;
  std::string advertise_address;  // reported to the server; "" = the address it sees
  // Cut off from the server for longer than this, the agent stops its replicas itself
  // (interruption signal, grace, kill), so no two attempts of a job overlap. 0 = never.
  int64_t fence_after_ms = 0;
  // Where jobs' checkpoint directories live (docs/interruptions.md): one per job, kept across
  // its attempts. A path every node of the cluster shares lets a job resume on another node.
  // "" = <data_dir>/checkpoints.
  std::string checkpoint_root;
  // Container jobs (docs/containers.md): the directory of registry credentials files a job
  // names with registry_auth (NAME.json; "" = none may be named), and the host paths under which
  // jobs may mount host directories (empty = no host path; named volumes are always allowed).
  std::string registry_auth_dir;
  std::vector<std::string> container_mount_allow;
  // The node's hourly price in USD, reported to the server (docs/jobspec.md, "max_price");
  // -1 = unknown.
  double price_per_hour = -1;
  // Spot notices (docs/interruptions.md, "Spot notices"): a command run every
  // spot_notice_interval_ms whose exit 0 with a JSON notice means the provider takes the node.
  // Empty: none.
  std::vector<std::string> spot_notice_command;
  int64_t spot_notice_interval_ms = 5000;
  // Simulated spot interruptions: on a node labelled capacity-class=spot, notices drawn at this
  // rate per hour (Poisson, seeded with sim_seed), each with sim_spot_notice_ms of warning.
  // 0 = none.
  double sim_spot_interrupt_rate = 0;
  int64_t sim_spot_notice_ms = 120'000;
  uint64_t sim_seed = 0;  // 0: a seed from the node's name
  // The node's GET /metrics with per-GPU series under dcgm-exporter's names (docs/metrics.md,
  // "Agent metrics"), on its own thread. Port 0 = any free port; the bound address is reported
  // to the server, which lists it in GET /v1/sd/agents.
  bool metrics_enabled = false;
  std::string metrics_host = "0.0.0.0";
  int metrics_port = 9400;
  std::string metrics_token_file;  // "" = no token needed (bind to an address only scrapers reach)
  // CUDA MPS for GPU shares (docs/containers.md, "Fractional GPUs"): the agent starts and owns
  // one MPS control daemon per GPU (`mps_control -d`) and gives each share's process its
  // limits. Off: shares are best-effort, and the node says so.
  bool mps = false;
  std::string mps_control = "nvidia-cuda-mps-control";
  // `gpucloud doctor` at start (docs/doctor.md): the verdicts go to the server with the node;
  // a failed check keeps jobs off it until an agent start passes.
  std::string doctor_min_driver = "470.57.02";
  int64_t doctor_min_free_disk_mib = 1024;
  // Called (from the agent's thread) when the agent cannot go on, e.g. its join token was
  // refused; the poll loop has ended then.
  std::function<void(const Error&)> on_fatal;
};

class Agent {
 public:
  static Result<std::unique_ptr<Agent>> create(const AgentConfig& config, const Clock& clock);
  ~Agent();

  /// Discovers GPUs, re-adopts processes from the state file and starts the poll loop
  /// (registration is retried in the loop until the server answers).
  Status start();
  /// Stops the loop. Running jobs keep running (they belong to the node, not this process).
  void stop();
  /// Leaves the cluster cleanly (docs/interruptions.md, "Agents that leave"): interrupts every
  /// job here (cause agent-shutdown, each with its grace period), tells the server the node
  /// is leaving so it takes no new work and re-queues the jobs at once, and returns when their
  /// ends have reached the server or after the longest grace period and `extra_ms` more.
  /// The caller then calls stop().
  void leave(int64_t extra_ms = 5000);
  /// What this agent reports about its machine (GPUs, CPUs, memory, backend, and after
  /// start() its metrics address).
  const NodeInfo& node_info() const { return node_info_; }
  /// The port of the agent's GET /metrics, or 0 when it serves none (before start(), or with
  /// metrics off).
  int metrics_port() const;
  /// GET /metrics's body: every GPU's readings under dcgm-exporter's names, with the job and
  /// tenant holding it. Thread-safe.
  std::string render_metrics(metrics::Format format);

 private:
  Agent(const AgentConfig& config, const Clock& clock);
  void loop();
  /// Registers (or re-registers) the node: with its own credential when it has one and
  /// with_credential is set, else with the join token.
  Status register_node(bool with_credential);
  PollRequest build_poll();
  void apply_response(const PollResponse& response);
  void start_replica(const Allocation& alloc);
  /// Ends a replica that cannot be started (no user, no checkpoint dir, a bad container spec):
  /// logs why and reports it exited as a failed start with that message.
  void refuse_start(const std::string& key, const std::string& message);
  /// Sets the job's user in spec (and HOME, USER, LOGNAME unless the job gives them); false,
  /// with the reason, when no user can be given to it.
  /// Fills spec.container from a container allocation: its mounts (host paths only under
  /// container_mount_allow), credentials file, GPU device nodes and checkpoint dir; says why not.
  Status set_container(const Allocation& a, const std::string& checkpoints, exec::LaunchSpec& spec);
  Result<bool> set_job_user(const Allocation& a, exec::LaunchSpec& spec);
  void starter();  // a worker of the start queue
  void on_exit(const exec::ExitInfo& info);
  void watch();  // log growth, max_runtime and fencing
  /// Looks for a spot notice at the source's interval until one comes; then the polls carry it
  /// until the server answers that the node is interrupting.
  void watch_spot_notices();
  /// Stops every replica once the server has been out of reach for fence_after_ms.
  void fence_if_cut_off(TimeMs now, std::vector<std::pair<std::string, int64_t>>& to_stop);
  /// Starts the interruption of a running replica: records the cause, writes the job's
  /// interrupt file and queues its stop with the notice's deadline as the grace. Called with
  /// mu_ held; the caller stops what `to_stop` lists once it has let go of the lock.
  void interrupt(const std::string& key, LocalReplica& r, const InterruptNotice& notice,
                 std::vector<std::pair<std::string, int64_t>>& to_stop);
  /// For a GPU backend whose utilisation is its processes' load: each GPU's load since the
  /// last call, from the CPU time of the replicas bound to it (a share counts its fraction).
  /// Called with readings_mu_ held, without mu_.
  std::map<int, int> process_load_by_gpu(TimeMs now);
  /// Every GPU's readings, read afresh when the last ones are older than kReadingsMaxAgeMs (the
  /// poll loop and scrapes share them: NVML is not free, and process load needs a span).
  Result<std::vector<gpu::GpuTelemetry>> gpu_readings(TimeMs now);
  static constexpr int64_t kReadingsMaxAgeMs = 2000;
  /// Writes or removes the idle warnings the server sends for replicas that keep running.
  /// Called with mu_ held.
  void apply_warnings(const PollResponse& response, const std::set<std::string>& desired);
  /// Where the jobs' checkpoint directories are (AgentConfig::checkpoint_root).
  std::string checkpoint_root() const;
  /// Settles a replica whose start was cut short before its shim's pid was saved: re-adopts
  /// the shim that claimed it, or reports it never started. Called with mu_ held.
  void recover_start(const std::string& key, LocalReplica& r);
  void push_event(ReplicaEvent event);
  /// Saves the state file; durable (fsync'ed) when it records replicas about to start.
  void save(bool durable = false);
  void wake();

  AgentConfig config_;
  const Clock& clock_;
  MachineInfo machine_;
  NodeInfo node_info_;
  std::unique_ptr<gpu::GpuBackend> gpus_;
  std::unique_ptr<exec::Executor> executor_;
  GpuDevices gpu_devices_;          // the device nodes container jobs get
  std::map<int, MpsGpu> mps_;       // each GPU's MPS daemon (GPU index -> its dirs); empty: no MPS
  std::vector<Gpu> physical_gpus_;  // as discovered; node_info_.gpus has MIG devices instead
  /// The physical GPU behind a device this node offers (itself, or a MIG device's parent).
  int physical_gpu(int index) const;
  /// The MIG capability device minors the allocation's MIG devices need (none without MIG
  /// devices, or on a host without capability devices); an error when one cannot be found.
  Result<std::vector<int>> mig_caps_minors(const Allocation& a) const;
  MigCaps mig_caps_;  // the driver's MIG capability devices (major -1: none)
  /// Runs the doctor (docs/doctor.md) into node_info_.doctor and logs what is not ok.
  void run_start_doctor(const std::string& mps_error);
  std::unique_ptr<net::HttpClient> client_;
  std::string state_path_;
  bool switch_users_ = false;  // running as root: jobs run as their tenant's user

  std::string metrics_token_sha256_;
  std::unique_ptr<MetricsEndpoint> metrics_;  // null: no GET /metrics

  std::mutex readings_mu_;  // guards the four below
  std::vector<gpu::GpuTelemetry> readings_;
  TimeMs readings_at_ = 0;
  bool have_readings_ = false;
  // CPU seconds of each running replica at the last load reading, and when.
  std::map<std::string, std::pair<double, TimeMs>> cpu_samples_;

  std::mutex mu_;
  std::condition_variable cv_;
  AgentState state_;
  int64_t applied_version_ = 0;
  TimeMs last_readings_at_ = 0;  // when the poll loop last sent readings
  TimeMs last_contact_ = 0;      // the last poll the server answered
  bool fenced_ = false;   // replicas were stopped for lack of contact (until contact returns)
  bool leaving_ = false;  // leave() was called: no new work, polls say so
  std::unique_ptr<SpotNoticeSource> spot_source_;  // null: no spot notices looked for
  std::optional<SpotNotice> spot_notice_;          // the provider's notice, once seen
  bool spot_notice_acted_on_ = false;              // the server says the node is interrupting
  bool poll_in_flight_ = false;
  bool inflight_has_news_ = false;  // the poll in flight carries events or logs
  bool dirty_ = false;              // something to send
  std::atomic<bool> running_{false};
  std::thread loop_thread_;
  std::thread watch_thread_;
  std::thread spot_thread_;
  // Starts run on a few workers, so that a slow start never holds up the poll loop.
  static constexpr int kStarters = 4;
  std::deque<Allocation> start_queue_;
  std::vector<std::thread> starters_;
};

}  // namespace gpucloud::agent
