#include "exec/container/podman_args.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <string>

namespace gpucloud::exec {
namespace {

LaunchSpec container_spec() {
  LaunchSpec spec;
  spec.key = "job1.2.0";
  spec.argv = {"python3", "train.py"};
  spec.env = {{"WANDB_API_KEY", "secret-value"}, {"CUDA_VISIBLE_DEVICES", "0"}};
  spec.cpus = {2, 3};
  spec.memory_limit_mib = 2048;
  spec.uid = 200123;
  spec.gid = 200124;
  ContainerLaunch c;
  c.image = "localhost/train:1";
  c.entrypoint = {"/usr/bin/env", "--"};
  c.mounts = {{"/data", "/in", true}, {"scratch", "/scratch", false}};
  c.shm_size_mib = 1024;
  c.pull = "never";
  c.devices = {"/state/devices/nvidia3:/dev/nvidia3"};
  c.shared_paths = {"/ckpt/job1"};
  spec.container = c;
  return spec;
}

// The value after the first occurrence of flag, or "".
std::string after(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

std::vector<std::string> all_after(const std::vector<std::string>& argv, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag) out.push_back(argv[i + 1]);
  return out;
}

TEST(PodmanArgs, TheContainerRunsAsTheJobsUserWithItsLimitsAndNothingSecretOnTheCommandLine) {
  ContainerRuntime rt{"/usr/bin/podman", "/usr/sbin/runc", "test"};
  auto argv = podman_run_args(rt, container_spec(), "/a/job1.2.0", "/a/job1.2.0/container.env");
  EXPECT_EQ(argv[0], "/usr/bin/podman");
  EXPECT_EQ(argv[1], "run");
  EXPECT_EQ(after(argv, "--name"), "gpucloud-job1.2.0");
  EXPECT_EQ(after(argv, "--label"), "gpucloud.key=job1.2.0");
  EXPECT_EQ(after(argv, "--runtime"), "/usr/sbin/runc");
  EXPECT_EQ(after(argv, "--user"), "200123:200124");
  EXPECT_EQ(after(argv, "--cap-drop"), "all");
  EXPECT_EQ(after(argv, "--security-opt"), "no-new-privileges");
  EXPECT_EQ(after(argv, "--cpuset-cpus"), "2,3");
  EXPECT_EQ(after(argv, "--memory"), "2048m");
  EXPECT_EQ(after(argv, "--shm-size"), "1024m");
  EXPECT_EQ(after(argv, "--pull"), "never");
  EXPECT_EQ(after(argv, "--env-file"), "/a/job1.2.0/container.env");
  EXPECT_EQ(after(argv, "--entrypoint"), R"(["/usr/bin/env","--"])");
  EXPECT_EQ(all_after(argv, "--device"),
            std::vector<std::string>{"/state/devices/nvidia3:/dev/nvidia3"});
  EXPECT_EQ(
      all_after(argv, "--mount"),
      (std::vector<std::string>{"type=bind,source=/a/job1.2.0,destination=/a/job1.2.0,ro=true",
                                "type=bind,source=/a/job1.2.0/job,destination=/a/job1.2.0/job",
                                "type=bind,source=/ckpt/job1,destination=/ckpt/job1",
                                "type=bind,source=/data,destination=/in,ro=true",
                                "type=volume,source=scratch,destination=/scratch"}));
  // The image, then the command, last.
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[argv.size() - 3], "localhost/train:1");
  EXPECT_EQ(argv.back(), "train.py");
  for (const auto& arg : argv) EXPECT_EQ(arg.find("secret-value"), std::string::npos) << arg;
  // No workdir given: the image's WORKDIR.
  EXPECT_EQ(after(argv, "--workdir"), "");
}

TEST(PodmanArgs, UlimitsStayWithinTheHardLimitsPodmanWouldExceed) {
  ContainerRuntime rt{"/usr/bin/podman", "/usr/sbin/runc", "test"};
  auto argv = podman_run_args(rt, container_spec(), "/a", "/a/container.env");
  auto limits = all_after(argv, "--ulimit");
  ASSERT_EQ(limits.size(), 2u);
  rlimit nofile{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &nofile), 0);
  std::string hard = nofile.rlim_max == RLIM_INFINITY ? "-1" : std::to_string(nofile.rlim_max);
  EXPECT_EQ(limits[0],
            "nofile=" + std::string(nofile.rlim_max < 1024 ? hard : "1024") + ":" + hard);
  EXPECT_EQ(limits[1].rfind("nproc=", 0), 0u);
  std::string nproc = limits[1].substr(6);
  long soft_n = std::stol(nproc.substr(0, nproc.find(':')));
  long hard_n = std::stol(nproc.substr(nproc.find(':') + 1));
  EXPECT_LE(soft_n, hard_n);
  EXPECT_LE(hard_n, 32768);
}

TEST(PodmanArgs, AnInitIsPid1WhereTheNodeHasOne) {
  ContainerRuntime rt{"/usr/bin/podman", "/usr/sbin/runc", "test"};
  auto without = podman_run_args(rt, container_spec(), "/a", "/a/container.env");
  EXPECT_EQ(std::count(without.begin(), without.end(), "--init"), 0);
  rt.init = "/usr/libexec/podman/catatonit";
  auto with = podman_run_args(rt, container_spec(), "/a", "/a/container.env");
  EXPECT_EQ(std::count(with.begin(), with.end(), "--init"), 1);
  EXPECT_EQ(after(with, "--init-path"), "/usr/libexec/podman/catatonit");
  EXPECT_EQ(with[with.size() - 3], "localhost/train:1") << "before the image";
}

TEST(PodmanArgs, ContainerNamesKeepOnlyWhatPodmanAccepts) {
  EXPECT_EQ(container_name_for("01ab.1.0"), "gpucloud-01ab.1.0");
  EXPECT_EQ(container_name_for("a/b c"), "gpucloud-a-b-c");
}

}  // namespace
}  // namespace gpucloud::exec
