#include "sched/simple_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/units.h"
#include "sched/fit.h"

namespace gpucloud::sched {
namespace {

struct Candidate {
  int node = -1;
  GpuChoice choice;
};

// The node for one replica: fewest matching free GPUs left after placing (keep idle blocks
// whole), then the better-connected GPU set, then the node order of the snapshot.
Candidate best_node(const JobRequest& req, const std::vector<NodeState>& nodes) {
  Candidate best;
  int best_left = 1 << 30, best_topology = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& node = nodes[i];
    if (!node_could_fit(req, node) || !cpu_memory_fit(req, node)) continue;
    auto choice = choose_gpus(req, node);
    if (!choice) continue;
    int left = free_matching_gpus(req, node) - (req.gpu_milli > 0 ? 0 : req.gpus);
    if (left < best_left || (left == best_left && choice->topology_score > best_topology)) {
      best = {static_cast<int>(i), *choice};
      best_left = left;
      best_topology = choice->topology_score;
    }
  }
  return best;
}

std::string pending_reason(const JobRequest& req, const std::vector<NodeState>& nodes, int placed) {
  std::string why_not;
  int matching_nodes = 0, largest_block = 0;
  const NodeState* largest_node = nullptr;
  const NodeState* cpu_node = nullptr;
  for (const auto& node : nodes) {
    std::string why;
    if (!node_could_fit(req, node, &why)) {
      if (why_not.empty()) why_not = why;
      continue;
    }
    ++matching_nodes;
    int block =
        req.gpu_milli > 0 ? (choose_gpus(req, node) ? 1 : 0) : free_matching_gpus(req, node);
    if (block > largest_block || !largest_node) largest_block = block, largest_node = &node;
    if (!cpu_memory_fit(req, node) &&
        (!cpu_node ||
         node.cpu_milli - node.cpu_used_milli > cpu_node->cpu_milli - cpu_node->cpu_used_milli))
      cpu_node = &node;
  }
  std::string gang = req.replicas > 1 ? fmt::format("gang of {} replicas, {} placeable now; ",
                                                    req.replicas, placed)
                                      : "";
  if (matching_nodes == 0)
    return fmt::format("{}no schedulable node can run it ({})", gang,
                       why_not.empty() ? "no nodes registered" : why_not);
  if (req.gpus > 0 && largest_block < (req.gpu_milli > 0 ? 1 : req.gpus)) {
    if (req.gpu_milli > 0)
      return fmt::format("{}needs {} on one GPU; no matching GPU has {} milli free", gang,
                         describe_gpus(req), req.gpu_milli);
    return fmt::format("{}needs {} on one node; largest free block is {} ({})", gang,
                       describe_gpus(req), largest_block, largest_node->name);
  }
  if (cpu_node)
    return fmt::format(
        "{}needs {:g} CPUs and {} memory; most free on a matching node is {:g} CPUs, {} ({})", gang,
        req.cpu_milli / 1000.0, format_size_mib(req.memory_mib),
        (cpu_node->cpu_milli - cpu_node->cpu_used_milli) / 1000.0,
        format_size_mib(cpu_node->memory_mib - cpu_node->memory_used_mib), cpu_node->name);
  return fmt::format("{}waiting for resources", gang);
}

// Everything about a request that decides whether and where it fits.
std::string shape_key(const JobRequest& r) {
  std::string key =
      fmt::format("{}/{}/{}/{}/{}/{}/{}/{}/", r.replicas, r.gpus, r.gpu_milli, r.gpu_memory_mib,
                  r.gpu_model, r.cpu_milli, r.memory_mib, static_cast<int>(r.capacity_class));
  for (const auto& [k, v] : r.node_selector) key += k + "=" + v + ",";
  return key;
}

}  // namespace

Plan SimpleScheduler::schedule(const Snapshot& snapshot) {
  Plan plan;
  std::vector<NodeState> nodes = snapshot.nodes;
  std::vector<const JobRequest*> order;
  for (const auto& j : snapshot.pending) order.push_back(&j);
  std::stable_sort(order.begin(), order.end(), [](const JobRequest* a, const JobRequest* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->created_at != b->created_at) return a->created_at < b->created_at;
    return a->job_id < b->job_id;
  });
  // Nodes only fill up during a pass: once a request shape fails, every later job of the same
  // shape fails for the same reason, so it is decided once (most queues have few shapes).
  std::map<std::string, std::string> failed_shapes;
  for (const JobRequest* req : order) {
    std::string shape = shape_key(*req);
    if (auto it = failed_shapes.find(shape); it != failed_shapes.end()) {
      plan.pending.push_back({req->job_id, it->second});
      continue;
    }
    std::vector<NodeState> trial;  // copy-on-write only for gangs, so a partial gang rolls back
    std::vector<NodeState>* target = &nodes;
    if (req->replicas > 1) {
      trial = nodes;
      target = &trial;
    }
    Placement placement{req->job_id, {}};
    bool ok = true;
    for (int rank = 0; rank < req->replicas; ++rank) {
      Candidate c = best_node(*req, *target);
      if (c.node < 0) {
        plan.pending.push_back({req->job_id, pending_reason(*req, *target, rank)});
        failed_shapes[shape] = plan.pending.back().reason;
        ok = false;
        break;
      }
      NodeState& node = (*target)[c.node];
      ReplicaPlacement rp{rank, node.id, {}, req->cpu_milli, req->memory_mib};
      for (int p : c.choice.positions)
        rp.gpus.push_back({node.gpus[p].index, node.gpus[p].uuid, c.choice.milli});
      apply_choice(*req, c.choice, node);
      placement.replicas.push_back(std::move(rp));
    }
    if (!ok) continue;
    if (req->replicas > 1) nodes = std::move(trial);
    plan.placements.push_back(std::move(placement));
  }
  return plan;
}

