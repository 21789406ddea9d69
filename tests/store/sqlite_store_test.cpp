#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "store/state_store.h"
#include "store_test_files.h"

namespace gpucloud::store {
namespace {

using test_files::raw_sql;
using test_files::TempDir;

int64_t user_version(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

std::unique_ptr<StateStore> open(const std::string& path) {
  auto store = open_sqlite_store(path);
  EXPECT_TRUE(store.ok()) << store.error().message;
  return store.ok() ? std::move(*store) : nullptr;
}

Job make_job(const std::string& id, JobState state, TimeMs created_at, TimeMs finished_at = 0) {
  Job job;
  job.id = id;
  job.spec.name = "job-" + id.substr(0, 4);
  job.spec.command = {"python", "train.py"};
  job.spec.gpus = 2;
  job.spec.tenant = "nlp";
  job.spec.env = {{"SEED", "1"}};
  job.state = state;
  job.created_at = created_at;
  if (state != JobState::kPending) job.started_at = created_at + 10;
  job.finished_at = finished_at;
  if (is_terminal(state)) job.exit_code = state == JobState::kSucceeded ? 0 : 1;
  if (state == JobState::kPending) job.pending_reason = "waiting for resources";
  if (state != JobState::kPending) {
    ReplicaAssignment r;
    r.node_id = "node-1";
    r.node_name = "gpu-a";
    r.gpus = {{0, "GPU-0", 1000}, {1, "GPU-1", 1000}};
    r.cpu_milli = 1000;
    job.replicas = {r};
  }
  return job;
}

NodeRecord make_node(const std::string& id, const std::string& name) {
  NodeRecord n;
  n.id = id;
  n.credential_sha256 = std::string(64, 'c');
  n.info.name = name;
  n.info.hostname = name + ".lab";
  n.info.cpu_milli = 64'000;
  n.info.memory_mib = 512 * 1024;
  n.info.labels = {{"capacity-class", "spot"}};
  n.info.gpu_backend = "simulated";
  Gpu g;
  g.index = 0;
  g.uuid = "GPU-" + id;
  g.model = "A100";
  g.memory_mib = 81'920;
  g.numa_node = 1;
  g.nvlink_peers = {1};
  n.info.gpus = {g};
  n.state = "ready";
  n.registered_at = 1'000;
  n.last_seen = 2'000;
  return n;
}

std::vector<std::string> ids(const std::vector<Job>& jobs) {
  std::vector<std::string> out;
  for (const auto& j : jobs) out.push_back(j.id);
  return out;
}

using Ids = std::vector<std::string>;

TEST(SqliteStore, CommitsAndLoadsJobsOldestFirst) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  WriteBatch batch;
  batch.jobs = {make_job("cccc0003", JobState::kRunning, 3'000),
                make_job("aaaa0001", JobState::kPending, 1'000),
                make_job("bbbb0002", JobState::kSucceeded, 2'000, 2'500)};
  ASSERT_TRUE(store->commit(batch).ok());
  auto jobs = store->load_jobs(true);
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  EXPECT_EQ(ids(*jobs), (Ids{"aaaa0001", "bbbb0002", "cccc0003"}));
  const Job& running = (*jobs)[2];
  EXPECT_EQ(running.state, JobState::kRunning);
  EXPECT_EQ(running.spec.gpus, 2);
  EXPECT_EQ(running.spec.tenant, "nlp");
  EXPECT_EQ(running.spec.env.at("SEED"), "1");
  ASSERT_EQ(running.replicas.size(), 1u);
  EXPECT_EQ(running.replicas[0].gpus[1].uuid, "GPU-1");
  EXPECT_EQ((*jobs)[0].pending_reason, "waiting for resources");
  EXPECT_EQ((*jobs)[1].exit_code, 0);
}

TEST(SqliteStore, ActiveJobsExcludeTerminalOnes) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  WriteBatch batch;
  batch.jobs = {
      make_job("a1", JobState::kPending, 1),       make_job("a2", JobState::kRunning, 2),
      make_job("a3", JobState::kSucceeded, 3, 10), make_job("a4", JobState::kFailed, 4, 10),
      make_job("a5", JobState::kCancelled, 5, 10), make_job("a6", JobState::kLost, 6, 10)};
  ASSERT_TRUE(store->commit(batch).ok());
  EXPECT_EQ(ids(*store->load_jobs(false)), (Ids{"a1", "a2"}));
  EXPECT_EQ(store->load_jobs(true)->size(), 6u);
}

TEST(SqliteStore, CommittingAJobAgainReplacesIt) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  Job job = make_job("abcd", JobState::kRunning, 100);
  ASSERT_TRUE(store->commit({.jobs = {job}}).ok());
  job.state = JobState::kSucceeded;
  job.exit_code = 0;
  job.finished_at = 900;
  ASSERT_TRUE(store->commit({.jobs = {job}}).ok());
  auto all = store->load_jobs(true);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].state, JobState::kSucceeded);
  EXPECT_EQ((*all)[0].finished_at, 900);
  EXPECT_TRUE(store->load_jobs(false)->empty());
}

