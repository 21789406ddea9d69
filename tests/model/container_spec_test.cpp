#include "model/container_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "model/agent_protocol.h"
#include "model/job_spec.h"
#include "model/yaml_json.h"

namespace gpucloud {
namespace {

using json = nlohmann::json;

// The error of a spec with an image plus `extra`, which must be an invalid argument.
std::string rejected(json extra) {
  json j = {{"command", {"true"}}, {"image", "localhost/bb:1"}};
  j.update(extra);
  auto r = job_spec_from_json(j);
  EXPECT_FALSE(r.ok()) << j.dump() << " was accepted";
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  return r.error().message;
}

TEST(ContainerSpec, AYamlJobFileWithEveryContainerFieldReadsAndRoundTrips) {
  auto doc = yaml_to_json(R"(
image: registry.example.com/team/train:1.2
entrypoint: [/usr/bin/env, --]
command: [python3, train.py]
gpus: 1
mounts:
  - {source: /data/imagenet, target: /data, read_only: true}
  - source: scratch
    target: /scratch
shm_size: 8GiB
pull_policy: never
registry_auth: team-registry
)",
                          "job.yaml");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  auto spec = job_spec_from_json(*doc);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  const ContainerSpec& c = spec->container;
  EXPECT_EQ(c.image, "registry.example.com/team/train:1.2");
  EXPECT_EQ(c.entrypoint, (std::vector<std::string>{"/usr/bin/env", "--"}));
  ASSERT_EQ(c.mounts.size(), 2u);
  EXPECT_EQ(c.mounts[0], (ContainerMount{"/data/imagenet", "/data", true}));
  EXPECT_EQ(c.mounts[1], (ContainerMount{"scratch", "/scratch", false}));
  EXPECT_EQ(c.shm_size_mib, 8192);
  EXPECT_EQ(c.pull_policy, PullPolicy::kNever);
  EXPECT_EQ(c.registry_auth, "team-registry");
  auto again = job_spec_from_json(job_spec_to_json(*spec));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->container, c);
  // The agent gets the same container through its allocation.
  Allocation a;
  a.key = "j.1.0";
  a.job_id = "j";
  a.command = {"true"};
  a.container = c;
  auto decoded = allocation_from_json(allocation_to_json(a));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->container, c);
}

TEST(ContainerSpec, WithoutAnImageAJobIsAProcessAsBefore) {
  auto spec = job_spec_from_json({{"command", {"sleep", "1"}}});
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->container.image.empty());
  EXPECT_FALSE(job_spec_to_json(*spec).contains("image"));
  auto r = job_spec_from_json({{"command", {"true"}}, {"shm_size", "1GiB"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "shm_size: is set but the job has no image; add image (or --image)");
}

TEST(ContainerSpec, AContainerJobMayLeaveItsCommandToTheImage) {
  auto spec = job_spec_from_json({{"image", "registry.example.com/team/train:1.2"}});
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_TRUE(spec->command.empty());
  EXPECT_EQ(spec->name, "train");
  EXPECT_FALSE(job_spec_from_json({{"gpus", 1}}).ok());  // a process still needs one
}

TEST(ContainerSpec, BadValuesAreRefusedNamingTheFieldAndTheFix) {
  EXPECT_EQ(rejected({{"mounts", {{{"source", "/d"}, {"target", "data"}}}}}),
            "mounts[0].target: 'data' is not an absolute path; give the path inside the container "
            "as /path");
  EXPECT_EQ(rejected({{"mounts", {{{"source", "/d/../etc"}, {"target", "/x"}}}}}),
            "mounts[0].source: '/d/../etc' contains '..'; give the path without it");
  EXPECT_EQ(
      rejected({{"mounts", {{{"source", "a/b"}, {"target", "/x"}}}}})
          .rfind("mounts[0].source: 'a/b' is neither an absolute host path nor a volume name", 0),
      0u);
  EXPECT_NE(rejected({{"mounts", {{{"source", "v"}, {"target", "/proc/x"}}}}}).find("reserved"),
            std::string::npos);
  EXPECT_EQ(rejected({{"pull_policy", "sometimes"}}),
            "pull_policy: 'sometimes' is not one of: always, if-not-present, never");
  EXPECT_EQ(rejected({{"shm_size", "65GiB"}}), "shm_size: 65GiB is outside 0..64GiB");
  EXPECT_EQ(rejected({{"shm_size", 1e12}}).rfind("shm_size: 1000000000000.0 MiB is outside", 0),
            0u);
  EXPECT_NE(rejected({{"registry_auth", "../secrets"}}).find("not the plain name"),
            std::string::npos);
  EXPECT_NE(rejected({{"image", "-v /:/host"}}).find("is not an image reference"),
            std::string::npos);
  EXPECT_NE(rejected({{"entrypoint", "sh -c"}}).find("expected a list of strings"),
            std::string::npos);
  json many = json::array();
  for (int i = 0; i < 33; ++i)
    many.push_back({{"source", "v"}, {"target", "/m" + std::to_string(i)}});
  EXPECT_EQ(rejected({{"mounts", many}}), "mounts: has 33 mounts; the maximum is 32");
}

TEST(ContainerSpec, MountFlagsReadSourceTargetAndMode) {
  auto m = parse_mount_flag("/data/imagenet:/data:ro");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (ContainerMount{"/data/imagenet", "/data", true}));
  EXPECT_EQ(*parse_mount_flag("cache:/cache"), (ContainerMount{"cache", "/cache", false}));
  EXPECT_FALSE(parse_mount_flag("/data").ok());
  EXPECT_FALSE(parse_mount_flag("/a:/b:rx").ok());
}

}  // namespace
}  // namespace gpucloud