Result<std::unique_ptr<Scheduler>> create_scheduler(const PolicySettings& settings) {
  using Factory = std::unique_ptr<Scheduler> (*)();
  static const std::pair<const char*, Factory> kFactories[] = {
      {"simple", [] { return std::unique_ptr<Scheduler>(new SimpleScheduler()); }},
  };
  std::string names;
  for (const auto& [name, factory] : kFactories) {
    if (settings.policy == name) return factory();
    names += names.empty() ? name : std::string(", ") + name;
  }
  return invalid(fmt::format("unknown scheduling policy '{}'; known: {}", settings.policy, names));
}

Status check_satisfiable(const JobRequest& req, const std::vector<NodeState>& nodes) {
  if (nodes.empty()) return {};  // nothing registered yet: the job waits for nodes
  std::string first_why;
  int most_gpus = 0;
  std::string most_gpus_node, most_gpus_model;
  for (const auto& node : nodes) {
    NodeState empty = node;
    empty.schedulable = true;
    for (auto& g : empty.gpus) g.used_milli = 0, g.used_memory_mib = 0;
    empty.cpu_used_milli = 0;
    empty.memory_used_mib = 0;
    std::string why;
    if (node_could_fit(req, empty, &why) && choose_gpus(req, empty)) return {};
    if (first_why.empty()) first_why = node.name + ": " + why;
    JobRequest any_count = req;
    any_count.gpus = req.gpus > 0 ? 1 : 0;
    any_count.gpu_milli = 0;
    int matching = 0;
    for (const auto& g : empty.gpus) matching += gpu_matches(any_count, g) ? 1 : 0;
    if (matching > most_gpus)
      most_gpus = matching, most_gpus_node = node.name, most_gpus_model = node.gpus[0].model;
  }
  if (req.gpus > most_gpus && most_gpus > 0)
    return Error{ErrorCode::kUnsatisfiable,
                 fmt::format("gpus: {} requested but the largest matching node ({}) has {}; ask "
                             "for --gpus {} or split the job into replicas",
                             req.gpus, most_gpus_node, most_gpus, most_gpus)};
  if (req.gpus > 0 && most_gpus == 0)
    return Error{ErrorCode::kUnsatisfiable,
                 fmt::format("gpu_model: no node has a GPU matching '{}'{}; see gpucloud nodes for "
                             "the models on offer",
                             req.gpu_model.empty() ? "any" : req.gpu_model,
                             req.gpu_memory_mib ? fmt::format(" with {} memory",
                                                              format_size_mib(req.gpu_memory_mib))
                                                : "")};
  int64_t max_cpu = 0, max_mem = 0;
  for (const auto& node : nodes)
    max_cpu = std::max(max_cpu, node.cpu_milli), max_mem = std::max(max_mem, node.memory_mib);
  if (req.cpu_milli > max_cpu)
    return Error{
        ErrorCode::kUnsatisfiable,
        fmt::format(
            "cpus: {:g} requested but the largest node has {:g}; ask for --cpus {:g} or less",
            req.cpu_milli / 1000.0, max_cpu / 1000.0, max_cpu / 1000.0)};
  if (req.memory_mib > max_mem)
    return Error{
        ErrorCode::kUnsatisfiable,
        fmt::format("memory: {} requested but the largest node has {}; ask for --mem {} or less",
                    format_size_mib(req.memory_mib), format_size_mib(max_mem),
                    format_size_mib(max_mem))};
  return Error{ErrorCode::kUnsatisfiable,
               fmt::format("no node can ever run this job ({})", first_why)};
}

JobRequest JobRequest::from_spec(const std::string& job_id, const JobSpec& spec,
                                 TimeMs created_at) {
  JobRequest r;
  r.job_id = job_id;
  r.tenant = spec.tenant;
  r.replicas = spec.replicas;
  r.gpus = spec.gpus_per_replica();
  r.gpu_milli = spec.gpu_milli;
  r.gpu_memory_mib = spec.gpu_memory_mib;
  r.gpu_model = spec.gpu_model;
  r.cpu_milli = spec.cpu_milli;
  r.memory_mib = spec.memory_mib;
  r.node_selector = spec.node_selector;
  r.capacity_class = spec.capacity_class;
  r.priority = spec.priority;
  r.created_at = created_at;
  r.max_runtime_ms = spec.max_runtime_ms;
  return r;
}

}  // namespace gpucloud::sched
