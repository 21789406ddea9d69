#include "scheduler_workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <numbers>

namespace gpucloud::bench {

double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

double Rng::normal() {
  double u1 = std::max(uniform(), 1e-300), u2 = uniform();
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

// ---- The cluster ------------------------------------------------------------------------------

sched::NodeState make_node(int i) {
  sched::NodeState node;
  node.id = fmt::format("node-{:05d}", i);
  node.name = node.id;
  int type = i % 10;  // 0-3 A100, 4-6 H100, 7-9 L4
  std::string model = type < 4 ? "A100" : type < 7 ? "H100" : "L4";
  int64_t gpu_mem = model == "L4" ? 24 * kGiB : 80 * kGiB;
  bool full_mesh = model == "H100" || (model == "A100" && (i / 10) % 2 == 0);
  bool pairs = model == "A100" && !full_mesh;
  node.cpu_milli = model == "H100" ? 192'000 : model == "A100" ? 128'000 : 96'000;
  node.memory_mib = (model == "H100" ? 2048 : 1024) * kGiB;
  for (int g = 0; g < 8; ++g) {
    sched::GpuState gpu;
    gpu.index = g;
    gpu.uuid = fmt::format("GPU-{:05d}-{}", i, g);
    gpu.model = model;
    gpu.memory_mib = gpu_mem;
    gpu.numa_node = g / 4;
    gpu.nvlink_mask = full_mesh ? (0xFFu & ~(1u << g)) : pairs ? (1u << (g ^ 1)) : 0;
    node.gpus.push_back(std::move(gpu));
  }
  node.labels["zone"] = fmt::format("z{}", (i / 10) % 10);
  node.labels["capacity-class"] = (i / 10) % 5 == 2 ? "spot" : "on-demand";
  return node;
}

Cluster make_cluster(int n) {
  Cluster c;
  c.nodes.reserve(n);
  for (int i = 0; i < n; ++i) {
    sched::NodeState node = make_node(i);
    c.gpus_by_model[node.gpus[0].model] += 8;
    c.gpus += 8;
    c.nodes.push_back(std::move(node));
  }
  return c;
}

std::vector<sched::TenantSpec> make_tenants(const Cluster& c) {
  struct Def {
    const char* name;
    double weight;
    const char* cohort;
    double quota;   // fraction of each model's GPUs; 0: no quota
    double borrow;  // borrowing limit as a fraction; < 0: no limit
  };
  const Def defs[] = {{"vision", 2, "ml", 0.20, -1},   {"nlp", 2, "ml", 0.20, 0.10},
                      {"speech", 1, "ml", 0.10, 0.05}, {"recsys", 1, "prod", 0.15, -1},
                      {"ads", 1, "prod", 0.10, 0.05},  {"research", 0.5, "", 0, 0},
                      {"batch", 0.5, "", 0, 0},        {"infra", 1, "", 0, 0}};
  std::vector<sched::TenantSpec> out;
  for (const auto& d : defs) {
    sched::TenantSpec t;
    t.name = d.name;
    t.weight = d.weight;
    t.cohort = d.cohort;
    t.has_quota = d.quota > 0;
    if (t.has_quota)
      for (const auto& [model, gpus] : c.gpus_by_model) {
        t.quota[model] = static_cast<int>(std::lround(d.quota * gpus));
        if (d.borrow >= 0)
          t.borrowing_limit[model] = static_cast<int>(std::lround(d.borrow * gpus));
      }
    out.push_back(std::move(t));
  }
  return out;
}

// ---- The queue --------------------------------------------------------------------------------

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kOneGpu:
      return "1 GPU";
    case Kind::kShare:
      return "share";
    case Kind::kMultiGpu:
      return "2-8 GPUs";
    case Kind::kGang:
      return "gang";
  }
  return "?";
}

int job_index(const std::string& id) {
  return std::atoi(id.c_str() + 1);
}