TEST(SqliteStore, GetsOneJobById) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->commit({.jobs = {make_job("abcd", JobState::kPending, 1)}}).ok());
  auto found = store->get_job("abcd");
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->spec.name, "job-abcd");
  auto missing = store->get_job("abce");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST(SqliteStore, FindsJobsByIdPrefix) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  ASSERT_TRUE(store
                  ->commit({.jobs = {make_job("abc2ff", JobState::kPending, 1),
                                     make_job("abc1ff", JobState::kSucceeded, 2, 3),
                                     make_job("abd0ff", JobState::kPending, 3),
                                     make_job("ab", JobState::kPending, 4)}})
                  .ok());
  EXPECT_EQ(ids(*store->find_jobs_by_prefix("abc", 10)), (Ids{"abc1ff", "abc2ff"}));
  EXPECT_EQ(ids(*store->find_jobs_by_prefix("abc", 1)), (Ids{"abc1ff"}));
  EXPECT_EQ(ids(*store->find_jobs_by_prefix("abd0ff", 10)), (Ids{"abd0ff"}));
  EXPECT_TRUE(store->find_jobs_by_prefix("ff", 10)->empty());
  EXPECT_TRUE(store->find_jobs_by_prefix("abc%", 10)->empty())
      << "prefix is literal, not a LIKE pattern";
}

TEST(SqliteStore, FinishedJobsComeInPagesNewestIdFirstFilteredByTenant) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  Job other = make_job("f4", JobState::kSucceeded, 5, 600);
  other.spec.tenant = "vision";
  ASSERT_TRUE(store
                  ->commit({.jobs = {make_job("f1", JobState::kSucceeded, 1, 500),
                                     make_job("f2", JobState::kFailed, 2, 900),
                                     make_job("f3", JobState::kCancelled, 3, 700), other,
                                     make_job("r1", JobState::kRunning, 4)}})
                  .ok());
  EXPECT_EQ(ids(*store->finished_jobs_page("", {}, 10)), (Ids{"f4", "f3", "f2", "f1"}));
  EXPECT_EQ(ids(*store->finished_jobs_page("", {}, 2)), (Ids{"f4", "f3"}));
  EXPECT_EQ(ids(*store->finished_jobs_page("f3", {}, 2)), (Ids{"f2", "f1"}));
  EXPECT_EQ(ids(*store->finished_jobs_page("", {"nlp"}, 10)), (Ids{"f3", "f2", "f1"}));
  EXPECT_EQ(ids(*store->finished_jobs_page("", {"nlp", "vision"}, 1)), (Ids{"f4"}));
  EXPECT_TRUE(store->finished_jobs_page("", {"nobody"}, 10)->empty());
}

