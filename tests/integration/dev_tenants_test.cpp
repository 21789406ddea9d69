// Tenants and tokens from --config: members see and act only for their own tenants.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <thread>

#include "dev_cluster.h"
#include "net/crypto.h"

namespace gpucloud::testing {
namespace {

using nlohmann::json;

const std::string kAlice = "alice-token-0123456789";
const std::string kBob = "bob-token-0123456789";
const std::string kDave = "dave-token-0123456789";

std::string config_text(bool with_dave) {
  std::string text =
      "tenants:\n"
      "  - {name: vision, weight: 2, cohort: research, quota: {A100: 4}, borrowing_limit: {A100: "
      "2}}\n"
      "  - {name: nlp, cohort: research, quota: {A100: 4}}\n"
      "tokens:\n"
      "  - {name: alice, role: member, tenants: [vision], sha256: " +
      net::sha256_hex(kAlice) +
      "}\n"
      "  - {name: bob, role: member, tenants: [nlp], sha256: " +
      net::sha256_hex(kBob) + "}\n";
  if (with_dave)
    text +=
        "  - {name: dave, role: member, tenants: [nlp], sha256: " + net::sha256_hex(kDave) + "}\n";
  return text;
}

class DevTenants : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    config_ = dir_->path() + "/gpucloud.yaml";
    std::ofstream(config_) << config_text(false);
    cluster_ = new DevCluster({"--sim-gpus", "8xA100-80GB", "--config", config_});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
  }
  CommandResult as(const std::string& token, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {GPUCLOUD_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, {{"GPUCLOUD_ADDR", cluster_->address()}, {"GPUCLOUD_TOKEN", token}},
                       cluster_->work_dir());
  }
  static TempDir* dir_;
  static std::string config_;
  static DevCluster* cluster_;
};
TempDir* DevTenants::dir_ = nullptr;
std::string DevTenants::config_;
DevCluster* DevTenants::cluster_ = nullptr;

TEST_F(DevTenants, AMemberWorksOnlyInItsOwnTenants) {
  auto r = as(kAlice, {"run", "--gpus", "1", "--", "sleep", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(cluster_->job(id)["tenant"], "vision");  // a member's first tenant by default
  ASSERT_TRUE(wait_until([&] { return cluster_->job(id)["state"] == "running"; }));
  // Bob sees nothing of it: not in ps, not by id, cannot cancel it.
  EXPECT_EQ(as(kBob, {"ps", "--all", "--json"}).out.find(id), std::string::npos);
  auto show = as(kBob, {"show", id});
  EXPECT_EQ(show.exit_code, 1);
  EXPECT_NE(show.err.find("no job"), std::string::npos) << show.err;
  auto cancel = as(kBob, {"cancel", id});
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_NE(cancel.err.find("no job"), std::string::npos) << cancel.err;
  auto nodes = json::parse(as(kBob, {"nodes", "--json"}).out);
  EXPECT_EQ(nodes.dump().find(id), std::string::npos) << "bob sees alice's job on a GPU";
  // Nor can he submit for her tenant.
  auto foreign = as(kBob, {"run", "--tenant", "vision", "--", "true"});
  EXPECT_EQ(foreign.exit_code, 1);
  EXPECT_NE(foreign.err.find("may not submit jobs for tenant 'vision'"), std::string::npos)
      << foreign.err;
  // Alice can.
  EXPECT_EQ(as(kAlice, {"cancel", id}).exit_code, 0);
}

TEST_F(DevTenants, TenantsShowsQuotaAndUseToThoseWhoMaySeeThem) {
  auto r = as(kAlice, {"run", "--gpus", "2", "--", "sleep", "30"});
  std::string id = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(wait_until([&] { return cluster_->job(id)["state"] == "running"; }));
  auto mine = json::parse(as(kAlice, {"tenants", "--json"}).out);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0]["name"], "vision");
  EXPECT_EQ(mine[0]["quota"]["A100"], 4);
  EXPECT_EQ(mine[0]["borrowing_limit"]["A100"], 2);
  EXPECT_EQ(mine[0]["gpus_in_use"]["A100"], 2.0);
  EXPECT_EQ(mine[0]["running_jobs"], 1);
  auto all = json::parse(cluster_->cli({"tenants", "--json"}).out);  // the admin
  EXPECT_EQ(all.size(), 3u);                                         // default, vision, nlp
  EXPECT_EQ(as(kAlice, {"cancel", id}).exit_code, 0);
}

TEST_F(DevTenants, ConfigIsReloadedOnSighup) {
  EXPECT_EQ(as(kDave, {"ps"}).exit_code, 1);  // not known yet
  std::ofstream(config_) << config_text(true);
  kill(cluster_->pid(), SIGHUP);
  EXPECT_TRUE(wait_until([&] { return as(kDave, {"ps"}).exit_code == 0; }));
  // A broken file is refused (the server says so in its log) and the previous config stays.
  std::ofstream(config_) << "tokens:\n  - {name: x, role: root, sha256: abc}\n";
  kill(cluster_->pid(), SIGHUP);
  EXPECT_TRUE(wait_until([&] {
    std::ifstream log(cluster_->work_dir() + "/dev.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    return text.find("config not reloaded") != std::string::npos;
  }));
  EXPECT_EQ(as(kDave, {"ps"}).exit_code, 0);
  std::ofstream(config_) << config_text(false);
}

TEST(DevConfig, ABadConfigFileIsRefusedAtStartWithItsField) {
  TempDir dir;
  std::string path = dir.path() + "/bad.yaml";
  std::ofstream(path)
      << "tenants:\n  - {name: vision}\ntokens:\n  - {name: eve, role: root, sha256: "
      << net::sha256_hex("x") << ", tenants: [vision]}\n";
  auto r = run_command({GPUCLOUD_BINARY, "dev", "--listen", "127.0.0.1:0", "--data-dir",
                        dir.path() + "/d", "--config", path},
                       {}, "", 10);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE((r.out + r.err).find("tokens[0].role: 'root' is not admin or member"),
            std::string::npos)
      << r.out << r.err;
}

}  // namespace
}  // namespace gpucloud::testing
