// SQLite StateStore: WAL mode, synchronous=FULL, one transaction per WriteBatch.
//
// Limits: one writer process per database file (the server); jobs are stored as their JSON
// document plus the indexed columns queries need.
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "model/json_fields.h"
#include "model/node_json.h"
#include "store/sqlite/audit_log.h"
#include "store/sqlite/cost_rollup.h"
#include "store/sqlite/statement.h"
#include "store/state_store.h"

namespace gpucloud::store {
namespace {

using json = nlohmann::json;

// Schema migrations, applied in order; the index + 1 is the schema version.
const char* const kMigrations[] = {
    R"sql(
    CREATE TABLE jobs (
      id TEXT PRIMARY KEY,
      tenant TEXT NOT NULL,
      state TEXT NOT NULL,
      terminal INTEGER NOT NULL,
      created_at INTEGER NOT NULL,
      finished_at INTEGER NOT NULL,
      doc TEXT NOT NULL);
    CREATE INDEX jobs_active ON jobs(terminal, created_at);
    CREATE INDEX jobs_finished ON jobs(terminal, finished_at);
    CREATE TABLE nodes (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL UNIQUE,
      doc TEXT NOT NULL);
    CREATE TABLE tokens (
      sha256 TEXT PRIMARY KEY,
      doc TEXT NOT NULL);
    CREATE TABLE audit (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      at INTEGER NOT NULL,
      actor TEXT NOT NULL,
      action TEXT NOT NULL,
      object TEXT NOT NULL,
      detail TEXT NOT NULL);
    CREATE INDEX audit_object ON audit(object, seq);
    )sql",
    sqlite::kAuditChainMigration,
    R"sql(
    CREATE TABLE ledger (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      job_id TEXT NOT NULL,
      tenant TEXT NOT NULL,
      attempt INTEGER NOT NULL,
      rank INTEGER NOT NULL,
      node TEXT NOT NULL,
      gpu_model TEXT NOT NULL,
      gpu_milli INTEGER NOT NULL,
      started_at INTEGER NOT NULL,
      ended_at INTEGER NOT NULL,
      usd_per_hour REAL NOT NULL,
      on_demand_usd_per_hour REAL NOT NULL,
      cost_usd REAL NOT NULL,
      end_reason TEXT NOT NULL,
      cause TEXT NOT NULL,
      idle_released_ms INTEGER NOT NULL);
    CREATE INDEX ledger_ended ON ledger(ended_at);
    CREATE INDEX ledger_tenant ON ledger(tenant, ended_at);
    CREATE INDEX ledger_job ON ledger(job_id);
    )sql",
    sqlite::kCostRollupMigration,
};

using sqlite::Statement;

json node_to_doc(const NodeRecord& n) {
  return {{"id", n.id},
          {"credential_sha256", n.credential_sha256},
          {"info", node_info_to_json(n.info)},
          {"state", n.state},
          {"cordoned", n.cordoned},
          {"replace_approved", n.replace_approved},
          {"registered_at", n.registered_at},
          {"last_seen", n.last_seen}};
}

Result<NodeRecord> node_from_doc(const std::string& text) {
  try {
    json j = json::parse(text);
    NodeRecord n;
    n.id = j.at("id").get<std::string>();
    n.credential_sha256 = j.at("credential_sha256").get<std::string>();
    auto info = node_info_from_json(j.at("info"));
    if (!info) return info.error();
    n.info = std::move(*info);
    n.state = j.at("state").get<std::string>();
    n.cordoned = j.value("cordoned", false);
    n.replace_approved = j.value("replace_approved", false);
    n.registered_at = j.at("registered_at").get<TimeMs>();
    n.last_seen = j.at("last_seen").get<TimeMs>();
    return n;
  } catch (const json::exception& e) {
    return internal(std::string("stored node record is malformed: ") + e.what());
  }
}