TEST(SqliteStore, CommitsAndLoadsNodes) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  NodeRecord b = make_node("id-b", "node-b");
  b.cordoned = true;
  b.state = "unreachable";
  ASSERT_TRUE(store->commit({.nodes = {b, make_node("id-a", "node-a")}}).ok());
  auto nodes = store->load_nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].info.name, "node-a");
  const NodeRecord& got = (*nodes)[1];
  EXPECT_EQ(got.id, "id-b");
  EXPECT_EQ(got.credential_sha256, b.credential_sha256);
  EXPECT_EQ(got.state, "unreachable");
  EXPECT_TRUE(got.cordoned);
  EXPECT_EQ(got.registered_at, 1'000);
  EXPECT_EQ(got.last_seen, 2'000);
  EXPECT_EQ(got.info.hostname, "node-b.lab");
  EXPECT_EQ(got.info.cpu_milli, 64'000);
  EXPECT_EQ(got.info.labels, b.info.labels);
  ASSERT_EQ(got.info.gpus.size(), 1u);
  EXPECT_EQ(got.info.gpus[0].uuid, "GPU-id-b");
  EXPECT_EQ(got.info.gpus[0].memory_mib, 81'920);
  EXPECT_EQ(got.info.gpus[0].numa_node, 1);
  EXPECT_EQ(got.info.gpus[0].nvlink_peers, std::vector<int>{1});
}

TEST(SqliteStore, CommitsAndLoadsTokens) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  TokenRecord t;
  t.sha256 = std::string(64, 'a');
  t.name = "ada";
  t.role = "member";
  t.tenants = {"nlp", "vision"};
  t.created_at = 10;
  t.expires_at = 20;
  ASSERT_TRUE(store->commit({.tokens = {t}}).ok());
  t.revoked = true;
  ASSERT_TRUE(store->commit({.tokens = {t}}).ok());
  auto tokens = store->load_tokens();
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  ASSERT_EQ(tokens->size(), 1u);
  const TokenRecord& got = (*tokens)[0];
  EXPECT_EQ(got.sha256, t.sha256);
  EXPECT_EQ(got.name, "ada");
  EXPECT_EQ(got.role, "member");
  EXPECT_EQ(got.tenants, t.tenants);
  EXPECT_EQ(got.created_at, 10);
  EXPECT_EQ(got.expires_at, 20);
  EXPECT_TRUE(got.revoked);
}

TEST(SqliteStore, AuditKeepsTheLastEntriesOfAnObjectInOrder) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  ASSERT_TRUE(store
                  ->commit({.audit = {{1, "ada", "job.submit", "j1", "gpus=2"},
                                      {2, "bob", "job.submit", "j2", ""}}})
                  .ok());
  ASSERT_TRUE(store
                  ->commit({.audit = {{3, "ada", "job.cancel", "j1", ""},
                                      {4, "system", "job.finish", "j1", "exit 0"}}})
                  .ok());
  auto all = store->audit_for("j1", 10);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].action, "job.submit");
  EXPECT_EQ((*all)[0].actor, "ada");
  EXPECT_EQ((*all)[0].detail, "gpus=2");
  EXPECT_EQ((*all)[2].action, "job.finish");
  EXPECT_EQ((*all)[2].at, 4);
  auto last_two = store->audit_for("j1", 2);
  ASSERT_EQ(last_two->size(), 2u);
  EXPECT_EQ((*last_two)[0].action, "job.cancel");
  EXPECT_EQ((*last_two)[1].action, "job.finish");
  EXPECT_TRUE(store->audit_for("j3", 10)->empty());
}

TEST(SqliteStore, ReopeningTheFileKeepsEverything) {
  TempDir dir;
  const std::string path = dir.file("state.db");
  {
    auto store = open(path);
    ASSERT_TRUE(store);
    TokenRecord t{std::string(64, 'b'), "ops", "admin", {}, 5, 0, false};
    ASSERT_TRUE(store
                    ->commit({.jobs = {make_job("abcd", JobState::kRunning, 7)},
                              .nodes = {make_node("id-a", "node-a")},
                              .tokens = {t},
                              .audit = {{7, "ops", "job.submit", "abcd", ""}}})
                    .ok());
  }
  for (int i = 0; i < 2; ++i) {  // reopening runs the migrations check again each time
    auto store = open(path);
    ASSERT_TRUE(store);
    EXPECT_EQ(ids(*store->load_jobs(false)), (Ids{"abcd"}));
    EXPECT_EQ(store->load_nodes()->size(), 1u);
    ASSERT_EQ(store->load_tokens()->size(), 1u);
    EXPECT_EQ(store->load_tokens()->at(0).role, "admin");
    EXPECT_EQ(store->audit_for("abcd", 10)->size(), 1u);
  }
  EXPECT_EQ(user_version(path), 4);
}

