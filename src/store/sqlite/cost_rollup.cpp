#include "store/sqlite/cost_rollup.h"

#include <fmt/format.h>

#include <limits>
#include <map>
#include <tuple>

#include "store/sqlite/cost_sums.h"
#include "store/sqlite/statement.h"

namespace gpucloud::store::sqlite {

// Rows with 0 < started_at <= ended_at are rolled up, on the UTC day of their end
// (ended_at / 86400000: both are positive). Other rows (an end before the start) are rare and
// always read from the ledger, through the partial index ledger_irregular.
//
// cost_daily and cost_totals hold, per dim: 'tenant' (key ''), 'job', 'node', 'gpu-model';
// sums are in ms (gpu_milli_ms: GPU-thousandths × ms; usd_ms: USD per hour × ms).
// cost_days holds, per day, its rolled-up attempts and the earliest start among them: what
// tells whether every attempt ending that day started inside a window.
const char* const kCostRollupMigration = R"sql(
    CREATE TABLE cost_daily (
      dim TEXT NOT NULL,
      day INTEGER NOT NULL,
      tenant TEXT NOT NULL,
      key TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      gpu_milli_ms INTEGER NOT NULL,
      usd_ms REAL NOT NULL,
      on_demand_usd_ms REAL NOT NULL,
      idle_gpu_milli_ms INTEGER NOT NULL,
      idle_usd_ms REAL NOT NULL,
      PRIMARY KEY (dim, day, tenant, key)) WITHOUT ROWID;
    CREATE TABLE cost_totals (
      dim TEXT NOT NULL,
      tenant TEXT NOT NULL,
      key TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      gpu_milli_ms INTEGER NOT NULL,
      usd_ms REAL NOT NULL,
      on_demand_usd_ms REAL NOT NULL,
      idle_gpu_milli_ms INTEGER NOT NULL,
      idle_usd_ms REAL NOT NULL,
      PRIMARY KEY (dim, tenant, key)) WITHOUT ROWID;
    CREATE TABLE cost_days (
      day INTEGER PRIMARY KEY,
      attempts INTEGER NOT NULL,
      min_started_at INTEGER NOT NULL);
    CREATE INDEX ledger_irregular ON ledger(ended_at) WHERE started_at > ended_at;
    CREATE TEMP VIEW rollup_source AS
      SELECT ended_at / 86400000 AS day, started_at, tenant, job_id, node, gpu_model, gpu_milli,
             ended_at - started_at AS ms, usd_per_hour, on_demand_usd_per_hour, idle_released_ms
      FROM ledger WHERE started_at > 0 AND started_at <= ended_at;
    INSERT INTO cost_daily
      SELECT 'tenant', day, tenant, '', COUNT(*), SUM(gpu_milli * ms), SUM(usd_per_hour * ms),
             SUM(on_demand_usd_per_hour * ms), SUM(gpu_milli * idle_released_ms),
             SUM(usd_per_hour * idle_released_ms)
      FROM rollup_source GROUP BY day, tenant;
    INSERT INTO cost_daily
      SELECT 'job', day, tenant, job_id, COUNT(*), SUM(gpu_milli * ms), SUM(usd_per_hour * ms),
             SUM(on_demand_usd_per_hour * ms), SUM(gpu_milli * idle_released_ms),
             SUM(usd_per_hour * idle_released_ms)
      FROM rollup_source GROUP BY day, tenant, job_id;
    INSERT INTO cost_daily
      SELECT 'node', day, tenant, node, COUNT(*), SUM(gpu_milli * ms), SUM(usd_per_hour * ms),
             SUM(on_demand_usd_per_hour * ms), SUM(gpu_milli * idle_released_ms),
             SUM(usd_per_hour * idle_released_ms)
      FROM rollup_source GROUP BY day, tenant, node;
    INSERT INTO cost_daily
      SELECT 'gpu-model', day, tenant, gpu_model, COUNT(*), SUM(gpu_milli * ms),
             SUM(usd_per_hour * ms), SUM(on_demand_usd_per_hour * ms),
             SUM(gpu_milli * idle_released_ms), SUM(usd_per_hour * idle_released_ms)
      FROM rollup_source GROUP BY day, tenant, gpu_model;
    INSERT INTO cost_totals
      SELECT dim, tenant, key, SUM(attempts), SUM(gpu_milli_ms), SUM(usd_ms),
             SUM(on_demand_usd_ms), SUM(idle_gpu_milli_ms), SUM(idle_usd_ms)
      FROM cost_daily GROUP BY dim, tenant, key;
    INSERT INTO cost_days
      SELECT day, COUNT(*), MIN(started_at) FROM rollup_source GROUP BY day;
    DROP VIEW rollup_source;
    )sql";

