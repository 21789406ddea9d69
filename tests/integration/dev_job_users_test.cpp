// Job users on `gpucloud dev` (docs/security.md, "Job code"): a job of one tenant runs as that
// tenant's user and reaches nothing of the platform's files or of another tenant's job.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "container_image.h"
#include "dev_cluster.h"
#include "net/crypto.h"

namespace gpucloud::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kAlice = "alice-token-0123456789";  // tenant vision: configured uid 61501
const std::string kBob = "bob-token-0123456789";      // tenant nlp: a uid of the agent's range
constexpr int kVisionUid = 61501;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

unsigned mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// The "Uid:" line of a process: real, effective, saved and filesystem uids.
std::string uid_line(int pid) {
  std::istringstream status(slurp("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Uid:", 0) == 0) return line;
  return "";
}

class DevJobUsers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0) return;
    dir_ = new TempDir();
    std::string config = dir_->path() + "/gpucloud.yaml";
    std::ofstream(config) << "tenants:\n"
                             "  - {name: vision, uid: " +
                                 std::to_string(kVisionUid) +
                                 "}\n"
                                 "  - {name: nlp}\n"
                                 "tokens:\n"
                                 "  - {name: alice, role: member, tenants: [vision], sha256: " +
                                 net::sha256_hex(kAlice) +
                                 "}\n"
                                 "  - {name: bob, role: member, tenants: [nlp], sha256: " +
                                 net::sha256_hex(kBob) + "}\n";
    // Outside /tmp: each job's own /tmp then hides nothing of the cluster's files, and every
    // attempt below fails on permissions alone.
    cluster_ = new DevCluster(
        {"--sim-gpus", "8xA100-80GB", "--config", config, "--job-uid-range", "61600-61699"}, {},
        "/var/tmp");
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
  }
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "job users need the agent to run as root";
  }
  CommandResult as(const std::string& token, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {GPUCLOUD_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, {{"GPUCLOUD_ADDR", cluster_->address()}, {"GPUCLOUD_TOKEN", token}},
                       cluster_->work_dir());
  }
  std::string submit(const std::string& token, const std::vector<std::string>& args) {
    std::vector<std::string> run = {"run"};
    run.insert(run.end(), args.begin(), args.end());
    auto r = as(token, run);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }
  // The uid the node gave a tenant, from its agent state (the newer of the two slots).
  static int tenant_uid(const std::string& tenant) {
    std::string node = cluster_->nodes_dir() + "/dev-0";
    json s = json::parse(slurp(node + "/agent-state.json.0"), nullptr, false);
    json s1 = json::parse(slurp(node + "/agent-state.json.1"), nullptr, false);
    if (s.is_discarded() || (!s1.is_discarded() && s1["generation"] > s["generation"])) s = s1;
    if (s.is_discarded() || !s.contains("tenant_uids")) return -1;
    return s["tenant_uids"].value(tenant, -1);
  }
  static std::string attempt_dir(const std::string& id) {
    return cluster_->nodes_dir() + "/dev-0/attempts/" + id + ".1.0";
  }
  static TempDir* dir_;
  static DevCluster* cluster_;
};
TempDir* DevJobUsers::dir_ = nullptr;
DevCluster* DevJobUsers::cluster_ = nullptr;

