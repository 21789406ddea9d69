// The audit log through the API and CLI (docs/audit.md): requests and the platform's decisions
// are recorded with who, from where and for which tenant; a member reads only its tenants'
// entries; `gpucloud audit verify` passes on the untouched log and names the entry edited
// behind the server's back.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "dev_cluster.h"
#include "member_cluster.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

class DevAudit : public MemberCluster {
 protected:
  json entries(const CommandResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::array();
  }
};

TEST_F(DevAudit, RequestsAndDecisionsAreRecordedAndAMemberSeesOnlyItsTenants) {
  auto mine = as(kAlice, {"run", "--gpus", "1", "--wait", "--", "true"});
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  std::string other = cluster_->submit({"--tenant", "nlp", "--gpus", "1", "--", "sleep", "30"});
  ASSERT_EQ(cluster_->cli({"cancel", other}).exit_code, 0);
  cluster_->wait_done(other);

  json all = entries(cluster_->cli({"audit", "--json"}));
  auto find = [&](const std::string& action, const std::string& tenant) -> json {
    for (const auto& e : all)
      if (e["action"] == action && e["tenant"] == tenant) return e;
    return nullptr;
  };
  json submit = find("job.submit", "vision");
  ASSERT_FALSE(submit.is_null()) << all.dump(2);
  EXPECT_EQ(submit["actor"], "alice");
  EXPECT_EQ(submit["role"], "member");
  EXPECT_EQ(submit["source"], "127.0.0.1");
  json cancel = find("job.cancel", "nlp");
  ASSERT_FALSE(cancel.is_null()) << all.dump(2);
  EXPECT_EQ(cancel["actor"], "admin");
  json ended = find("job.end", "vision");
  ASSERT_FALSE(ended.is_null()) << all.dump(2);
  EXPECT_EQ(ended["role"], "system");
  for (const auto& e : all) EXPECT_EQ(e.dump().find(kAlice), std::string::npos);

  // alice reads her tenant's entries only, and another tenant's not at all.
  json hers = entries(as(kAlice, {"audit", "--json"}));
  ASSERT_FALSE(hers.empty());
  for (const auto& e : hers) EXPECT_EQ(e["tenant"], "vision") << e.dump();
  EXPECT_TRUE(entries(as(kAlice, {"audit", "--tenant", "nlp", "--json"})).empty());
  auto verify = as(kAlice, {"audit", "verify"});
  EXPECT_EQ(verify.exit_code, 1);
  EXPECT_NE(verify.err.find("needs the admin token"), std::string::npos) << verify.err;

  // Filters, and bad ones.
  json cancels = entries(cluster_->cli({"audit", "--action", "job.cancel", "--json"}));
  ASSERT_EQ(cancels.size(), 1u) << cancels.dump();
  auto bad = cluster_->cli({"audit", "--action", "job;drop"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("action: 'job;drop' is not an action"), std::string::npos) << bad.err;
  auto since = cluster_->cli({"audit", "--since", "tomorrow"});
  EXPECT_EQ(since.exit_code, 2);
}

TEST_F(DevAudit, RefusedChangesAreRecordedWithWhyAndAFloodIsCapped) {
  std::string other = cluster_->submit({"--tenant", "nlp", "--gpus", "1", "--", "sleep", "30"});
  auto denied = as(kAlice, {"run", "--tenant", "nlp", "--gpus", "1", "--", "true"});
  ASSERT_NE(denied.exit_code, 0);
  auto hidden = as(kAlice, {"cancel", other});
  ASSERT_NE(hidden.exit_code, 0);

  auto refused = [&] {
    return entries(cluster_->cli({"audit", "--action", "request.refused", "--json"}));
  };
  json seen;
  ASSERT_TRUE(wait_until([&] { return (seen = refused()).size() >= 2; }, std::chrono::seconds(5)))
      << seen.dump(2);
  json submit = seen[1];  // newest first
  EXPECT_EQ(submit["actor"], "alice");
  EXPECT_EQ(submit["role"], "member");
  EXPECT_EQ(submit["source"], "127.0.0.1");
  EXPECT_EQ(submit["object"], "POST /v1/jobs");
  EXPECT_EQ(submit["outcome"], "refused (403)");
  EXPECT_NE(submit["detail"].get<std::string>().find("nlp"), std::string::npos) << submit.dump();
  EXPECT_EQ(seen[0]["outcome"], "refused (404)") << seen[0].dump();
  // alice does not see them (they belong to no tenant); nor does she see the other job's id.
  EXPECT_TRUE(entries(as(kAlice, {"audit", "--action", "request.*", "--json"})).empty());

  // A loop of bad requests does not fill the log: 30 a minute per token are kept.
  for (int i = 0; i < 40; ++i) as(kAlice, {"cancel", "no-such-job"});
  ASSERT_TRUE(wait_until([&] { return refused().size() >= 30; }, std::chrono::seconds(5)));
  EXPECT_EQ(refused().size(), 30u);
  EXPECT_EQ(cluster_->cli({"audit", "verify"}).exit_code, 0);
}

TEST_F(DevAudit, VerifyPassesOnTheLogAndNamesAnEntryEditedInTheDatabase) {
  std::string job = cluster_->submit({"--tenant", "vision", "--gpus", "1", "--", "true"});
  cluster_->wait_done(job);
  auto ok = cluster_->cli({"audit", "verify"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("ok: "), std::string::npos) << ok.out;

  // Someone with the database file rewrites who submitted the job.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((cluster_->data_dir() + "/state.db").c_str(), &db), SQLITE_OK);
  std::string sql =
      "UPDATE audit SET actor = 'nobody' WHERE action = 'job.submit' AND object = '" + job + "'";
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  json submit = entries(cluster_->cli({"audit", "--action", "job.submit", "--json"}))[0];

  auto broken = cluster_->cli({"audit", "verify"});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.err.find("the audit log was tampered with: entry " +
                            std::to_string(submit["seq"].get<int>()) +
                            " does not match its hash: it was edited"),
            std::string::npos)
      << broken.err;
}

}  // namespace
}  // namespace gpucloud::testing
