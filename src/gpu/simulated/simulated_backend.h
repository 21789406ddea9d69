// SimulatedBackend: GPUs that exist only on paper, for development, demos, CI and the simulator.
//
// Limits and assumptions:
// - Nothing is isolated or even present: a job "using" a simulated GPU runs on the CPU with
//   CUDA_VISIBLE_DEVICES set to a UUID that no driver knows.
// - The machine comes from a spec ("8xA100-80GB", "2xH100-80GB,2xL4"; see sim_spec.h), at most
//   64 GPUs, each optionally split into MIG devices (":mig=3g.40gb+3g.40gb"); driver and CUDA
//   versions are "".
// - Topology is a plausible guess, not a copy of a real board: A100/H100/H200 parts form boards
//   of up to 8 GPUs linked in a full NVLink mesh, V100 parts NVLink pairs (0-1, 2-3, ...), other
//   models PCIe only; the first half of the GPUs is on NUMA node 0, the second half on node 1.
// - UUIDs and PCI bus ids are deterministic: the same node name and spec give the same UUIDs,
//   two node names give different ones.
// - Utilisation is the load of the processes bound to each GPU (CPU time over wall time, as
//   the agent reports it): a busy loop reads as a busy GPU, `sleep` as an idle one, so idle
//   reclaim can be tried without GPUs. Memory used stays 0; temperature and power follow the
//   utilisation (30 C and the model's idle power when idle), and so does the SM clock (210 MHz
//   idle to 1410 MHz busy). No XID errors.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/simulated/sim_spec.h"

namespace gpucloud::gpu {

/// GpuBackend over a spec of made-up GPUs.
class SimulatedBackend : public GpuBackend {
 public:
  /// Parses config.sim_spec (empty: kDefaultSimSpec) and lays out the GPUs of a node named
  /// config.sim_node_name (empty: this host's name). Fails (kInvalidArgument) on a bad spec.
  static Result<std::unique_ptr<SimulatedBackend>> create(const GpuBackendConfig& config);

  /// "simulated".
  std::string kind() const override { return "simulated"; }
  /// The GPUs of the spec, with their made-up topology.
  Result<std::vector<Gpu>> discover() override { return gpus_; }
  /// Readings of every GPU, busy as its processes' load.
  Result<std::vector<GpuTelemetry>> telemetry() override;
  /// True: utilisation is its processes' load.
  bool utilization_from_processes() const override { return true; }
  /// Keeps each GPU's load for the next telemetry().
  void set_process_load(const std::map<int, int>& load_pct_by_index) override;
  /// "": there is no driver.
  std::string driver_version() const override { return ""; }
  /// "": there is no driver.
  std::string cuda_version() const override { return ""; }

  /// The normalised spec, e.g. "8xA100-80GB".
  const std::string& spec() const { return spec_; }
  /// The node name the UUIDs are derived from.
  const std::string& node_name() const { return node_name_; }

 private:
  SimulatedBackend() = default;

  std::string spec_;
  std::string node_name_;
  std::vector<Gpu> gpus_;
  std::vector<int> idle_power_w_;
  std::map<int, int> load_pct_;  // by GPU index
};

}  // namespace gpucloud::gpu
