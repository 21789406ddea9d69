#include "model/node_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "model/json_fields.h"
#include "model/spot_price.h"

namespace gpucloud {

using json = nlohmann::json;

json gpu_to_json(const Gpu& g) {
  json mig = json::array();
  for (const auto& m : g.mig) {
    mig.push_back({{"uuid", m.uuid}, {"profile", m.profile}, {"memory_mib", m.memory_mib}});
    if (m.gpu_instance >= 0) mig.back()["gpu_instance"] = m.gpu_instance;
    if (m.compute_instance >= 0) mig.back()["compute_instance"] = m.compute_instance;
  }
  json j = {{"index", g.index},
            {"uuid", g.uuid},
            {"name", g.name},
            {"model", g.model},
            {"memory_mib", g.memory_mib},
            {"pci_bus_id", g.pci_bus_id},
            {"numa_node", g.numa_node},
            {"nvlink_peers", g.nvlink_peers},
            {"mig", mig}};
  if (g.mig_parent >= 0) j["mig_parent"] = g.mig_parent;
  return j;
}

json node_info_to_json(const NodeInfo& n) {
  json gpus = json::array();
  for (const auto& g : n.gpus) gpus.push_back(gpu_to_json(g));
  json j = {{"name", n.name},
            {"hostname", n.hostname},
            {"gpus", gpus},
            {"cpu_milli", n.cpu_milli},
            {"memory_mib", n.memory_mib},
            {"labels", n.labels},
            {"gpu_backend", n.gpu_backend},
            {"driver_version", n.driver_version},
            {"cuda_version", n.cuda_version},
            {"address", n.address}};
  if (n.price_per_hour >= 0) j["price_per_hour"] = n.price_per_hour;
  if (!n.metrics_address.empty()) j["metrics_address"] = n.metrics_address;
  j["gpu_sharing"] = n.gpu_sharing;
  if (!n.doctor.empty()) j["doctor"] = node_checks_to_json(n.doctor);
  return j;
}

void clip_node_checks(std::vector<NodeCheck>& checks, size_t max_checks) {
  auto rank = [](const NodeCheck& c) {
    return c.status == "fail" ? 0 : c.status == "warn" ? 1 : 2;
  };
  if (checks.size() > max_checks) {
    std::stable_sort(checks.begin(), checks.end(),
                     [&](const NodeCheck& a, const NodeCheck& b) { return rank(a) < rank(b); });
    checks.resize(max_checks);
  }
  auto cut = [](std::string& text, size_t most) {
    if (text.size() <= most) return;
    text.resize(most - 3);
    // Not in the middle of a UTF-8 sequence.
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
      text.pop_back();
    if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
    text += "...";
  };
  for (auto& c : checks) {
    cut(c.name, kMaxCheckName);
    cut(c.why, kMaxCheckText);
    cut(c.fix, kMaxCheckText);
  }
}

json node_checks_to_json(const std::vector<NodeCheck>& checks) {
  json out = json::array();
  for (const auto& c : checks)
    out.push_back({{"check", c.name}, {"status", c.status}, {"why", c.why}, {"fix", c.fix}});
  return out;
}

Status check_metrics_address(const std::string& address) {
  if (address.empty()) return {};
  size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  bool port_ok = !port.empty() && port.size() <= 5 &&
                 port.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoi(port) >= 1 && std::stoi(port) <= 65535;
  bool host_ok = host.size() <= 255 && host.find_first_of(" \t\r\n/\"'{}") == std::string::npos;
  if (!port_ok || !host_ok)
    return invalid(
        fmt::format("node metrics_address '{}' must be HOST:PORT or :PORT with a port in 1..65535",
                    address.substr(0, 64)));
  return {};
}

Result<NodeInfo> node_info_from_json(const json& j) {
  try {
    NodeInfo n;
    n.name = j.at("name").get<std::string>();
    if (n.name.empty() || n.name.size() > 253)
      return invalid("node name must be 1..253 characters");
    n.hostname = j.value("hostname", "");
    n.cpu_milli = json_whole_at(j, "cpu_milli", 0, kJsonInt64Max);
    n.memory_mib = json_whole_at(j, "memory_mib", 0, kJsonInt64Max);
    if (j.contains("labels")) n.labels = j.at("labels").get<std::map<std::string, std::string>>();
    if (n.labels.size() > 256)
      return invalid(fmt::format("node has {} labels; at most 256 are supported", n.labels.size()));
    n.gpu_backend = j.value("gpu_backend", "");
    n.driver_version = j.value("driver_version", "");
    n.cuda_version = j.value("cuda_version", "");
    n.address = j.value("address", "");
    if (n.address.size() > 253) return invalid("node address must be at most 253 characters");
    n.metrics_address = j.value("metrics_address", "");
    if (auto st = check_metrics_address(n.metrics_address); !st.ok()) return st.error();
    if (j.contains("price_per_hour")) {
      const auto& p = j.at("price_per_hour");
      if (!p.is_number() || !valid_node_price_per_hour(p.get<double>()))
        return invalid(fmt::format("node price_per_hour {} must be a number of USD from 0 to {}",
                                   json_excerpt(p), kMaxNodePricePerHour));
      n.price_per_hour = p.get<double>();
    }
    n.gpu_sharing = j.value("gpu_sharing", "best-effort");
    if (n.gpu_sharing != "best-effort" && n.gpu_sharing != "mps")
      return invalid(fmt::format("node gpu_sharing {} must be best-effort or mps",
                                 json_excerpt(j.at("gpu_sharing"))));
    if (j.contains("doctor")) {
      const auto& checks = j.at("doctor");
      if (!checks.is_array() || checks.size() > kMaxNodeChecks)
        return invalid(
            fmt::format("node doctor must be an array of at most {} checks", kMaxNodeChecks));
      for (const auto& c : checks) {
        NodeCheck check{c.at("check").get<std::string>(), c.at("status").get<std::string>(),
                        c.value("why", ""), c.value("fix", "")};
        if (check.status != "ok" && check.status != "warn" && check.status != "fail")
          return invalid(fmt::format("doctor check status {} must be ok, warn or fail",
                                     json_excerpt(c.at("status"))));
        if (check.name.size() > kMaxCheckName || check.why.size() > kMaxCheckText ||
            check.fix.size() > kMaxCheckText)
          return invalid(
              fmt::format("a doctor check's name is at most {} characters, why and fix {}",
                          kMaxCheckName, kMaxCheckText));
        n.doctor.push_back(std::move(check));
      }
    }
    std::set<int> indices;
    const auto& gpus = j.at("gpus");
    if (gpus.size() > 64)
      return invalid(fmt::format("node reports {} GPUs; at most 64 are supported", gpus.size()));
    for (const auto& gj : gpus) {
      Gpu g;
      g.index = static_cast<int>(json_whole_at(gj, "index", 0, 1023));
      if (!indices.insert(g.index).second)
        return invalid(fmt::format("GPU index {} reported twice", g.index));
      g.uuid = gj.at("uuid").get<std::string>();
      g.name = gj.value("name", "");
      g.model = gj.at("model").get<std::string>();
      g.memory_mib = json_whole_at(gj, "memory_mib", 0, kJsonInt64Max);
      g.pci_bus_id = gj.value("pci_bus_id", "");
      g.numa_node = static_cast<int>(json_whole_or(gj, "numa_node", 0, -1, 1023));
      if (gj.contains("nvlink_peers")) {
        const auto& peers = gj.at("nvlink_peers");
        if (peers.size() > 64) return invalid("a GPU reports more than 64 NVLink peers");
        for (const auto& p : peers)
          g.nvlink_peers.push_back(static_cast<int>(json_whole(p, "nvlink_peers", 0, 1023)));
      }
      if (gj.contains("mig")) {
        if (gj.at("mig").size() > 64) return invalid("a GPU reports more than 64 MIG devices");
        for (const auto& m : gj.at("mig"))
          g.mig.push_back({m.at("uuid").get<std::string>(), m.value("profile", ""),
                           json_whole_or(m, "memory_mib", 0, 0, kJsonInt64Max),
                           static_cast<int>(json_whole_or(m, "gpu_instance", -1, -1, 1023)),
                           static_cast<int>(json_whole_or(m, "compute_instance", -1, -1, 1023))});
      }
      g.mig_parent = static_cast<int>(json_whole_or(gj, "mig_parent", -1, -1, 1023));
      n.gpus.push_back(std::move(g));
    }
    return n;
  } catch (const JsonFieldError& e) {
    return invalid(std::string("malformed node description: ") + e.what());
  } catch (const json::exception& e) {
    return invalid(std::string("malformed node description: ") + e.what());
  }
}

}  // namespace gpucloud
