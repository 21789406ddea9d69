#include "store/sqlite/audit_log.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpucloud::store {

std::string audit_canonical(const AuditEntry& e) {
  return nlohmann::json::array({e.seq, e.at, e.actor, e.role, e.source, e.action, e.object,
                                e.tenant, e.outcome, e.detail, e.prev_hash})
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string audit_hash(const AuditEntry& e) {
  std::string text = audit_canonical(e);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string hex;
  for (unsigned char b : digest) hex += fmt::format("{:02x}", b);
  return hex;
}

namespace sqlite {

const char* const kAuditChainMigration = R"sql(
    ALTER TABLE audit ADD COLUMN role TEXT NOT NULL DEFAULT '';
    ALTER TABLE audit ADD COLUMN source TEXT NOT NULL DEFAULT '';
    ALTER TABLE audit ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
    ALTER TABLE audit ADD COLUMN outcome TEXT NOT NULL DEFAULT '';
    ALTER TABLE audit ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
    ALTER TABLE audit ADD COLUMN hash TEXT NOT NULL DEFAULT '';
    )sql";

namespace {

// A prepared statement, finalized on scope exit.
class Query {
 public:
  Query(sqlite3* db, const std::string& sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
  }
  ~Query() { sqlite3_finalize(stmt_); }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  void bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  int step() { return sqlite3_step(stmt_); }
  void reset() { sqlite3_reset(stmt_); }
  std::string text(int col) {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, sqlite3_column_bytes(stmt_, col)) : std::string();
  }
  int64_t integer(int col) { return sqlite3_column_int64(stmt_, col); }
  Error error(const std::string& what) const {
    return internal(fmt::format("sqlite {}: {}", what, sqlite3_errmsg(db_)));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

constexpr const char* kColumns =
    "seq, at, actor, role, source, action, object, tenant, outcome, detail, prev_hash, hash";

AuditEntry entry_at(Query& q) {
  AuditEntry e;
  e.seq = q.integer(0);
  e.at = q.integer(1);
  e.actor = q.text(2);
  e.role = q.text(3);
  e.source = q.text(4);
  e.action = q.text(5);
  e.object = q.text(6);
  e.tenant = q.text(7);
  e.outcome = q.text(8);
  e.detail = q.text(9);
  e.prev_hash = q.text(10);
  e.hash = q.text(11);
  return e;
}

}  // namespace

Status append_audit(sqlite3* db, const std::vector<AuditEntry>& entries) {
  if (entries.empty()) return {};
  Query last(db, "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1");
  if (!last.ok()) return last.error("prepare audit head");
  int64_t seq = 0;
  std::string prev;
  if (last.step() == SQLITE_ROW) {
    seq = last.integer(0);
    prev = last.text(1);
  }
  Query insert(db, fmt::format("INSERT INTO audit ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                               "?9, ?10, ?11, ?12)",
                               kColumns));
  if (!insert.ok()) return insert.error("prepare audit write");
  for (AuditEntry e : entries) {
    e.seq = ++seq;
    e.prev_hash = prev;
    e.hash = audit_hash(e);
    insert.bind(1, e.seq);
    insert.bind(2, e.at);
    insert.bind(3, e.actor);
    insert.bind(4, e.role);
    insert.bind(5, e.source);
    insert.bind(6, e.action);
    insert.bind(7, e.object);
    insert.bind(8, e.tenant);
    insert.bind(9, e.outcome);
    insert.bind(10, e.detail);
    insert.bind(11, e.prev_hash);
    insert.bind(12, e.hash);
    if (insert.step() != SQLITE_DONE) return insert.error("append audit");
    insert.reset();
    prev = e.hash;
  }
  return {};
}

Result<std::vector<AuditEntry>> read_audit_page(sqlite3* db, const AuditQuery& query) {
  std::vector<std::string> texts;
  std::string where = "at >= ?1";
  if (query.before_seq > 0) where += " AND seq < ?2";
  if (!query.tenants.empty()) {
    std::string in;
    for (const auto& t : query.tenants) {
      texts.push_back(t);
      in += fmt::format("{}?{}", in.empty() ? "" : ",", texts.size() + 2);
    }
    where += " AND tenant IN (" + in + ")";
  }
  if (!query.action.empty()) {
    bool prefix = query.action.back() == '*';
    texts.push_back(prefix ? query.action.substr(0, query.action.size() - 1) : query.action);
    where += prefix ? fmt::format(" AND substr(action, 1, length(?{0})) = ?{0}", texts.size() + 2)
                    : fmt::format(" AND action = ?{}", texts.size() + 2);
  }
  int limit = std::clamp(query.limit, 1, 1000);
  Query q(db, fmt::format("SELECT {} FROM audit WHERE {} ORDER BY seq DESC LIMIT {}", kColumns,
                          where, limit));
  if (!q.ok()) return q.error("prepare audit page");
  q.bind(1, query.since);
  q.bind(2, query.before_seq);
  for (size_t i = 0; i < texts.size(); ++i) q.bind(static_cast<int>(i + 3), texts[i]);
  std::vector<AuditEntry> out;
  while (q.step() == SQLITE_ROW) out.push_back(entry_at(q));
  return out;
}

Result<AuditHead> read_audit_head(sqlite3* db) {
  Query q(db, "SELECT seq, hash FROM audit WHERE hash != '' ORDER BY seq DESC LIMIT 1");
  if (!q.ok()) return q.error("prepare audit head");
  AuditHead head;
  if (q.step() == SQLITE_ROW) head = {q.integer(0), q.text(1)};
  return head;
}

Result<AuditVerification> verify_audit_chain(sqlite3* db,
                                             const std::optional<AuditHead>& expected) {
  Query q(db, fmt::format("SELECT {} FROM audit ORDER BY seq", kColumns));
  if (!q.ok()) return q.error("prepare audit walk");
  AuditVerification v;
  auto broken = [&](int64_t seq, std::string problem) {
    if (!v.ok) return;
    v.ok = false;
    v.broken_seq = seq;
    v.problem = std::move(problem);
  };
  int64_t last_seq = 0;
  std::string last_hash;
  bool chained = false;  // seen a chained entry: every later one must be chained too
  while (q.step() == SQLITE_ROW) {
    AuditEntry e = entry_at(q);
    if (e.hash.empty() && !chained) {
      ++v.unchained;
      last_seq = e.seq;
      continue;
    }
    ++v.entries;
    if (e.hash.empty()) {
      broken(e.seq,
             fmt::format("entry {} has no hash: it was inserted or its hash was cleared", e.seq));
    } else if (chained && e.seq != last_seq + 1) {
      broken(e.seq,
             fmt::format("entries {}..{} are missing: they were deleted", last_seq + 1, e.seq - 1));
    } else if (chained && e.prev_hash != last_hash) {
      broken(e.seq, fmt::format("entry {} does not follow entry {}: entries were replaced, "
                                "inserted or moved",
                                e.seq, last_seq));
    } else if (audit_hash(e) != e.hash) {
      broken(e.seq, fmt::format("entry {} does not match its hash: it was edited", e.seq));
    }
    chained = true;
    last_seq = e.seq;
    last_hash = e.hash;
    v.head = {e.seq, e.hash};
  }
  if (expected && expected->seq > 0) {
    if (v.head.seq < expected->seq)
      broken(v.head.seq + 1,
             fmt::format("the log ends at entry {} but entry {} was written: the last {} entries "
                         "were deleted",
                         v.head.seq, expected->seq, expected->seq - v.head.seq));
  }
  if (expected && expected->seq > 0 && v.ok) {
    // The recorded head must still be in the chain, unchanged.
    Query at(db, "SELECT hash FROM audit WHERE seq = ?1");
    if (!at.ok()) return at.error("prepare audit head check");
    at.bind(1, expected->seq);
    if (at.step() != SQLITE_ROW || at.text(0) != expected->hash)
      broken(expected->seq, fmt::format("entry {} is not the one recorded as the head: the log "
                                        "was rewritten from there",
                                        expected->seq));
  }
  return v;
}

}  // namespace sqlite
}  // namespace gpucloud::store
