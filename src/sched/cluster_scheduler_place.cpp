// Placing one job: choosing nodes class by class in the policy's order, gangs all or nothing.
#include <fmt/format.h>

#include "sched/cluster_scheduler.h"
#include "sched/fit.h"

namespace gpucloud::sched {

const std::string& ClusterScheduler::quota_why(const PendingJob& job, const std::string& model,
                                               int64_t milli) {
  if (quota_whys_changes_ != tenants_.changes()) {
    quota_whys_.clear();
    quota_whys_changes_ = tenants_.changes();
  }
  auto [it, fresh] = quota_whys_.try_emplace({job.tenant, model, milli});
  if (fresh) tenants_.allows(job.req.tenant, model, milli, &it->second);
  return it->second;
}

bool ClusterScheduler::node_usable(int slot, Filter& f) const {
  const PendingJob& job = *f.job;
  if (reservation_ && slot < static_cast<int>(reserved_slot_.size()) && reserved_slot_[slot] &&
      !f.ends_before_reservation && reservation_->job_id != job.req.job_id) {
    f.skipped_reserved = true;
    return false;
  }
  if (held_against(job, slot)) {
    f.skipped_reserved = true;
    return false;
  }
  return true;
}

int ClusterScheduler::first_fitting_class(const Shape& shape, Ranking::Ranked& ranked) {
  int found = -1;
  visit_live_classes(ranked, [&](const NodeClass& c) {
    if (memory_fits(shape, c.id)) found = c.id;
    return found >= 0;
  });
  return found;
}

std::optional<std::pair<int, GpuChoice>> ClusterScheduler::pick_node(int shape_id, Filter& f) {
  Shape& shape = shapes_[shape_id];
  // A full cluster: nothing to rank (a new shape would rank every class) and nothing to skip.
  if (!gpus_free_somewhere(shape)) return std::nullopt;
  auto& ranked = refresh_ranking(shape_id).ranked;
  const JobRequest& req = shape.req;
  const int64_t milli = replica_gpu_milli(req);
  // Quota per GPU model, asked once per model (the answer cannot change during one pick).
  std::vector<std::pair<const std::string*, bool>> quota_by_model;
  auto class_allowed = [&](const NodeClass& c) {
    if (f.zone && c.zone != *f.zone) return false;
    if (milli == 0) return true;
    for (const auto& [model, allowed] : quota_by_model)
      if (*model == c.gpu_model) {
        if (!allowed) f.skipped_quota = true;
        return allowed;
      }
    bool allowed = milli <= quota_headroom(f.job->tenant, c.static_group);
    quota_by_model.push_back({&c.gpu_model, allowed});
    if (!allowed) {
      f.skipped_quota = true;
      if (f.quota_why.empty())
        f.quota_why = quota_why(*f.job, c.gpu_model, milli), f.quota_model = c.gpu_model;
    }
    return allowed;
  };
  // When the quota allows none of the models the shape could run on, every class would be
  // skipped for quota: say so from the best class without walking them all.
  if (milli > 0 && !f.zone) {
    bool any_allowed = false;
    for (const auto& model : shape_models(shape))
      if (milli <= quota_headroom(f.job->tenant, model)) any_allowed = true;
    if (!any_allowed) {
      // (sets skipped_quota and quota_why as the walk would)
      if (int c = first_fitting_class(shape, ranked); c >= 0) class_allowed(classes_.get(c));
      return std::nullopt;
    }
  }
  auto first_usable = [&](const NodeClass& c) -> int {
    for (int slot : c.members)
      if (node_usable(slot, f)) return slot;
    return -1;
  };
  // Visits the allowed classes best first, dropping those that have emptied, until `visit`
  // returns true.
  auto for_each_allowed = [&](auto visit) {
    visit_live_classes(ranked, [&](const NodeClass& c) {
      return memory_fits(shape, c.id) && class_allowed(c) && visit(c);
    });
  };
  int best_slot = -1;
  if (policy_ == PlacementPolicy::kFirstFit || policy_ == PlacementPolicy::kRandom) {
    std::vector<std::pair<int, int>> candidates;  // class, first usable slot
    for_each_allowed([&](const NodeClass& c) {
      int slot = first_usable(c);
      if (slot >= 0) candidates.push_back({c.id, slot});
      return false;
    });
    if (candidates.empty()) return std::nullopt;
    if (policy_ == PlacementPolicy::kFirstFit) {
      for (const auto& [c, slot] : candidates)
        if (best_slot < 0 || slot < best_slot) best_slot = slot;
    } else {
      // Uniform over the fitting nodes: a class by its size, then a usable member.
      uint64_t total = 0;
      for (const auto& [c, slot] : candidates) total += classes_.get(c).members.size();
      uint64_t draw = rng_.below(total);
      for (const auto& [c, slot] : candidates) {
        const auto& members = classes_.get(c).members;
        if (draw >= members.size()) {
          draw -= members.size();
          continue;
        }
        auto m = members.begin();
        std::advance(m, static_cast<long>(draw));
        best_slot = node_usable(*m, f) ? *m : slot;
        break;
      }
    }
  } else {
    // A job that may run anywhere and caps its price asks for cheapness: spot nodes first
    // (docs/jobspec.md, capacity_class), in the policy's order, then the rest.
    if (req.capacity_class == CapacityClass::kAny && req.max_price > 0)
      for_each_allowed([&](const NodeClass& c) {
        auto label = c.state.labels.find("capacity-class");
        if (label == c.state.labels.end() || label->second != "spot") return false;
        best_slot = first_usable(c);
        return best_slot >= 0;
      });
    if (best_slot < 0)
      for_each_allowed([&](const NodeClass& c) {
        best_slot = first_usable(c);
        return best_slot >= 0;
      });
    if (best_slot < 0) return std::nullopt;
  }
  auto choice = choose_gpus(req, nodes_[best_slot].state,
                            gpu_match_mask(shape, classes_.group_of_slot(best_slot)));
  if (!choice) return std::nullopt;  // cannot happen: the class fits
  return std::make_pair(best_slot, *choice);
}

namespace {

ReplicaPlacement replica_at(const NodeState& node, const JobRequest& req, int rank,
                            const std::vector<int>& positions, int milli) {
  ReplicaPlacement rp{rank, node.id, {}, req.cpu_milli, req.memory_mib};
  for (int p : positions) rp.gpus.push_back({node.gpus[p].index, node.gpus[p].uuid, milli});
  return rp;
}

}  // namespace

void ClusterScheduler::release_trial(const JobRequest& req, const Placement& trial) {
  for (const auto& rp : trial.replicas) apply_replica(slot_of(rp.node_id), req, rp, -1);
}

std::optional<Placement> ClusterScheduler::place_replicas(const PendingJob& job, int shape,
                                                          Filter& f) {
  Placement trial{job.req.job_id, {}};
  for (int rank = 0; rank < job.req.replicas; ++rank) {
    auto pick = pick_node(shape, f);
    if (!pick) {
      release_trial(job.req, trial);
      return std::nullopt;
    }
    const auto& [slot, choice] = *pick;
    auto rp = replica_at(nodes_[slot].state, job.req, rank, choice.positions, choice.milli);
    apply_replica(slot, job.req, rp, +1);
    trial.replicas.push_back(std::move(rp));
  }
  return trial;
}

std::optional<Placement> ClusterScheduler::place_gang(const PendingJob& job, TimeMs now,
                                                      Filter& f) {
  (void)now;
  const JobRequest& req = job.req;
  // One node: the gang as one request of replicas × the replica's resources.
  if (req.gpu_milli == 0) {
    JobRequest whole = req;
    whole.replicas = 1;
    whole.gpus = req.gpus * req.replicas;
    whole.cpu_milli = req.cpu_milli * req.replicas;
    whole.memory_mib = req.memory_mib * req.replicas;
    if (auto pick = pick_node(intern_shape(whole), f)) {
      const auto& [slot, choice] = *pick;
      Placement trial{req.job_id, {}};
      for (int rank = 0; rank < req.replicas; ++rank) {
        std::vector<int> part;
        for (int i = 0; i < req.gpus; ++i) part.push_back(choice.positions[rank * req.gpus + i]);
        auto rp = replica_at(nodes_[slot].state, req, rank, part, 1000);
        apply_replica(slot, req, rp, +1);
        trial.replicas.push_back(std::move(rp));
      }
      return trial;
    }
  }
  // One zone (label zone, else rack), in name order; then anywhere.
  if (zones_.size() > 1)
    for (const auto& zone : zones_) {
      if (zone.empty()) continue;
      Filter zf = f;
      zf.zone = &zone;
      auto trial = place_replicas(job, job.shape, zf);
      f.skipped_quota |= zf.skipped_quota;
      f.skipped_reserved |= zf.skipped_reserved;
      if (f.quota_why.empty()) f.quota_why = zf.quota_why, f.quota_model = zf.quota_model;
      if (trial) return trial;
    }
  return place_replicas(job, job.shape, f);
}

std::optional<Placement> ClusterScheduler::place(const PendingJob& job, TimeMs now, Filter& f) {
  if (job.req.replicas > 1) return place_gang(job, now, f);
  auto pick = pick_node(job.shape, f);
  if (!pick) return std::nullopt;
  const auto& [slot, choice] = *pick;
  Placement trial{job.req.job_id, {}};
  trial.replicas.push_back(
      replica_at(nodes_[slot].state, job.req, 0, choice.positions, choice.milli));
  apply_replica(slot, job.req, trial.replicas[0], +1);
  return trial;
}

}  // namespace gpucloud::sched
