// StateStore::cost_report on SQLite. Each day (UTC, of the attempts' end) of the ledger is one
// of: outside the window; whole (every attempt ending that day lies inside the window: read from
// cost_daily); or raw (the window cuts some of its attempts: read from the ledger, prorated as
// the window demands). The day of `since`, the day of `until`, and any day with an attempt
// that started before `since` (or, after the window, before `until`) are raw. When the whole
// days hold most of the ledger, the report is cost_totals minus the other days instead.
#include <fmt/format.h>

#include <limits>
#include <map>

#include "store/sqlite/cost_rollup.h"
#include "store/sqlite/cost_sums.h"
#include "store/sqlite/statement.h"

namespace gpucloud::store::sqlite {
namespace {

constexpr int64_t kDayMs = 86'400'000;

Error sqlite_error(sqlite3* db, const std::string& what) {
  return internal(fmt::format("sqlite {}: {}", what, sqlite3_errmsg(db)));
}

// The SQL expression grouping ledger rows for each CostQuery::group_by. The unary + keeps
// SQLite from walking a whole index in key order to group (ledger_job for by=job), which reads
// every row where the end-time index reads only the window's.
const char* ledger_group_expression(const std::string& by) {
  if (by == "job") return "+job_id";
  if (by == "node") return "+node";
  if (by == "gpu-model") return "+gpu_model";
  if (by == "day") return "strftime('%Y-%m-%d', ended_at / 1000, 'unixepoch')";
  if (by == "tenant") return "+tenant";
  return nullptr;
}

// Lines keyed by the report's key: rollup sums (exact integers where they can be) and ledger
// lines, added at the end.
struct Report {
  std::map<std::string, Sums> rolled;
  std::map<std::string, CostLine> raw;
};

// " AND tenant IN (?first, ...)" for the query's tenants ("" when any), and binds them.
std::string tenant_filter(const CostQuery& q, int first) {
  if (q.tenants.empty()) return "";
  std::string in;
  for (size_t i = 0; i < q.tenants.size(); ++i)
    in += fmt::format("{}?{}", i ? "," : "", first + static_cast<int>(i));
  return " AND tenant IN (" + in + ")";
}

void bind_tenants(Statement& st, const CostQuery& q, int first) {
  for (size_t i = 0; i < q.tenants.size(); ++i) st.bind(first + static_cast<int>(i), q.tenants[i]);
}

// Ledger rows of the window (and `extra`, an SQL condition on them), summed by the query's key
// with the part of each inside the window; through `index` when not "".
Status add_ledger_rows(sqlite3* db, const CostQuery& q, const std::string& extra, Report& out,
                       const char* index = "") {
  // The part of each attempt inside [since, until): ?1 = since, ?2 = until.
  const char* overlap = q.since > 0 || q.until > 0 ? "(MIN(ended_at, ?2) - MAX(started_at, ?1))"
                                                   : "(ended_at - started_at)";
  std::string where = "started_at > 0";
  if (q.since > 0) where += " AND ended_at > ?1";
  if (q.until > 0) where += " AND started_at < ?2";
  if (!q.job_id.empty()) where += " AND job_id = ?3";
  where += tenant_filter(q, 4);
  if (!extra.empty()) where += " AND " + extra;
  std::string sql = fmt::format(
      "SELECT {0}, COUNT(*), SUM(gpu_milli * {1}) / 3600000000.0, "
      "SUM(usd_per_hour * {1}) / 3600000.0, SUM(on_demand_usd_per_hour * {1}) / 3600000.0, "
      "SUM(gpu_milli * idle_released_ms) / 3600000000.0, "
      "SUM(usd_per_hour * idle_released_ms) / 3600000.0 "
      "FROM ledger{3} WHERE {2} GROUP BY 1",
      ledger_group_expression(q.group_by), overlap, where,
      *index ? fmt::format(" INDEXED BY {}", index) : std::string());
  Statement st(db, sql.c_str());
  if (!st.ok()) return sqlite_error(db, "prepare cost report over the ledger");
  st.bind(1, q.since);
  st.bind(2, q.until > 0 ? q.until : std::numeric_limits<int64_t>::max());
  st.bind(3, q.job_id);
  bind_tenants(st, q, 4);
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    CostLine& line = out.raw[st.text(0)];
    line.attempts += st.integer(1);
    line.gpu_hours += st.real(2);
    line.cost_usd += st.real(3);
    line.on_demand_usd += st.real(4);
    line.idle_released_gpu_hours += st.real(5);
    line.idle_released_usd += st.real(6);
  }
  if (rc != SQLITE_DONE) return sqlite_error(db, "cost report over the ledger");
  return {};
}

// The rollup dim a report by `by` reads, and the column (or expression) that is its key.
std::pair<const char*, const char*> rollup_source(const std::string& by) {
  if (by == "tenant") return {"tenant", "tenant"};
  if (by == "day") return {"tenant", "strftime('%Y-%m-%d', day * 86400, 'unixepoch')"};
  return {by == "job" ? "job" : by == "node" ? "node" : "gpu-model", "key"};
}

// Adds (sign +1) or subtracts (-1) the daily rollups of days [from, to).
Status add_daily(sqlite3* db, const CostQuery& q,
                 const std::vector<std::pair<int64_t, int64_t>>& ranges, int sign, Report& out) {
  if (ranges.empty()) return {};
  auto [dim, key] = rollup_source(q.group_by);
  std::string sql = fmt::format(
      "SELECT {}, SUM(attempts), SUM(gpu_milli_ms), SUM(usd_ms), SUM(on_demand_usd_ms), "
      "SUM(idle_gpu_milli_ms), SUM(idle_usd_ms) FROM cost_daily "
      "WHERE dim = ?1 AND day >= ?2 AND day < ?3{} GROUP BY 1",
      key, tenant_filter(q, 4));
  Statement st(db, sql.c_str());
  if (!st.ok()) return sqlite_error(db, "prepare cost report over cost_daily");
  for (auto [from, to] : ranges) {
    st.bind(1, std::string(dim));
    st.bind(2, from);
    st.bind(3, to);
    bind_tenants(st, q, 4);
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) out.rolled[st.text(0)].add(Sums::read(st, 1), sign);
    if (rc != SQLITE_DONE) return sqlite_error(db, "cost report over cost_daily");
    st.reset();
  }
  return {};
}