namespace {

constexpr int64_t kDayMs = 86'400'000;

Error sqlite_error(sqlite3* db, const std::string& what) {
  return internal(fmt::format("sqlite {}: {}", what, sqlite3_errmsg(db)));
}

constexpr const char* kAddSums =
    "attempts = attempts + excluded.attempts, "
    "gpu_milli_ms = gpu_milli_ms + excluded.gpu_milli_ms, usd_ms = usd_ms + excluded.usd_ms, "
    "on_demand_usd_ms = on_demand_usd_ms + excluded.on_demand_usd_ms, "
    "idle_gpu_milli_ms = idle_gpu_milli_ms + excluded.idle_gpu_milli_ms, "
    "idle_usd_ms = idle_usd_ms + excluded.idle_usd_ms";

bool rolled_up(const LedgerEntry& e) {
  return e.started_at > 0 && e.started_at <= e.ended_at;
}

}  // namespace

Status add_to_cost_rollups(sqlite3* db, const std::vector<LedgerEntry>& entries) {
  // Summed in memory first: one upsert per rollup row the batch touches.
  std::map<std::tuple<std::string, int64_t, std::string, std::string>, Sums> daily;
  std::map<std::tuple<std::string, std::string, std::string>, Sums> totals;
  std::map<int64_t, std::pair<int64_t, int64_t>> days;  // day → attempts, earliest start
  for (const auto& e : entries) {
    if (!rolled_up(e)) continue;
    const int64_t day = e.ended_at / kDayMs;
    for (auto [dim, key] : {std::pair<const char*, const std::string*>{"tenant", nullptr},
                            {"job", &e.job_id},
                            {"node", &e.node},
                            {"gpu-model", &e.gpu_model}}) {
      std::string k = key ? *key : std::string();
      daily[{dim, day, e.tenant, k}].add(e);
      totals[{dim, e.tenant, std::move(k)}].add(e);
    }
    auto [it, fresh] = days.try_emplace(day, 0, e.started_at);
    it->second.first += 1;
    it->second.second = std::min(it->second.second, e.started_at);
  }
  if (days.empty()) return {};
  const std::string daily_sql = fmt::format(
      "INSERT INTO cost_daily VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
      "ON CONFLICT (dim, day, tenant, key) DO UPDATE SET {}",
      kAddSums);
  Statement put_daily(db, daily_sql.c_str());
  if (!put_daily.ok()) return sqlite_error(db, "prepare cost_daily update");
  for (const auto& [k, sums] : daily) {
    put_daily.bind(1, std::get<0>(k));
    put_daily.bind(2, std::get<1>(k));
    put_daily.bind(3, std::get<2>(k));
    put_daily.bind(4, std::get<3>(k));
    sums.bind(put_daily, 5);
    if (put_daily.step() != SQLITE_DONE) return sqlite_error(db, "update cost_daily");
    put_daily.reset();
  }
  const std::string totals_sql = fmt::format(
      "INSERT INTO cost_totals VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
      "ON CONFLICT (dim, tenant, key) DO UPDATE SET {}",
      kAddSums);
  Statement put_total(db, totals_sql.c_str());
  if (!put_total.ok()) return sqlite_error(db, "prepare cost_totals update");
  for (const auto& [k, sums] : totals) {
    put_total.bind(1, std::get<0>(k));
    put_total.bind(2, std::get<1>(k));
    put_total.bind(3, std::get<2>(k));
    sums.bind(put_total, 4);
    if (put_total.step() != SQLITE_DONE) return sqlite_error(db, "update cost_totals");
    put_total.reset();
  }
  Statement put_day(db,
                    "INSERT INTO cost_days VALUES (?1, ?2, ?3) ON CONFLICT (day) DO UPDATE SET "
                    "attempts = attempts + excluded.attempts, "
                    "min_started_at = MIN(min_started_at, excluded.min_started_at)");
  if (!put_day.ok()) return sqlite_error(db, "prepare cost_days update");
  for (const auto& [day, v] : days) {
    put_day.bind(1, day);
    put_day.bind(2, v.first);
    put_day.bind(3, v.second);
    if (put_day.step() != SQLITE_DONE) return sqlite_error(db, "update cost_days");
    put_day.reset();
  }
  return {};
}

}  // namespace gpucloud::store::sqlite
