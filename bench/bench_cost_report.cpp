// `gpucloud cost` over a large ledger: 1,000,000 attempts of 50 tenants, 2,000 jobs and 200
// nodes over 90 days in a SQLite store, then the report's query by tenant, job, node, GPU model
// and day, over all time and over the last 7 days. Prints the times; JSON on the last line.
#include <fmt/format.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
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
      batch.ledger.push_back(std::move(e));
    }
    if (auto st = (*store)->commit(batch); !st.ok())
      return fmt::print(stderr, "{}\n", st.error().message), 1;
  }
  double fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("ledger of {} attempts written in {:.1f} s\n", rows, fill_s);
  nlohmann::json out = {{"rows", rows}, {"fill_s", fill_s}};
  for (const char* by : {"tenant", "job", "node", "gpu-model", "day"})
    for (bool week : {false, true}) {
      store::CostQuery q;
      q.group_by = by;
      if (week) q.since = start + 83 * day;
      auto t = std::chrono::steady_clock::now();
      auto lines = (*store)->cost_report(q);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
      if (!lines) return fmt::print(stderr, "{}\n", lines.error().message), 1;
      fmt::print("by {:<9} {:<9} {:>6} lines in {:.3f} s\n", by, week ? "last 7d" : "all time",
                 lines->size(), s);
      out[fmt::format("{}_{}_s", by, week ? "7d" : "all")] = s;
    }
  std::filesystem::remove_all(dir);
  fmt::print("{}\n", out.dump());
  return 0;
}
