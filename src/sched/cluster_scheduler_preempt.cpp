// Preemption: the smallest set of running jobs (whole gangs) whose end lets a job start.
#include <algorithm>
#include <map>

#include "sched/cluster_scheduler.h"
#include "sched/fit.h"

namespace gpucloud::sched {
namespace {

bool fits(const JobRequest& req, const NodeState& node) {
  return cpu_memory_fit(req, node) && choose_gpus(req, node).has_value();
}

int64_t gpu_milli_of(const JobRequest& r) {
  return int64_t{r.replicas} * (r.gpu_milli > 0 ? r.gpu_milli : int64_t{r.gpus} * 1000);
}

}  // namespace

bool ClusterScheduler::may_preempt(const PendingJob& job, const RunningJob& victim) const {
  if (victim.preempting || victim.req.job_id == job.req.job_id) return false;
  if (victim.req.priority < job.req.priority) return true;
  if (victim.req.preemptible() && !job.req.preemptible() && victim.req.priority <= job.req.priority)
    return true;
  // A lender reclaims quota it lent: borrowers of the same model in its cohort go first.
  if (victim.borrowed && victim.req.tenant != job.req.tenant && !victim.models.empty()) {
    int64_t milli = gpu_milli_of(job.req);
    return milli > 0 && tenants_.within_nominal(job.req.tenant, victim.models[0], milli) &&
           tenants_.borrowing(victim.req.tenant, victim.models[0]);
  }
  return false;
}

std::optional<std::vector<std::string>> ClusterScheduler::choose_victims(const PendingJob& job) {
  JobRequest one = job.req;
  one.replicas = 1;
  int64_t milli = one.gpu_milli > 0 ? one.gpu_milli : int64_t{one.gpus} * 1000;
  struct NodeOption {
    std::vector<std::string> victims;  // empty: fits without preempting
    int64_t victim_gpu_milli = 0;
    int slot = 0;
  };
  std::vector<NodeOption> options;
  std::map<int, bool> class_fits;  // static fit per class
  for (int slot = 0; slot < static_cast<int>(nodes_.size()); ++slot) {
    const Node& n = nodes_[slot];
    if (!n.present) continue;
    int cls = classes_.class_of(slot);
    auto [cf, fresh] = class_fits.try_emplace(cls, false);
    if (fresh) cf->second = node_could_fit(one, n.state);
    if (!cf->second) continue;
    if (one.gpus > 0 && !n.state.gpus.empty() &&
        !tenants_.allows(job.req.tenant, n.state.gpus[0].model, milli) &&
        !tenants_.within_nominal(job.req.tenant, n.state.gpus[0].model, milli))
      continue;
    if (fits(one, n.state)) {
      if (job.req.replicas > 1) options.push_back({{}, 0, slot});
      continue;
    }
    std::vector<const RunningJob*> eligible;
    for (const auto& id : n.jobs) {
      const RunningJob& r = running_.at(id);
      if (may_preempt(job, r)) eligible.push_back(&r);
    }
    if (eligible.empty()) continue;
    // Borrowers first, then lower priority, then smaller, then the most recently started.
    std::sort(eligible.begin(), eligible.end(), [](const RunningJob* a, const RunningJob* b) {
      if (a->borrowed != b->borrowed) return a->borrowed;
      if (a->req.priority != b->req.priority) return a->req.priority < b->req.priority;
      int64_t ga = gpu_milli_of(a->req), gb = gpu_milli_of(b->req);
      if (ga != gb) return ga < gb;
      if (a->started_at != b->started_at) return a->started_at > b->started_at;
      return a->req.job_id < b->req.job_id;
    });
    NodeState scratch = n.state;
    std::vector<const RunningJob*> chosen;
    auto release_all = [&](const RunningJob* r, int sign) {
      for (const auto& [s, rp] : r->replicas)
        if (s == slot) apply_replica_use(scratch, r->req, rp, -sign);
    };
    for (const RunningJob* r : eligible) {
      release_all(r, +1);
      chosen.push_back(r);
      if (fits(one, scratch)) break;
    }
    if (!fits(one, scratch)) continue;
    // Drop victims that turn out not to be needed, the last added first.
    for (size_t i = chosen.size(); i-- > 0;) {
      release_all(chosen[i], -1);
      if (fits(one, scratch)) {
        chosen.erase(chosen.begin() + static_cast<long>(i));
      } else {
        release_all(chosen[i], +1);
      }
    }
    NodeOption option{{}, 0, slot};
    for (const RunningJob* r : chosen) {
      option.victims.push_back(r->req.job_id);
      option.victim_gpu_milli += gpu_milli_of(r->req);
    }
    options.push_back(std::move(option));
  }
  if (options.empty()) return std::nullopt;
  std::sort(options.begin(), options.end(), [](const NodeOption& a, const NodeOption& b) {
    if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
    if (a.victim_gpu_milli != b.victim_gpu_milli) return a.victim_gpu_milli < b.victim_gpu_milli;
    return a.slot < b.slot;
  });
  // One replica per node, cheapest nodes first; a gang's victims are the union.
  std::set<std::string> victims;
  int replicas = 0;
  for (const auto& option : options) {
    if (replicas == job.req.replicas) break;
    victims.insert(option.victims.begin(), option.victims.end());
    ++replicas;
  }
  if (replicas < job.req.replicas || victims.empty()) return std::nullopt;
  return std::vector<std::string>(victims.begin(), victims.end());
}

}  // namespace gpucloud::sched