TEST(SqliteStore, ABatchIsAllOrNothing) {
  TempDir dir;
  const std::string path = dir.file("state.db");
  auto store = open(path);
  ASSERT_TRUE(store);
  // Fault injection: the audit insert, written after the jobs and nodes, fails.
  raw_sql(path,
          "CREATE TRIGGER fail_audit BEFORE INSERT ON audit WHEN NEW.action = 'boom' "
          "BEGIN SELECT RAISE(ABORT, 'injected failure'); END;");
  Status st = store->commit(
      {.jobs = {make_job("abcd", JobState::kPending, 1)},
       .nodes = {make_node("id-a", "node-a")},
       .audit = {{1, "ada", "job.submit", "abcd", ""}, {1, "ada", "boom", "abcd", ""}}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInternal);
  EXPECT_NE(st.error().message.find("injected failure"), std::string::npos) << st.error().message;
  EXPECT_TRUE(store->load_jobs(true)->empty());
  EXPECT_TRUE(store->load_nodes()->empty());
  EXPECT_TRUE(store->audit_for("abcd", 10)->empty());
  // The failed transaction was rolled back, not left open: the next batch commits.
  ASSERT_TRUE(store->commit({.jobs = {make_job("beef", JobState::kPending, 2)}}).ok());
  EXPECT_EQ(ids(*store->load_jobs(true)), (Ids{"beef"}));
}

TEST(SqliteStore, RefusesADatabaseFromANewerVersion) {
  TempDir dir;
  const std::string path = dir.file("state.db");
  ASSERT_TRUE(open(path));
  raw_sql(path, "PRAGMA user_version = 99");
  auto store = open_sqlite_store(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("upgrade gpucloud"), std::string::npos)
      << store.error().message;
}

TEST(SqliteStore, OpeningAnImpossiblePathNamesIt) {
  TempDir dir;
  const std::string path = dir.file("missing-dir/state.db");
  auto store = open_sqlite_store(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find(path), std::string::npos) << store.error().message;
}

TEST(SqliteStore, AnEmptyBatchIsANoOp) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  EXPECT_TRUE(store->commit({}).ok());
  EXPECT_TRUE(store->load_jobs(true)->empty());
}

}  // namespace
}  // namespace gpucloud::store

namespace gpucloud::store {
namespace {

LedgerEntry ledger_row(const std::string& job, const std::string& tenant, TimeMs start, TimeMs end,
                       double usd_per_hour, double on_demand) {
  LedgerEntry e;
  e.job_id = job;
  e.tenant = tenant;
  e.node = "node-a";
  e.gpu_model = "A100";
  e.gpu_milli = 2000;
  e.started_at = start;
  e.ended_at = end;
  e.usd_per_hour = usd_per_hour;
  e.on_demand_usd_per_hour = on_demand;
  e.cost_usd = usd_per_hour * (end - start) / 3'600'000.0;
  e.end = "succeeded";
  return e;
}

TEST(SqliteStoreLedger, SumsByTenantWithinTheWindow) {
  TempDir dir;
  auto store = open(dir.file("state.db"));
  ASSERT_TRUE(store);
  const TimeMs hour = 3'600'000;
  WriteBatch batch;
  const TimeMs t0 = 1'780'000'000'000;
  batch.ledger = {ledger_row("j1", "nlp", t0, t0 + 2 * hour, 3, 3),
                  ledger_row("j2", "nlp", t0 + hour, t0 + 2 * hour, 1, 4),
                  ledger_row("j3", "vision", t0, t0 + hour, 10, 10)};
  ASSERT_TRUE(store->commit(batch).ok());
  auto all = store->cost_report({.group_by = "tenant"});
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).key, "nlp");
  EXPECT_EQ(all->at(0).attempts, 2);
  EXPECT_NEAR(all->at(0).cost_usd, 6 + 1, 1e-9);
  EXPECT_NEAR(all->at(0).on_demand_usd, 6 + 4, 1e-9);
  EXPECT_NEAR(all->at(0).gpu_hours, 4 + 2, 1e-9);
  // Only the second hour: j1 half its cost, j2 all of it, j3 nothing.
  auto late =
      store->cost_report({.group_by = "tenant", .since = t0 + hour, .until = t0 + 2 * hour});
  ASSERT_TRUE(late.ok());
  ASSERT_EQ(late->size(), 1u);
  EXPECT_NEAR(late->at(0).cost_usd, 3 + 1, 1e-9);
  auto vision = store->cost_report({.group_by = "job", .tenants = {"vision"}});
  ASSERT_TRUE(vision.ok());
  ASSERT_EQ(vision->size(), 1u);
  EXPECT_EQ(vision->at(0).key, "j3");
  EXPECT_FALSE(store->cost_report({.group_by = "colour"}).ok());
}

TEST(SqliteStoreLedger, ARowIsWrittenWithItsBatchOrNotAtAll) {
  TempDir dir;
  const std::string path = dir.file("state.db");
  auto store = open(path);
  ASSERT_TRUE(store);
  raw_sql(path,
          "CREATE TRIGGER fail_audit BEFORE INSERT ON audit WHEN NEW.action = 'boom' "
          "BEGIN SELECT RAISE(ABORT, 'injected failure'); END;");
  WriteBatch batch;
  batch.ledger = {ledger_row("j1", "nlp", 1000, 2000, 3, 3)};
  batch.audit = {{1, "server", "boom", "j1", ""}};
  EXPECT_FALSE(store->commit(batch).ok());
  EXPECT_TRUE(store->cost_report({})->empty());
}

}  // namespace
}  // namespace gpucloud::store
