// `gpucloud cost`: the ledger summed over a window (GET /v1/cost, docs/cost.md).
#include <fmt/format.h>

#include <cctype>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "net/http_types.h"

namespace gpucloud::cli {

namespace {

using json = nlohmann::json;

// Cents for sums of $10 and more; below that four decimals, so short runs do not all read
// $0.00.
std::string usd(double v) {
  return v >= 10 ? fmt::format("${:.2f}", v) : fmt::format("${:.4f}", v);
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

int cmd_cost(const CostOptions& o) {
  if (o.json && o.csv) return fail(invalid("--json and --csv: choose one"));
  auto api = ApiClient::from_environment();
  if (!api) return fail(api.error().message);
  std::string target = "/v1/cost?by=" + net::url_encode(o.by);
  if (!o.since.empty()) target += "&since=" + net::url_encode(o.since);
  if (!o.until.empty()) target += "&until=" + net::url_encode(o.until);
  if (!o.tenant.empty()) target += "&tenant=" + net::url_encode(o.tenant);
  auto j = api->call("GET", target);
  if (!j) return fail(j.error().message);
  if (o.json) {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  const char* columns[] = {"attempts",         "gpu_hours",        "cost_usd",
                           "on_demand_usd",    "spot_savings_usd", "idle_released_gpu_hours",
                           "idle_released_usd"};
  if (o.csv) {
    std::cout << o.by;
    for (const char* c : columns) std::cout << "," << c;
    std::cout << "\n";
    for (const auto& l : (*j)["lines"]) {
      std::cout << l.value("key", "");
      for (const char* c : columns) std::cout << "," << l[c].dump();
      std::cout << "\n";
    }
    return 0;
  }
  Table t({o.by == "gpu-model" ? std::string("GPU MODEL") : upper(o.by), "ATTEMPTS", "GPU-HOURS",
           "COST", "AT ON-DEMAND", "SPOT SAVED", "IDLE RELEASED"});
  auto row = [&](const json& l, const std::string& key) {
    t.add({key.empty() ? "-" : key, std::to_string(l.value("attempts", 0)),
           fmt::format("{:.2f}", l.value("gpu_hours", 0.0)), usd(l.value("cost_usd", 0.0)),
           usd(l.value("on_demand_usd", 0.0)), usd(l.value("spot_savings_usd", 0.0)),
           fmt::format("{:.2f} GPU-h ({})", l.value("idle_released_gpu_hours", 0.0),
                       usd(l.value("idle_released_usd", 0.0)))});
  };
  for (const auto& l : (*j)["lines"]) row(l, l.value("key", ""));
  row((*j)["total"], "total");
  t.print(std::cout);
  std::cout << fmt::format(
      "since {} until {}; running attempts accrue to now\n",
      (*j)["since"].is_null() ? std::string("the start") : (*j)["since"].get<std::string>(),
      j->value("until", ""));
  return 0;
}

}  // namespace gpucloud::cli