Workload make_workload(int count, uint64_t seed, int probes_single, int probes_other,
                       int first_id) {
  Rng rng(seed);
  const std::vector<std::pair<std::string, double>> tenants = {
      {"vision", 0.18}, {"nlp", 0.20},      {"speech", 0.10}, {"recsys", 0.12},
      {"ads", 0.08},    {"research", 0.12}, {"batch", 0.12},  {"infra", 0.08}};
  const std::vector<std::pair<std::string, double>> whole_models = {
      {"", 0.35}, {"A100|H100", 0.20}, {"H100", 0.15}, {"A100", 0.15}, {"L4", 0.15}};
  const std::vector<std::pair<std::string, double>> share_models = {{"", 0.5}, {"L4", 0.5}};
  const std::vector<std::pair<std::string, double>> gang_models = {
      {"H100", 0.5}, {"A100|H100", 0.3}, {"A100", 0.2}};
  const std::vector<std::pair<int, double>> milli = {{100, 0.3}, {250, 0.4}, {500, 0.3}};
  const std::vector<std::pair<int, double>> multi = {
      {2, 0.40}, {3, 0.05}, {4, 0.30}, {6, 0.05}, {8, 0.20}};
  const std::vector<std::pair<int, double>> replicas = {
      {2, 0.35}, {3, 0.10}, {4, 0.30}, {6, 0.10}, {8, 0.15}};
  const std::vector<std::pair<int, double>> priorities = {{0, 0.20}, {100, 0.76}, {1000, 0.04}};
  const std::vector<std::pair<int64_t, double>> cpus_per_gpu = {
      {4000, 0.3}, {8000, 0.5}, {12000, 0.2}};
  const std::vector<std::pair<int64_t, double>> mem_per_gpu = {
      {32 * kGiB, 0.3}, {64 * kGiB, 0.5}, {96 * kGiB, 0.2}};

  Workload w;
  w.jobs.reserve(count);
  for (int i = 0; i < count; ++i) {
    Job job;
    JobRequest& r = job.req;
    r.job_id = fmt::format("j{:07d}", first_id + i);
    r.tenant = rng.choose(tenants);
    double k = rng.uniform();
    job.kind = k < 0.60   ? Kind::kOneGpu
               : k < 0.80 ? Kind::kShare
               : k < 0.95 ? Kind::kMultiGpu
                          : Kind::kGang;
    int64_t cpu = rng.choose(cpus_per_gpu), mem = rng.choose(mem_per_gpu);
    switch (job.kind) {
      case Kind::kOneGpu:
      case Kind::kMultiGpu:
        r.gpus = job.kind == Kind::kOneGpu ? 1 : rng.choose(multi);
        r.gpu_model = rng.choose(whole_models);
        break;
      case Kind::kShare:
        r.gpus = 1;
        r.gpu_milli = rng.choose(milli);
        r.gpu_model = rng.choose(share_models);
        if (rng.uniform() < 0.5) r.gpu_memory_mib = r.gpu_milli * 20 * kGiB / 1000;
        break;
      case Kind::kGang:
        r.gpus = 8;
        r.replicas = rng.choose(replicas);
        r.gpu_model = rng.choose(gang_models);
        break;
    }
    double gpus_each = r.gpu_milli > 0 ? r.gpu_milli / 1000.0 : r.gpus;
    r.cpu_milli = std::max<int64_t>(1000, static_cast<int64_t>(cpu * gpus_each));
    r.memory_mib = std::max<int64_t>(4 * kGiB, static_cast<int64_t>(mem * gpus_each));
    r.priority = rng.choose(priorities);
    if (job.kind == Kind::kGang) {
      r.capacity_class = rng.uniform() < 0.1 ? CapacityClass::kOnDemand : CapacityClass::kAny;
    } else {
      double c = rng.uniform();
      r.capacity_class = c < 0.10   ? CapacityClass::kSpot
                         : c < 0.15 ? CapacityClass::kOnDemand
                                    : CapacityClass::kAny;
      if (r.capacity_class == CapacityClass::kSpot && r.priority == 1000) r.priority = 100;
      // Spot capacity lies in zones z2 and z7 only: zone selectors go with capacity class any.
      if (r.capacity_class == CapacityClass::kAny && rng.uniform() < 0.05)
        r.node_selector["zone"] = fmt::format("z{}", rng.below(10));
    }
    r.created_at = kStart - count + i;
    // Log-normal durations: median 20 min (gangs 60 min), clamped to 1 min .. 24 h.
    double median_min = job.kind == Kind::kGang ? 60 : 20;
    double minutes = std::clamp(median_min * std::exp(1.2 * rng.normal()), 1.0, 24.0 * 60);
    job.duration = static_cast<TimeMs>(minutes * 60'000);
    if (rng.uniform() < 0.85) {
      // Declared max_runtime: the real duration plus up to 50 %, in whole minutes.
      double declared = minutes * (1 + 0.5 * rng.uniform());
      r.max_runtime_ms = static_cast<int64_t>(std::ceil(declared)) * 60'000;
    }
    w.gpu_demand += r.replicas * gpus_each;
    w.jobs.push_back(std::move(job));
  }
  // Probes: evenly spaced over the queue's jobs of each category.
  std::vector<int> single, gang, preempt;
  for (int i = 0; i < count; ++i) {
    const Job& j = w.jobs[i];
    if (j.kind == Kind::kGang)
      gang.push_back(i);
    else if (j.req.priority == 1000)
      preempt.push_back(i);
    else
      single.push_back(i);
  }
  auto spread = [](const std::vector<int>& from, int want, std::vector<int>& to) {
    want = std::min<int>(want, static_cast<int>(from.size()) / 4);
    for (int k = 0; k < want; ++k) to.push_back(from[from.size() * k / want]);
  };
  spread(single, probes_single, w.probe_single);
  spread(gang, probes_other, w.probe_gang);
  spread(preempt, probes_other, w.probe_preempt);
  // Preemption probes ask for a whole node (8 GPUs), so that leftover bits cannot take them, for
  // tenant infra (no quota), so that a quota does not stop them before preemption is tried.
  for (int i : w.probe_preempt) {
    JobRequest& r = w.jobs[i].req;
    r.tenant = "infra";
    w.gpu_demand += 8 - r.replicas * (r.gpu_milli > 0 ? r.gpu_milli / 1000.0 : r.gpus);
    w.jobs[i].kind = Kind::kMultiGpu;
    r.gpus = 8;
    r.gpu_milli = 0;
    r.gpu_memory_mib = 0;
    r.cpu_milli = 8 * 8000;
    r.memory_mib = 8 * 64 * kGiB;
    r.capacity_class = CapacityClass::kAny;
    r.node_selector.clear();
  }
  return w;
}

// ---- One run ----------------------------------------------------------------------------------

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.count = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
  };
  p.p50 = at(0.50);
  p.p99 = at(0.99);
  p.max = v.back();
  return p;
}

}  // namespace gpucloud::bench