// Adds the all-time rollups.
Status add_totals(sqlite3* db, const CostQuery& q, Report& out) {
  auto [dim, key] = rollup_source(q.group_by);
  std::string sql = fmt::format(
      "SELECT {}, SUM(attempts), SUM(gpu_milli_ms), SUM(usd_ms), SUM(on_demand_usd_ms), "
      "SUM(idle_gpu_milli_ms), SUM(idle_usd_ms) FROM cost_totals WHERE dim = ?1{} GROUP BY 1",
      key, tenant_filter(q, 4));
  Statement st(db, sql.c_str());
  if (!st.ok()) return sqlite_error(db, "prepare cost report over cost_totals");
  st.bind(1, std::string(dim));
  bind_tenants(st, q, 4);
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) out.rolled[st.text(0)].add(Sums::read(st, 1), +1);
  if (rc != SQLITE_DONE) return sqlite_error(db, "cost report over cost_totals");
  return {};
}

enum class DayUse { kOutside, kWhole, kRaw };

// Where a day's attempts come from for the window (see the top of this file).
DayUse day_use(const CostQuery& q, int64_t day, int64_t min_started_at) {
  if (q.since > 0 && day < q.since / kDayMs) return DayUse::kOutside;
  if (q.since > 0 && day == q.since / kDayMs) return DayUse::kRaw;
  if (q.until > 0 && day >= q.until / kDayMs)
    return day == q.until / kDayMs || min_started_at < q.until ? DayUse::kRaw : DayUse::kOutside;
  return q.since > 0 && min_started_at < q.since ? DayUse::kRaw : DayUse::kWhole;
}

