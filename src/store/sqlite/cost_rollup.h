// Cost rollups (docs/cost.md, "How reports are computed"): the ledger summed per UTC day of the
// end and per tenant and key (job, node, GPU model), and over all time, kept in the same
// transaction as the ledger rows so that reports need not scan the whole ledger.
#pragma once

#include <sqlite3.h>

#include <vector>

#include "store/state_store.h"

namespace gpucloud::store::sqlite {

/// The schema change that adds the rollup tables and fills them from the ledger already there.
extern const char* const kCostRollupMigration;

/// Adds ledger rows to the rollups. Must run inside the caller's write transaction, beside the
/// INSERT of the same rows into the ledger.
Status add_to_cost_rollups(sqlite3* db, const std::vector<LedgerEntry>& entries);

/// The report of StateStore::cost_report: rollups for the whole days inside the window, ledger
/// rows for the days at its edges, both in one read transaction.
Result<std::vector<CostLine>> read_cost_report(sqlite3* db, const CostQuery& query);

}  // namespace gpucloud::store::sqlite
