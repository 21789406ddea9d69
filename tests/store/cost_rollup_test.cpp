// Cost reports from rollups (schema v4) against a plain sum over every ledger row, the way
// reports were computed before rollups existed.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "store/state_store.h"
#include "store_test_files.h"

namespace gpucloud::store {
namespace {

constexpr TimeMs kHour = 3'600'000, kDay = 24 * kHour, kT0 = 1'780'000'000'000 / kDay * kDay;

using test_files::raw_sql;
using test_files::TempDir;

std::unique_ptr<StateStore> open(const std::string& path) {
  auto store = open_sqlite_store(path);
  EXPECT_TRUE(store.ok()) << store.error().message;
  return store.ok() ? std::move(*store) : nullptr;
}

std::string utc_day(TimeMs t) {
  time_t s = static_cast<time_t>(t / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  char buf[16];
  strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// The report as a plain sum over every row: the definition rollups must keep.
std::map<std::string, CostLine> expected_report(const std::vector<LedgerEntry>& ledger,
                                                const CostQuery& q) {
  std::map<std::string, CostLine> out;
  const bool windowed = q.since > 0 || q.until > 0;
  const TimeMs until = q.until > 0 ? q.until : std::numeric_limits<TimeMs>::max();
  for (const auto& e : ledger) {
    if (e.started_at <= 0 || (q.since > 0 && e.ended_at <= q.since) ||
        (q.until > 0 && e.started_at >= q.until))
      continue;
    if (!q.job_id.empty() && e.job_id != q.job_id) continue;
    if (!q.tenants.empty() &&
        std::find(q.tenants.begin(), q.tenants.end(), e.tenant) == q.tenants.end())
      continue;
    const double ms =
        static_cast<double>(windowed ? std::min(e.ended_at, until) - std::max(e.started_at, q.since)
                                     : e.ended_at - e.started_at);
    std::string key = q.group_by == "job"         ? e.job_id
                      : q.group_by == "node"      ? e.node
                      : q.group_by == "gpu-model" ? e.gpu_model
                      : q.group_by == "day"       ? utc_day(e.ended_at)
                                                  : e.tenant;
    CostLine& l = out[key];
    l.key = key;
    l.attempts += 1;
    l.gpu_hours += static_cast<double>(e.gpu_milli) * ms / 3.6e9;
    l.cost_usd += e.usd_per_hour * ms / 3.6e6;
    l.on_demand_usd += e.on_demand_usd_per_hour * ms / 3.6e6;
    l.idle_released_gpu_hours += static_cast<double>(e.gpu_milli * e.idle_released_ms) / 3.6e9;
    l.idle_released_usd += e.usd_per_hour * static_cast<double>(e.idle_released_ms) / 3.6e6;
  }
  return out;
}

void expect_report(StateStore& store, const std::vector<LedgerEntry>& ledger, const CostQuery& q) {
  SCOPED_TRACE(testing::Message() << "by " << q.group_by << " since " << q.since << " until "
                                  << q.until << " tenants " << q.tenants.size() << " job '"
                                  << q.job_id << "'");
  auto got = store.cost_report(q);
  ASSERT_TRUE(got.ok()) << got.error().message;
  auto want = expected_report(ledger, q);
  ASSERT_EQ(got->size(), want.size());
  size_t i = 0;
  for (const auto& [key, w] : want) {
    const CostLine& g = got->at(i++);
    ASSERT_EQ(g.key, key);
    EXPECT_EQ(g.attempts, w.attempts) << key;
    EXPECT_NEAR(g.gpu_hours, w.gpu_hours, 1e-6) << key;
    EXPECT_NEAR(g.cost_usd, w.cost_usd, 1e-6) << key;
    EXPECT_NEAR(g.on_demand_usd, w.on_demand_usd, 1e-6) << key;
    EXPECT_NEAR(g.idle_released_gpu_hours, w.idle_released_gpu_hours, 1e-6) << key;
    EXPECT_NEAR(g.idle_released_usd, w.idle_released_usd, 1e-6) << key;
  }
}

// A ledger over 20 days from kT0: attempts of minutes to hours, some across midnight, a few of
// several days, some ending exactly at midnight, a few of zero length or ending before they
// start, and rows without a start (never reported).
std::vector<LedgerEntry> random_ledger(std::mt19937_64& rng, int rows) {
  std::vector<LedgerEntry> out;
  for (int i = 0; i < rows; ++i) {
    LedgerEntry e;
    e.tenant = "tenant-" + std::to_string(rng() % 3);
    e.job_id = e.tenant + "-job-" + std::to_string(rng() % 15);
    e.node = "node-" + std::to_string(rng() % 5);
    e.gpu_model = rng() % 4 == 0 ? "" : (rng() % 2 ? "H100" : "A100");
    e.gpu_milli = static_cast<int64_t>(rng() % 8001);
    e.started_at = kT0 + static_cast<TimeMs>(rng() % (20 * kDay));
    switch (rng() % 20) {
      case 0:
        e.ended_at = e.started_at + static_cast<TimeMs>(rng() % (5 * kDay));
        break;
      case 1:
        e.ended_at = (e.started_at / kDay + 1) * kDay;
        break;  // at midnight
      case 2:
        e.ended_at = e.started_at;
        break;
      case 3:
        e.ended_at = e.started_at - static_cast<TimeMs>(rng() % kHour);
        break;
      case 4:
        e.started_at = 0, e.ended_at = kT0 + static_cast<TimeMs>(rng() % kDay);
        break;
      default:
        e.ended_at = e.started_at + static_cast<TimeMs>(rng() % (10 * kHour));
    }
    e.usd_per_hour = static_cast<double>(rng() % 4000) / 100;
    e.on_demand_usd_per_hour = e.usd_per_hour * 1.5;
    e.cost_usd = e.usd_per_hour * static_cast<double>(e.ended_at - e.started_at) / 3.6e6;
    e.idle_released_ms = rng() % 5 == 0 ? static_cast<int64_t>(rng() % (3 * kHour)) : 0;
    e.end = "succeeded";
    out.push_back(std::move(e));
  }
  return out;
}

// A window bound: none, a midnight, or any millisecond, within or just around the ledger.
TimeMs random_bound(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      return 0;
    case 1:
      return kT0 + static_cast<TimeMs>(rng() % 24 - 2) * kDay;
    default:
      return kT0 - kDay + static_cast<TimeMs>(rng() % (24 * kDay));
  }
}

void commit_in_batches(StateStore& store, const std::vector<LedgerEntry>& ledger) {
  for (size_t i = 0; i < ledger.size(); i += 97) {
    WriteBatch batch;
    batch.ledger.assign(
        ledger.begin() + static_cast<std::ptrdiff_t>(i),
        ledger.begin() + static_cast<std::ptrdiff_t>(std::min(i + 97, ledger.size())));
    ASSERT_TRUE(store.commit(batch).ok());
  }
}

void expect_random_reports(StateStore& store, const std::vector<LedgerEntry>& ledger,
                           std::mt19937_64& rng, int queries) {
  const char* const kBy[] = {"tenant", "job", "node", "gpu-model", "day"};
  for (int i = 0; i < queries; ++i) {
    CostQuery q;
    q.group_by = kBy[i % 5];
    q.since = random_bound(rng);
    q.until = random_bound(rng);
    if (q.until > 0 && q.until <= q.since) std::swap(q.since, q.until);
    if (q.until > 0 && q.until <= q.since) q.until = 0;
    if (rng() % 3 == 0) q.tenants = {"tenant-" + std::to_string(rng() % 3)};
    if (rng() % 6 == 0) q.tenants = {"tenant-0", "tenant-2"};
    if (rng() % 10 == 0) q.job_id = "tenant-1-job-" + std::to_string(rng() % 15);
    expect_report(store, ledger, q);
  }
}

TEST(CostRollup, ReportsEqualTheSumOverEveryLedgerRow) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  std::mt19937_64 rng(17);
  std::vector<LedgerEntry> ledger = random_ledger(rng, 3000);
  commit_in_batches(*store, ledger);
  for (const char* by : {"tenant", "job", "node", "gpu-model", "day"})
    expect_report(*store, ledger, {.group_by = by});
  expect_random_reports(*store, ledger, rng, 400);
}

TEST(CostRollup, AWindowCuttingAttemptsAcrossMidnightProratesThem) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  LedgerEntry e;
  e.job_id = "j1";
  e.tenant = "vision";
  e.node = "n1";
  e.gpu_model = "A100";
  e.gpu_milli = 1000;
  e.usd_per_hour = 2;
  e.on_demand_usd_per_hour = 2;
  std::vector<LedgerEntry> ledger;
  // 22:00 on day 0 to 02:00 on day 2 (28 h), and a short one inside day 1.
  e.started_at = kT0 + kDay - 2 * kHour, e.ended_at = kT0 + 3 * kDay + 2 * kHour - kDay;
  ledger.push_back(e);
  e.job_id = "j2", e.started_at = kT0 + kDay + kHour, e.ended_at = kT0 + kDay + 3 * kHour;
  ledger.push_back(e);
  WriteBatch batch;
  batch.ledger = ledger;
  ASSERT_TRUE(store->commit(batch).ok());
  // Day 1 from 12:00 to day 2 at 12:00: j1 for 14 h ($28), j2 for 2 h ($4).
  auto lines = store->cost_report(
      {.group_by = "job", .since = kT0 + 12 * kHour, .until = kT0 + kDay + 12 * kHour});
  ASSERT_TRUE(lines.ok()) << lines.error().message;
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_NEAR(lines->at(0).cost_usd, 28, 1e-9);
  EXPECT_NEAR(lines->at(1).cost_usd, 4, 1e-9);
  std::mt19937_64 rng(5);
  expect_random_reports(*store, ledger, rng, 100);
}

TEST(CostRollup, AMemberFilterNeverReadsAnotherTenantsRollups) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  std::mt19937_64 rng(3);
  std::vector<LedgerEntry> ledger = random_ledger(rng, 600);
  commit_in_batches(*store, ledger);
  for (const char* by : {"tenant", "job", "node", "gpu-model", "day"})
    for (TimeMs since : {TimeMs{0}, kT0 + 2 * kDay + kHour})  // all time; most of the ledger
      for (TimeMs until : {TimeMs{0}, kT0 + 5 * kDay + kHour}) {
        CostQuery q{.group_by = by, .since = since, .until = until, .tenants = {"tenant-1"}};
        auto lines = store->cost_report(q);
        ASSERT_TRUE(lines.ok()) << lines.error().message;
        ASSERT_FALSE(lines->empty());
        for (const auto& l : *lines) {
          if (q.group_by == "tenant") {
            EXPECT_EQ(l.key, "tenant-1");
          }
          if (q.group_by == "job") {
            EXPECT_EQ(l.key.rfind("tenant-1-", 0), 0u) << l.key;
          }
        }
        expect_report(*store, ledger, q);
      }
}

TEST(CostRollup, UpgradingAVersion3StoreFillsTheRollupsFromItsLedger) {
  TempDir dir;
  const std::string path = dir.file("state.db");
  std::mt19937_64 rng(11);
  std::vector<LedgerEntry> ledger = random_ledger(rng, 1500);
  {
    auto store = open(path);
    ASSERT_TRUE(store);
    commit_in_batches(*store, ledger);
  }
  // Back to schema version 3: the ledger alone.
  raw_sql(path,
          "DROP TABLE cost_daily; DROP TABLE cost_totals; DROP TABLE cost_days; "
          "DROP INDEX ledger_irregular; PRAGMA user_version = 3;");
  auto store = open(path);
  ASSERT_TRUE(store);
  for (const char* by : {"tenant", "job", "node", "gpu-model", "day"})
    expect_report(*store, ledger, {.group_by = by});
  expect_random_reports(*store, ledger, rng, 150);
  // Rows written after the upgrade add to the filled rollups.
  std::vector<LedgerEntry> more = random_ledger(rng, 300);
  commit_in_batches(*store, more);
  ledger.insert(ledger.end(), more.begin(), more.end());
  expect_random_reports(*store, ledger, rng, 150);
}

}  // namespace
}  // namespace gpucloud::store
