// The hash-chained audit log (docs/audit.md): entries are chained as they are written, and
// `verify` finds each kind of tampering done to the SQLite rows directly.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "store/state_store.h"
#include "store_test_files.h"

namespace gpucloud::store {
namespace {

class AuditChain : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("state.db");
    auto store = open_sqlite_store(path_);
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(*store);
    // Six entries over three commits.
    for (int batch = 0; batch < 3; ++batch) {
      WriteBatch b;
      for (int i = 0; i < 2; ++i)
        b.audit.push_back({1000 + batch * 10 + i, "alice", "job.submit",
                           "job-" + std::to_string(batch * 2 + i), "tenant vision", "member",
                           "10.0.0.7", batch == 2 ? "nlp" : "vision"});
      ASSERT_TRUE(store_->commit(b).ok());
    }
  }
  void TearDown() override { store_.reset(); }
  // Tampers through a connection of its own, as someone with the file would.
  void tamper(const std::string& sql) { test_files::raw_sql(path_, sql); }
  AuditVerification verify(const std::optional<AuditHead>& head = std::nullopt) {
    auto v = store_->verify_audit(head);
    EXPECT_TRUE(v.ok()) << v.error().message;
    return v.ok() ? *v : AuditVerification{};
  }

  test_files::TempDir dir_;
  std::string path_;
  std::unique_ptr<StateStore> store_;
};

TEST_F(AuditChain, AnUntouchedLogVerifiesAndEachEntryCarriesThePreviousHash) {
  AuditVerification v = verify();
  EXPECT_TRUE(v.ok) << v.problem;
  EXPECT_EQ(v.entries, 6);
  EXPECT_EQ(v.head.seq, 6);
  auto page = store_->audit_page({});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 6u);
  EXPECT_EQ((*page)[0].seq, 6);  // newest first
  EXPECT_EQ((*page)[0].prev_hash, (*page)[1].hash);
  EXPECT_EQ((*page)[5].prev_hash, "");
  EXPECT_EQ((*page)[0].hash, audit_hash((*page)[0]));
  EXPECT_EQ((*page)[0].source, "10.0.0.7");
  EXPECT_EQ((*page)[0].outcome, "ok");
  auto head = store_->audit_head();
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->seq, 6);
  EXPECT_EQ(head->hash, (*page)[0].hash);
}

TEST_F(AuditChain, AnEditedEntryIsNamed) {
  tamper("UPDATE audit SET detail = 'tenant nlp' WHERE seq = 3");
  AuditVerification v = verify();
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.broken_seq, 3);
  EXPECT_NE(v.problem.find("entry 3 does not match its hash: it was edited"), std::string::npos)
      << v.problem;
}

TEST_F(AuditChain, AnEditWhoseHashWasRecomputedBreaksTheNextLink) {
  auto page = store_->audit_page({});
  ASSERT_TRUE(page.ok());
  AuditEntry forged = (*page)[3];  // seq 3
  ASSERT_EQ(forged.seq, 3);
  forged.actor = "mallory";
  tamper("UPDATE audit SET actor = 'mallory', hash = '" + audit_hash(forged) + "' WHERE seq = 3");
  AuditVerification v = verify();
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.broken_seq, 4);
  EXPECT_NE(v.problem.find("entry 4 does not follow entry 3"), std::string::npos) << v.problem;
}

TEST_F(AuditChain, ADeletedEntryIsNamed) {
  tamper("DELETE FROM audit WHERE seq = 2");
  AuditVerification v = verify();
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.broken_seq, 3);
  EXPECT_NE(v.problem.find("entries 2..2 are missing"), std::string::npos) << v.problem;
}

TEST_F(AuditChain, ReorderedEntriesAreFound) {
  // Swap the contents (and chain fields) of entries 4 and 5, keeping their places.
  tamper(
      "UPDATE audit SET seq = -4 WHERE seq = 4; UPDATE audit SET seq = 4 WHERE seq = 5; "
      "UPDATE audit SET seq = 5 WHERE seq = -4;");
  AuditVerification v = verify();
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.broken_seq, 4);
}

TEST_F(AuditChain, ATruncatedTailIsFoundAgainstARecordedHead) {
  auto head = store_->audit_head();
  ASSERT_TRUE(head.ok());
  tamper("DELETE FROM audit WHERE seq >= 5");
  EXPECT_TRUE(verify().ok) << "without a recorded head a cut tail looks like a shorter log";
  AuditVerification v = verify(*head);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.problem.find("the log ends at entry 4 but entry 6 was written"), std::string::npos)
      << v.problem;
}

TEST_F(AuditChain, ARewrittenLogIsFoundAgainstARecordedHead) {
  auto head = store_->audit_head();
  ASSERT_TRUE(head.ok());
  tamper("DELETE FROM audit WHERE seq = 6");
  // New entries take seq 6 again with a valid chain: only the recorded head shows it.
  WriteBatch b;
  b.audit.push_back({5000, "mallory", "job.cancel", "job-0", ""});
  ASSERT_TRUE(store_->commit(b).ok());
  EXPECT_TRUE(verify().ok);
  AuditVerification v = verify(*head);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.broken_seq, 6);
  EXPECT_NE(v.problem.find("not the one recorded as the head"), std::string::npos) << v.problem;
}

TEST_F(AuditChain, PagesFilterByTimeTenantAndActionAndGoBackBySeq) {
  AuditQuery q;
  q.tenants = {"nlp"};
  auto nlp = store_->audit_page(q);
  ASSERT_TRUE(nlp.ok());
  EXPECT_EQ(nlp->size(), 2u);
  q = {};
  q.since = 1010;
  q.limit = 3;
  auto recent = store_->audit_page(q);
  ASSERT_TRUE(recent.ok());
  ASSERT_EQ(recent->size(), 3u);
  q.before_seq = (*recent)[2].seq;
  auto older = store_->audit_page(q);
  ASSERT_TRUE(older.ok());
  ASSERT_EQ(older->size(), 1u);
  EXPECT_EQ((*older)[0].seq, 3);
  q = {};
  q.action = "job.*";
  EXPECT_EQ(store_->audit_page(q)->size(), 6u);
  q.action = "node.*";
  EXPECT_EQ(store_->audit_page(q)->size(), 0u);
  q.action = "job.submit";
  EXPECT_EQ(store_->audit_page(q)->size(), 6u);
}

}  // namespace
}  // namespace gpucloud::store
