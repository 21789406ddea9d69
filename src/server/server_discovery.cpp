// GET /v1/sd/agents: Prometheus HTTP service discovery of the agents' metrics endpoints, so one
// scrape config covers a cluster that grows and shrinks (docs/metrics.md, "Discovery").
#include <nlohmann/json.hpp>
#include <set>

#include "server/http_util.h"
#include "server/server.h"

namespace gpucloud::server {

namespace {

// Where a scraper reaches a node's metrics: ":PORT" is on the address the node registered with.
std::string scrape_target(const NodeInfo& info) {
  const std::string& m = info.metrics_address;
  if (m.empty() || m.front() != ':') return m;
  if (info.address.empty()) return "";
  if (info.address.find(':') != std::string::npos && info.address.front() != '[')
    return "[" + info.address + "]" + m;
  return info.address + m;
}

}  // namespace

net::HttpResponse Server::serve_agent_discovery() const {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [id, rec] : nodes_) {
    if (rec.state == "left" || rec.state == "gone") continue;
    std::string target = scrape_target(rec.info);
    if (target.empty()) continue;
    std::set<std::string> models;
    for (const auto& g : rec.info.gpus) models.insert(g.model);
    std::string gpu_model;
    for (const auto& m : models) gpu_model += (gpu_model.empty() ? "" : ",") + m;
    auto cls = rec.info.labels.find("capacity-class");
    nlohmann::json labels = {
        {"node", rec.info.name},
        {"node_id", id},
        {"gpu_model", gpu_model},
        {"capacity_class", cls == rec.info.labels.end() ? "on-demand" : cls->second}};
    groups.push_back({{"targets", {target}}, {"labels", labels}});
  }
  return json_response(200, groups);
}

}  // namespace gpucloud::server