// Runs of consecutive listed days with one use, as [first day, last day + 1).
using DayRanges = std::vector<std::pair<int64_t, int64_t>>;
void extend(DayRanges& ranges, int64_t day, bool& open) {
  if (open) {
    ranges.back().second = day + 1;
  } else {
    ranges.push_back({day, day + 1});
    open = true;
  }
}

Status read_report(sqlite3* db, const CostQuery& q, Report& out) {
  // Attempts that end before they start are never rolled up.
  GPUCLOUD_TRY(add_ledger_rows(db, q, "started_at > ended_at", out, "ledger_irregular"));
  Statement days(db, "SELECT day, attempts, min_started_at FROM cost_days ORDER BY day");
  if (!days.ok()) return sqlite_error(db, "prepare cost_days read");
  DayRanges whole, raw, not_whole;
  bool in_whole = false, in_raw = false, in_not_whole = false;
  int64_t whole_attempts = 0, all_attempts = 0;
  int rc;
  while ((rc = days.step()) == SQLITE_ROW) {
    const int64_t day = days.integer(0), attempts = days.integer(1);
    all_attempts += attempts;
    DayUse use = day_use(q, day, days.integer(2));
    if (use == DayUse::kWhole) {
      extend(whole, day, in_whole);
      whole_attempts += attempts;
    } else {
      extend(not_whole, day, in_not_whole);
    }
    if (use == DayUse::kRaw) extend(raw, day, in_raw);
    in_whole = use == DayUse::kWhole && in_whole;
    in_raw = use == DayUse::kRaw && in_raw;
    in_not_whole = use != DayUse::kWhole && in_not_whole;
  }
  if (rc != SQLITE_DONE) return sqlite_error(db, "read cost_days");
  for (auto [from, to] : raw)
    GPUCLOUD_TRY(add_ledger_rows(db, q,
                                 fmt::format("started_at <= ended_at AND ended_at >= {} AND "
                                             "ended_at < {}",
                                             from * kDayMs, to * kDayMs),
                                 out));
  // By day, a key per day: the whole days' rows only. Otherwise the fewer rows of the two.
  if (q.group_by == "day" || whole_attempts * 2 <= all_attempts)
    return add_daily(db, q, whole, +1, out);
  GPUCLOUD_TRY(add_totals(db, q, out));
  return add_daily(db, q, not_whole, -1, out);
}

}  // namespace

Result<std::vector<CostLine>> read_cost_report(sqlite3* db, const CostQuery& q) {
  if (!ledger_group_expression(q.group_by))
    return invalid(fmt::format("by: '{}' is not tenant, job, node, gpu-model or day", q.group_by));
  Report report;
  // One job's rows come from its index, and an empty window has nothing to split.
  const bool rollups = q.job_id.empty() && !(q.until > 0 && q.until <= q.since);
  const bool own_transaction = sqlite3_get_autocommit(db) != 0;
  if (own_transaction && sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK)
    return sqlite_error(db, "begin the cost report's read");
  Status st = rollups ? read_report(db, q, report) : add_ledger_rows(db, q, "", report);
  if (own_transaction) sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  if (!st.ok()) return st.error();
  std::map<std::string, CostLine> merged = std::move(report.raw);
  for (const auto& [key, s] : report.rolled) {
    CostLine& line = merged[key];
    line.attempts += s.attempts;
    line.gpu_hours += static_cast<double>(s.gpu_milli_ms) / 3'600'000'000.0;
    line.cost_usd += s.usd_ms / 3'600'000.0;
    line.on_demand_usd += s.on_demand_usd_ms / 3'600'000.0;
    line.idle_released_gpu_hours += static_cast<double>(s.idle_gpu_milli_ms) / 3'600'000'000.0;
    line.idle_released_usd += s.idle_usd_ms / 3'600'000.0;
  }
  std::vector<CostLine> out;
  for (auto& [key, line] : merged) {
    if (line.attempts == 0) continue;  // all its attempts lie outside the window
    line.key = key;
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace gpucloud::store::sqlite
