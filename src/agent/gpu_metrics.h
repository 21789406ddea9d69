// The agent's per-GPU metrics under NVIDIA dcgm-exporter's names and labels, so that
// dashboards and alerts written for dcgm-exporter work on gpucloud nodes unchanged.
#pragma once

#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "model/gpu.h"
#include "prometheus/metric_family.h"

namespace gpucloud::agent {

/// A replica holding (part of) a GPU of this node.
struct GpuHolder {
  int gpu_index = 0;
  std::string job_id;
  std::string tenant;
};

/// The families DCGM_FI_DEV_GPU_UTIL, _FB_USED, _FB_FREE, _GPU_TEMP, _POWER_USAGE, _SM_CLOCK and
/// _XID_ERRORS, one series per GPU with dcgm-exporter's labels (gpu, UUID, pci_bus_id, device,
/// modelName, Hostname = the node's name) and, for a GPU a job holds, the labels dcgm-exporter
/// adds for the pod using a GPU on Kubernetes: namespace (the job's tenant) and pod (the job
/// id), plus hpc_job (dcgm-exporter's label for batch jobs) and tenant. A GPU that several jobs
/// share has one series per job, as dcgm-exporter does. GPUs without a reading are left out.
std::vector<prometheus::MetricFamily> gpu_metric_families(
    const NodeInfo& node, const std::vector<gpu::GpuTelemetry>& readings,
    const std::vector<GpuHolder>& holders);

}  // namespace gpucloud::agent
