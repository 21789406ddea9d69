// The audit log's table in SQLite (docs/audit.md): appending entries to the hash chain, reading
// pages of it, and verifying it. Used by SqliteStore inside its transactions.
#pragma once

#include <sqlite3.h>

#include <optional>
#include <vector>

#include "store/state_store.h"

namespace gpucloud::store::sqlite {

/// The schema change that chains the log: role, source, tenant, outcome, prev_hash and hash
/// columns (entries written before it keep an empty hash and count as unchained).
extern const char* const kAuditChainMigration;

/// Appends entries after the newest one, each with seq = the newest + 1 and its hash. Must run
/// inside the caller's write transaction.
Status append_audit(sqlite3* db, const std::vector<AuditEntry>& entries);

/// Entries matching the query, newest first (limit at most 1,000).
Result<std::vector<AuditEntry>> read_audit_page(sqlite3* db, const AuditQuery& query);

/// The newest chained entry.
Result<AuditHead> read_audit_head(sqlite3* db);

/// Checks the whole chain (see StateStore::verify_audit).
Result<AuditVerification> verify_audit_chain(sqlite3* db, const std::optional<AuditHead>& expected);

}  // namespace gpucloud::store::sqlite
