// `gpucloud cost` over a large ledger: 1,000,000 attempts of 50 tenants, 2,000 jobs and 200
// nodes over 90 days in a SQLite store, then the report's query by tenant, job, node, GPU model
// and day, over all time, the last 7 days, the last 83 days and days 30.5 to 60.5 (windows
// that cut days in the middle), and all time for one tenant. Each report is checked against a
// plain sum over the rows written (the largest difference of a line's cost is printed). Prints
// the times; JSON on the last line.
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "store/state_store.h"

using namespace gpucloud;

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  char tmpl[] = "/tmp/gpucloud-bench-cost-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string dir = tmpl;
  auto store = store::open_sqlite_store(dir + "/state.db");
  if (!store) return fmt::print(stderr, "{}\n", store.error().message), 1;
  const TimeMs day = 86'400'000, start = 1'780'000'000'000;
  std::mt19937_64 rng(7);
  std::vector<store::LedgerEntry> written;
  written.reserve(static_cast<size_t>(rows));
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t done = 0; done < rows;) {
    store::WriteBatch batch;
    for (int i = 0; i < 10'000 && done < rows; ++i, ++done) {
      store::LedgerEntry e;
      e.job_id = fmt::format("job-{:05}", rng() % 2000);
      e.tenant = fmt::format("tenant-{:02}", rng() % 50);
      e.node = fmt::format("node-{:03}", rng() % 200);
      e.gpu_model = (rng() % 3 == 0) ? "H100" : "A100";
      e.gpu_milli = 1000 * static_cast<int64_t>(1 + rng() % 8);
      e.started_at = start + static_cast<TimeMs>(rng() % (90 * day));
      e.ended_at = e.started_at + static_cast<TimeMs>(rng() % (6 * 3'600'000));
      e.usd_per_hour = 2.75 * static_cast<double>(e.gpu_milli) / 1000;
      e.on_demand_usd_per_hour = e.usd_per_hour * 2;
      e.cost_usd = e.usd_per_hour * static_cast<double>(e.ended_at - e.started_at) / 3.6e6;
      e.end = "succeeded";
      written.push_back(e);
      batch.ledger.push_back(std::move(e));
    }
    if (auto st = (*store)->commit(batch); !st.ok())
      return fmt::print(stderr, "{}\n", st.error().message), 1;
  }
  double fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("ledger of {} attempts written in {:.1f} s\n", rows, fill_s);
  nlohmann::json out = {{"rows", rows}, {"fill_s", fill_s}};
  struct Window {
    const char* name;
    TimeMs since, until;
    std::vector<std::string> tenants;
  };
  const std::vector<Window> windows = {
      {"all", 0, 0, {}},
      {"7d", start + 83 * day, 0, {}},
      {"83d", start + 7 * day, 0, {}},
      {"d30.5-60.5", start + 30 * day + day / 2, start + 60 * day + day / 2, {}},
      {"all_tenant", 0, 0, {"tenant-07"}}};
  double worst_diff = 0;
  for (const char* by : {"tenant", "job", "node", "gpu-model", "day"})
    for (const auto& w : windows) {
      store::CostQuery q;
      q.group_by = by;
      q.since = w.since;
      q.until = w.until;
      q.tenants = w.tenants;
      auto t = std::chrono::steady_clock::now();
      auto lines = (*store)->cost_report(q);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
      if (!lines) return fmt::print(stderr, "{}\n", lines.error().message), 1;
      // The plain sum over every row written: the part of each inside the window.
      std::map<std::string, double> want;
      const TimeMs until = q.until > 0 ? q.until : INT64_MAX;
      for (const auto& e : written) {
        if (e.ended_at <= q.since || e.started_at >= until) continue;
        if (!q.tenants.empty() && e.tenant != q.tenants[0]) continue;
        std::string key = q.group_by == "job"         ? e.job_id
                          : q.group_by == "node"      ? e.node
                          : q.group_by == "gpu-model" ? e.gpu_model
                          : q.group_by == "tenant"    ? e.tenant
                                                      : "";
        if (key.empty()) {
          time_t sec = static_cast<time_t>(e.ended_at / 1000);
          char buf[16];
          struct tm tm;
          strftime(buf, sizeof buf, "%Y-%m-%d", gmtime_r(&sec, &tm));
          key = buf;
        }
        want[key] +=
            e.usd_per_hour *
            static_cast<double>(std::min(e.ended_at, until) - std::max(e.started_at, q.since)) /
            3.6e6;
      }
      double diff = want.size() == lines->size() ? 0 : INFINITY;
      for (const auto& l : *lines)
        diff = std::max(diff, want.count(l.key) ? std::abs(want[l.key] - l.cost_usd) : INFINITY);
      worst_diff = std::max(worst_diff, diff);
      fmt::print("by {:<9} {:<10} {:>6} lines in {:.3f} s (largest difference ${:.2g})\n", by,
                 w.name, lines->size(), s, diff);
      out[fmt::format("{}_{}_s", by, w.name)] = s;
    }
  out["largest_difference_usd"] = worst_diff;
  std::filesystem::remove_all(dir);
  fmt::print("{}\n", out.dump());
  return 0;
}