TEST_F(DevJobUsers, AJobReachesNothingOfThePlatformOrOfAnotherTenant) {
  // Bob's job: a secret in its env and in its /tmp, then it waits.
  std::string b = submit(kBob, {"--env", "SECRET=bob-secret-value", "--gpus", "1", "--", "sh", "-c",
                                "echo bob-tmp-value > /tmp/b-marker; echo ready; sleep 60"});
  std::string b_dir = attempt_dir(b);
  int b_pid = 0;
  ASSERT_TRUE(wait_until([&] {
    b_pid = std::atoi(slurp(b_dir + "/pid").c_str());
    return b_pid > 0 && cluster_->job(b)["state"] == "running" &&
           as(kBob, {"logs", b}).out.find("ready") != std::string::npos;
  })) << cluster_->job(b).dump();
  int nlp_uid = tenant_uid("nlp");
  EXPECT_GE(nlp_uid, 61600) << "nlp's uid comes from the range";
  EXPECT_LE(nlp_uid, 61699);
  std::string u = std::to_string(nlp_uid);
  EXPECT_EQ(uid_line(b_pid), "Uid:\t" + u + "\t" + u + "\t" + u + "\t" + u);
  EXPECT_NE(b_dir.rfind(cluster_->data_dir() + "/", 0), 0u) << "job dirs lie in the data dir";

  std::string data = cluster_->data_dir();
  std::string state = cluster_->nodes_dir() + "/dev-0/agent-state.json.0";
  if (!fs::exists(state)) state = cluster_->nodes_dir() + "/dev-0/agent-state.json.1";
  std::string script =
      "try() { if out=$(\"$@\" 2>&1); then echo \"LEAK $*: $out\"; "
      "else echo \"DENIED $*: $out\"; fi; }\n"
      "D=$GPUCLOUD_ATTEMPT_DIR\n"
      "try cat $D/../../../../../.gpucloud/admin.token\n"
      "try cat " +
      data +
      "/admin.token\n"
      "try ls " +
      data +
      "\n"
      "try cat " +
      data +
      "/state.db\n"
      "try cat " +
      data + "/logs/" + b +
      ".1.0.log\n"
      "try cat " +
      state +
      "\n"
      "try ls " +
      cluster_->nodes_dir() +
      "/dev-0/attempts\n"
      "try cat " +
      b_dir +
      "/launch.json\n"
      "try cat " +
      b_dir +
      "/output.log\n"
      "try ls " +
      b_dir +
      "\n"
      "try ls " +
      b_dir +
      "/job\n"
      "try kill -9 " +
      std::to_string(b_pid) +
      "\n"
      "try cat /proc/" +
      std::to_string(b_pid) +
      "/environ\n"
      "try cat /tmp/b-marker\n"
      "echo uid=$(id -u) umask=$(umask)\n"
      "grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status\n";
  std::string a = submit(kAlice, {"--", "sh", "-c", script});
  json done = cluster_->wait_done(a);
  EXPECT_EQ(done["state"], "succeeded") << done.dump();
  // The log may reach the server a little after the job is done: wait for its last line.
  std::string out;
  EXPECT_TRUE(wait_until([&] {
    out = as(kAlice, {"logs", a}).out;
    return out.find("NoNewPrivs:") != std::string::npos;
  })) << out;

  EXPECT_EQ(out.find("LEAK"), std::string::npos) << out;
  for (const std::string& secret :
       {std::string("bob-secret-value"), std::string("bob-tmp-value"), cluster_->token()}) {
    EXPECT_EQ(out.find(secret), std::string::npos) << secret << " leaked:\n" << out;
  }
  std::istringstream lines(out);
  std::string line;
  int denied = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("DENIED", 0) != 0) continue;
    ++denied;
    if (line.find("/tmp/b-marker") != std::string::npos) {
      EXPECT_NE(line.find("No such file"), std::string::npos) << "a /tmp of its own: " << line;
    } else if (line.find("kill") != std::string::npos) {
      EXPECT_NE(line.find("Operation not permitted"), std::string::npos) << line;
    } else {
      EXPECT_NE(line.find("Permission denied"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(denied, 14) << out;
  EXPECT_NE(out.find("uid=" + std::to_string(kVisionUid) + " umask=0077"), std::string::npos)
      << out;
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("CapBnd:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;

  // Bob's job ran on, untouched.
  EXPECT_EQ(cluster_->job(b)["state"], "running");
  EXPECT_EQ(::kill(b_pid, 0), 0);
  EXPECT_EQ(as(kBob, {"cancel", b}).exit_code, 0);
  cluster_->wait_done(b);
}

TEST_F(DevJobUsers, AContainerJobSeesNothingOfAnotherTenantsFilesOrProcesses) {
  bool missing = false;
  std::string problem = ensure_test_image(&missing);
  if (missing) GTEST_SKIP() << "container jobs need podman: " << problem;
  std::string b = submit(kBob, {"--", "sh", "-c", "echo bob-log-value; sleep 60"});
  std::string b_dir = attempt_dir(b);
  int b_pid = 0;
  ASSERT_TRUE(wait_until([&] {
    b_pid = std::atoi(slurp(b_dir + "/pid").c_str());
    return b_pid > 0 && as(kBob, {"logs", b}).out.find("bob-log-value") != std::string::npos;
  }));
  // Alice's container, as vision's user: bob's files are not in it, nor can it reach his
  // processes (its own PID namespace holds only its init and its command).
  std::string script = "cat " + b_dir +
                       "/output.log && echo LEAK-LOG || echo DENIED-LOG; "
                       "kill -0 " +
                       std::to_string(b_pid) +
                       " && echo LEAK-KILL || echo DENIED-KILL; "
                       "for p in /proc/[0-9]*; do echo pid-${p#/proc/}; done; id -u";
  std::string a = submit(kAlice, {"--image", kTestImage, "--", "sh", "-c", script});
  json job = cluster_->wait_done(a);
  EXPECT_EQ(job["state"], "succeeded") << job.dump();
  std::string out = as(kAlice, {"logs", a}).out;
  EXPECT_NE(out.find("DENIED-LOG"), std::string::npos) << out;
  EXPECT_NE(out.find("DENIED-KILL"), std::string::npos) << out;
  EXPECT_EQ(out.find("LEAK"), std::string::npos) << out;
  EXPECT_EQ(out.find("bob-log-value"), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(kVisionUid)), std::string::npos) << out;
  int pids = 0;
  for (size_t at = out.find("pid-"); at != std::string::npos; at = out.find("pid-", at + 1)) ++pids;
  EXPECT_LE(pids, 4) << "only the container's own processes: " << out;
  EXPECT_TRUE(::kill(b_pid, 0) == 0) << "bob's job runs on";
}

TEST_F(DevJobUsers, ThePlatformsFilesAreClosedToOtherUsers) {
  std::string id = submit(kBob, {"--", "sh", "-c", "echo hello"});
  cluster_->wait_done(id);
  ASSERT_TRUE(wait_until([&] { return as(kBob, {"logs", id}).out == "hello\n"; }));
  std::string data = cluster_->data_dir();
  EXPECT_EQ(mode_of(data), 0700u);
  for (const std::string& file : {data + "/admin.token", data + "/agent.token", data + "/state.db",
                                  data + "/address", data + "/logs/" + id + ".1.0.log"}) {
    EXPECT_EQ(mode_of(file), 0600u) << file;
  }
  EXPECT_EQ(mode_of(data + "/logs"), 0700u);
  std::string node = cluster_->nodes_dir() + "/dev-0";
  EXPECT_EQ(mode_of(cluster_->nodes_dir()), 0711u);
  EXPECT_EQ(mode_of(node), 0711u);
  EXPECT_EQ(mode_of(node + "/attempts"), 0711u);
  for (const char* slot : {".0", ".1"}) {
    std::string file = node + "/agent-state.json" + slot;
    if (fs::exists(file)) {
      EXPECT_EQ(mode_of(file), 0600u) << file;
    }
  }
  // The uid the node gave the tenant is kept in its state, for the next agent start.
  int nlp_uid = tenant_uid("nlp");
  EXPECT_GE(nlp_uid, 61600);
  EXPECT_LE(nlp_uid, 61699);
}

TEST_F(DevJobUsers, AWorkdirTheTenantsUserCannotEnterIsAClearFailure) {
  std::string closed = cluster_->work_dir() + "/closed";
  fs::create_directory(closed);
  ::chmod(closed.c_str(), 0700);
  std::string id = submit(kAlice, {"--workdir", closed, "--", "true"});
  json j = cluster_->wait_done(id);
  EXPECT_EQ(j["state"], "failed") << j.dump();
  EXPECT_NE(j.dump().find("is not accessible to the job's user (uid 61501"), std::string::npos)
      << j.dump();
}

TEST(DevJobDirs, UnderAClosedParentTheyGoToVarTmp) {
  if (::geteuid() != 0) GTEST_SKIP() << "job users need the agent to run as root";
  TempDir closed;  // like root's home: other users cannot pass
  ::chmod(closed.path().c_str(), 0700);
  std::string job_dirs;
  {
    DevCluster c({"--sim-gpus", "1xA100-80GB"}, {}, closed.path());
    std::string id = c.submit({"--workdir", "/", "--", "sh", "-c", "echo $GPUCLOUD_ATTEMPT_DIR"});
    json j = c.wait_done(id);
    EXPECT_EQ(j["state"], "succeeded") << j.dump();
    std::string dir = c.cli({"logs", id}).out;
    EXPECT_EQ(dir.rfind("/var/tmp/gpucloud-dev-", 0), 0u) << dir;
    job_dirs = dir.substr(0, dir.find("/dev-0/"));
    EXPECT_EQ(mode_of(job_dirs), 0711u);
    EXPECT_EQ(fs::exists(c.nodes_dir()), false);
  }
  std::error_code ec;
  if (job_dirs.rfind("/var/tmp/gpucloud-dev-", 0) == 0) fs::remove_all(job_dirs, ec);
}

TEST_F(DevJobUsers, TheConfigRefusesUid0AndASharedUid) {
  struct Case {
    std::string tenants, error;
  };
  for (const Case& c : std::vector<Case>{
           {"  - {name: ops, uid: 0}\n",
            "tenants[0].uid: 0 is root; to let this tenant's jobs "
            "run as root, set allow_root: true"},
           {"  - {name: a, uid: 7000}\n  - {name: b, uid: 7000}\n",
            "tenants[1].uid: 7000 is also tenant a's"},
           {"  - {name: a, uid: 7000, allow_root: true}\n", "both uid and allow_root are set"}}) {
    TempDir dir;
    std::string config = dir.path() + "/bad.yaml";
    std::ofstream(config) << "tenants:\n" + c.tenants;
    auto r = run_command({GPUCLOUD_BINARY, "dev", "--listen", "127.0.0.1:0", "--data-dir",
                          dir.path() + "/.gpucloud", "--config", config},
                         {}, dir.path(), 30);
    EXPECT_NE(r.exit_code, 0) << c.tenants;
    EXPECT_NE((r.out + r.err).find(c.error), std::string::npos) << r.out << r.err;
  }
}

}  // namespace
}  // namespace gpucloud::testing