json token_to_doc(const TokenRecord& t) {
  return {{"sha256", t.sha256},
          {"name", t.name},
          {"role", t.role},
          {"tenants", t.tenants},
          {"created_at", t.created_at},
          {"expires_at", t.expires_at},
          {"revoked", t.revoked}};
}

class SqliteStore final : public StateStore {
 public:
  explicit SqliteStore(sqlite3* db) : db_(db) {}
  ~SqliteStore() override { sqlite3_close_v2(db_); }

  Status init() {
    for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
                               "PRAGMA foreign_keys=ON", "PRAGMA busy_timeout=5000",
                               // Reports read the whole ledger: through the page cache of the
                               // OS (mmap) rather than a read() per page.
                               "PRAGMA mmap_size=1073741824", "PRAGMA cache_size=-65536"}) {
      GPUCLOUD_TRY(exec(pragma));
    }
    return migrate();
  }

  Status commit(const WriteBatch& batch) override {
    if (batch.empty()) return {};
    GPUCLOUD_TRY(exec("BEGIN IMMEDIATE"));
    Status st = write(batch);
    if (!st.ok()) {
      (void)exec("ROLLBACK");
      return st;
    }
    return exec("COMMIT");
  }

  Result<std::vector<Job>> load_jobs(bool include_terminal) override {
    return query_jobs(include_terminal
                          ? "SELECT doc FROM jobs ORDER BY created_at, id"
                          : "SELECT doc FROM jobs WHERE terminal = 0 ORDER BY created_at, id",
                      {});
  }

  Result<std::optional<Job>> get_job(const std::string& id) override {
    auto jobs = query_jobs("SELECT doc FROM jobs WHERE id = ?1", {id});
    if (!jobs) return jobs.error();
    if (jobs->empty()) return std::optional<Job>();
    return std::optional<Job>(std::move(jobs->front()));
  }

  Result<std::vector<Job>> find_jobs_by_prefix(const std::string& prefix, int limit) override {
    std::string hi = prefix;
    hi.push_back('\x7f');
    return query_jobs(
        fmt::format("SELECT doc FROM jobs WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT {}", limit)
            .c_str(),
        {prefix, hi});
  }

  Result<std::vector<Job>> finished_jobs_page(const std::string& before_id,
                                              const std::vector<std::string>& tenants,
                                              int limit) override {
    std::vector<std::string> args{before_id.empty() ? std::string("\x7f") : before_id};
    std::string in;
    for (const auto& t : tenants) {
      args.push_back(t);
      in += fmt::format("{}?{}", in.empty() ? "" : ",", args.size());
    }
    std::string sql = fmt::format(
        "SELECT doc FROM jobs WHERE terminal = 1 AND id < ?1{} ORDER BY id DESC LIMIT {}",
        tenants.empty() ? "" : " AND tenant IN (" + in + ")", limit);
    return query_jobs(sql.c_str(), args);
  }

  Result<std::vector<NodeRecord>> load_nodes() override {
    Statement st(db_, "SELECT doc FROM nodes ORDER BY name");
    if (!st.ok()) return error("prepare load_nodes");
    std::vector<NodeRecord> out;
    while (st.step() == SQLITE_ROW) {
      auto n = node_from_doc(st.text(0));
      if (!n) return n.error();
      out.push_back(std::move(*n));
    }
    return out;
  }

  Result<std::vector<TokenRecord>> load_tokens() override {
    Statement st(db_, "SELECT doc FROM tokens");
    if (!st.ok()) return error("prepare load_tokens");
    std::vector<TokenRecord> out;
    while (st.step() == SQLITE_ROW) {
      try {
        json j = json::parse(st.text(0));
        TokenRecord t;
        t.sha256 = j.at("sha256").get<std::string>();
        t.name = j.at("name").get<std::string>();
        t.role = j.at("role").get<std::string>();
        t.tenants = j.at("tenants").get<std::vector<std::string>>();
        t.created_at = j.at("created_at").get<TimeMs>();
        t.expires_at = j.at("expires_at").get<TimeMs>();
        t.revoked = j.at("revoked").get<bool>();
        out.push_back(std::move(t));
      } catch (const json::exception& e) {
        return internal(std::string("stored token record is malformed: ") + e.what());
      }
    }
    return out;
  }

  Result<std::vector<CostLine>> cost_report(const CostQuery& q) override {
    return sqlite::read_cost_report(db_, q);
  }

  Result<std::vector<AuditEntry>> audit_for(const std::string& object, int limit) override {
    Statement st(
        db_,
        "SELECT at, actor, action, object, detail FROM (SELECT * FROM audit WHERE object = ?1 "
        "ORDER BY seq DESC LIMIT ?2) ORDER BY seq");
    if (!st.ok()) return error("prepare audit_for");
    st.bind(1, object);
    st.bind(2, static_cast<int64_t>(limit));
    std::vector<AuditEntry> out;
    while (st.step() == SQLITE_ROW)
      out.push_back({st.integer(0), st.text(1), st.text(2), st.text(3), st.text(4)});
    return out;
  }

  Result<std::vector<AuditEntry>> audit_page(const AuditQuery& query) override {
    return sqlite::read_audit_page(db_, query);
  }

  Result<AuditHead> audit_head() override { return sqlite::read_audit_head(db_); }

  Result<AuditVerification> verify_audit(const std::optional<AuditHead>& expected) override {
    // One read transaction: the walk sees one version of the log.
    GPUCLOUD_TRY(exec("BEGIN"));
    auto v = sqlite::verify_audit_chain(db_, expected);
    (void)exec("COMMIT");
    return v;
  }

 private:
  Error error(const std::string& what) {
    return internal(fmt::format("sqlite {}: {}", what, sqlite3_errmsg(db_)));
  }

  Status exec(const char* sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      std::string text = msg ? msg : "unknown error";
      sqlite3_free(msg);
      return internal(fmt::format("sqlite '{}': {}", std::string(sql).substr(0, 40), text));
    }
    return {};
  }

  Status migrate() {
    Statement version(db_, "PRAGMA user_version");
    if (!version.ok() || version.step() != SQLITE_ROW) return error("read schema version");
    int64_t current = version.integer(0);
    const int64_t latest = static_cast<int64_t>(std::size(kMigrations));
    if (current > latest)
      return internal(fmt::format(
          "database schema version {} is newer than this gpucloud ({}); upgrade gpucloud", current,
          latest));
    for (int64_t v = current; v < latest; ++v) {
      GPUCLOUD_TRY(exec("BEGIN IMMEDIATE"));
      Status st = exec(kMigrations[v]);
      if (st.ok()) st = exec(fmt::format("PRAGMA user_version = {}", v + 1).c_str());
      if (!st.ok()) {
        (void)exec("ROLLBACK");
        return st;
      }
      GPUCLOUD_TRY(exec("COMMIT"));
      spdlog::info("store: migrated schema to version {}", v + 1);
    }
    return {};
  }

  Status write(const WriteBatch& batch) {
    if (!batch.jobs.empty()) {
      Statement st(
          db_,
          "INSERT OR REPLACE INTO jobs (id, tenant, state, terminal, created_at, finished_at, doc) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
      if (!st.ok()) return error("prepare job write");
      for (const auto& job : batch.jobs) {
        st.bind(1, job.id);
        st.bind(2, job.spec.tenant);
        st.bind(3, std::string(to_string(job.state)));
        st.bind(4, static_cast<int64_t>(is_terminal(job.state)));
        st.bind(5, job.created_at);
        st.bind(6, job.finished_at);
        st.bind(7, json_text(job_to_json(job)));
        if (st.step() != SQLITE_DONE) return error("write job " + job.id);
        st.reset();
      }
    }
    if (!batch.nodes.empty()) {
      Statement st(db_, "INSERT OR REPLACE INTO nodes (id, name, doc) VALUES (?1, ?2, ?3)");
      if (!st.ok()) return error("prepare node write");
      for (const auto& node : batch.nodes) {
        st.bind(1, node.id);
        st.bind(2, node.info.name);
        st.bind(3, json_text(node_to_doc(node)));
        if (st.step() != SQLITE_DONE) return error("write node " + node.info.name);
        st.reset();
      }
    }
    if (!batch.removed_nodes.empty()) {
      Statement st(db_, "DELETE FROM nodes WHERE id = ?1");
      if (!st.ok()) return error("prepare node delete");
      for (const auto& id : batch.removed_nodes) {
        st.bind(1, id);
        if (st.step() != SQLITE_DONE) return error("delete node " + id);
        st.reset();
      }
    }
    if (!batch.tokens.empty()) {
      Statement st(db_, "INSERT OR REPLACE INTO tokens (sha256, doc) VALUES (?1, ?2)");
      if (!st.ok()) return error("prepare token write");
      for (const auto& t : batch.tokens) {
        st.bind(1, t.sha256);
        st.bind(2, json_text(token_to_doc(t)));
        if (st.step() != SQLITE_DONE) return error("write token " + t.name);
        st.reset();
      }
    }
    GPUCLOUD_TRY(sqlite::append_audit(db_, batch.audit));
    if (!batch.ledger.empty()) GPUCLOUD_TRY(write_ledger(batch.ledger));
    return {};
  }

  Status write_ledger(const std::vector<LedgerEntry>& entries) {
    Statement st(db_,
                 "INSERT INTO ledger (job_id, tenant, attempt, rank, node, gpu_model, gpu_milli, "
                 "started_at, ended_at, usd_per_hour, on_demand_usd_per_hour, cost_usd, "
                 "end_reason, cause, idle_released_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                 "?9, ?10, ?11, ?12, ?13, ?14, ?15)");
    if (!st.ok()) return error("prepare ledger write");
    for (const auto& e : entries) {
      st.bind(1, e.job_id);
      st.bind(2, e.tenant);
      st.bind(3, static_cast<int64_t>(e.attempt));
      st.bind(4, static_cast<int64_t>(e.rank));
      st.bind(5, e.node);
      st.bind(6, e.gpu_model);
      st.bind(7, e.gpu_milli);
      st.bind(8, e.started_at);
      st.bind(9, e.ended_at);
      st.bind(10, e.usd_per_hour);
      st.bind(11, e.on_demand_usd_per_hour);
      st.bind(12, e.cost_usd);
      st.bind(13, e.end);
      st.bind(14, e.cause);
      st.bind(15, e.idle_released_ms);
      if (st.step() != SQLITE_DONE) return error("append ledger row of job " + e.job_id);
      st.reset();
    }
    return sqlite::add_to_cost_rollups(db_, entries);
  }

  Result<std::vector<Job>> query_jobs(const char* sql, const std::vector<std::string>& args) {
    Statement st(db_, sql);
    if (!st.ok()) return error("prepare job query");
    for (size_t i = 0; i < args.size(); ++i) st.bind(static_cast<int>(i + 1), args[i]);
    std::vector<Job> out;
    while (st.step() == SQLITE_ROW) {
      json doc;
      try {
        doc = json::parse(st.text(0));
      } catch (const json::exception& e) {
        return internal(std::string("stored job is not JSON: ") + e.what());
      }
      auto job = job_from_json(doc);
      if (!job) return job.error();
      out.push_back(std::move(*job));
    }
    return out;
  }

  sqlite3* db_;
};

}  // namespace

Result<std::unique_ptr<StateStore>> open_sqlite_store(const std::string& path) {
  // The database holds every tenant's jobs and env values: 0600, created so before SQLite
  // opens it (its -wal and -shm files take the same mode), and closed again if it was not.
  if (!path.empty() && path != ":memory:" && path.rfind("file:", 0) != 0) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::fchmod(fd, 0600);
      ::close(fd);
    }
  }
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return internal(fmt::format("cannot open database {}: {}", path, msg));
  }
  auto store = std::make_unique<SqliteStore>(db);
  GPUCLOUD_TRY(store->init());
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace gpucloud::store
