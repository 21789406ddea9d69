// Parsing of simulated-GPU specs.
#include "gpu/simulated/sim_spec.h"

#include <gtest/gtest.h>

namespace gpucloud::gpu {
namespace {

std::vector<SimGpuGroup> parse_ok(std::string_view spec) {
  auto groups = parse_sim_spec(spec);
  EXPECT_TRUE(groups.ok()) << spec << ": " << groups.error().message;
  return groups.ok() ? *groups : std::vector<SimGpuGroup>{};
}

TEST(SimSpec, ParsesOneKnownModel) {
  auto groups = parse_ok("8xA100-80GB");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].count, 8);
  EXPECT_EQ(groups[0].product_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(groups[0].model, "A100");
  EXPECT_EQ(groups[0].memory_mib, 81920);
  EXPECT_EQ(groups[0].links, SimLinks::kBoardOf8);
}

TEST(SimSpec, ParsesSeveralParts) {
  auto groups = parse_ok("2xH100-80GB,2xL4");
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].count, 2);
  EXPECT_EQ(groups[0].product_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(groups[0].memory_mib, 81559);
  EXPECT_EQ(groups[1].count, 2);
  EXPECT_EQ(groups[1].product_name, "NVIDIA L4");
  EXPECT_EQ(groups[1].memory_mib, 23034);
  EXPECT_EQ(groups[1].links, SimLinks::kNone);
}

TEST(SimSpec, MigDevicesPerGpuOfAPart) {
  auto groups = parse_ok("2xA100-80GB:mig=3g.40gb+2g.20gb+1g.10gb,1xL4");
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].mig_profiles, (std::vector<std::string>{"3g.40gb", "2g.20gb", "1g.10gb"}));
  EXPECT_TRUE(groups[1].mig_profiles.empty());
  EXPECT_EQ(format_sim_spec(groups), "2xA100-80GB:mig=3g.40gb+2g.20gb+1g.10gb,1xL4");
  EXPECT_EQ(mig_profile_memory_mib("1g.10gb"), 10240);
  EXPECT_EQ(mig_profile_slices("7g.80gb"), 7);
  for (const char* bad :
       {"", "g.10gb", "8g.80gb", "0g.5gb", "1g.gb", "1g.1000gb", "1x.10gb", "1g.10GB", "1g.10gbx"})
    EXPECT_EQ(mig_profile_slices(bad), -1) << bad;
  for (const auto& [spec, what] : std::vector<std::pair<std::string, std::string>>{
           {"1xA100:mig=4g.40gb+4g.40gb", "take 8 compute slices; a GPU has 7"},
           {"1xA100:mig=", "after ':' write mig=PROFILE+PROFILE"},
           {"1xA100:mps", "after ':' write mig=PROFILE+PROFILE"},
           {"1xA100:mig=3g.40gb+", "MIG profile \"\" is not of the form 1g.10gb"},
           {"1xA100:mig=big", "MIG profile \"big\" is not of the form"},
           {"10xA100:mig=1g.10gb+1g.10gb+1g.10gb+1g.10gb+1g.10gb+1g.10gb+1g.10gb",
            "70 GPUs and MIG devices in all, but a machine offers at most 64"}}) {
    auto groups = parse_sim_spec(spec);
    ASSERT_FALSE(groups.ok()) << spec;
    EXPECT_NE(groups.error().message.find(what), std::string::npos) << groups.error().message;
  }
}

TEST(SimSpec, KnownModels) {
  struct Case {
    const char* spec;
    const char* product;
    const char* model;
    int64_t memory_mib;
  };
  for (const auto& c : std::vector<Case>{
           {"T4", "Tesla T4", "T4", 15360},
           {"A100-40GB", "NVIDIA A100-SXM4-40GB", "A100", 40960},
           {"H200", "NVIDIA H200", "H200", 143771},
           {"V100", "Tesla V100-SXM2-16GB", "V100", 16160},
           {"V100-32GB", "Tesla V100-SXM2-32GB", "V100", 32510},
           {"A10", "NVIDIA A10", "A10", 23028},
           {"A10G", "NVIDIA A10G", "A10G", 23028},
           {"L40S", "NVIDIA L40S", "L40S", 46068},
           {"RTX4090", "NVIDIA GeForce RTX 4090", "RTX4090", 24564},
       }) {
    auto groups = parse_ok(c.spec);
    ASSERT_EQ(groups.size(), 1u) << c.spec;
    EXPECT_EQ(groups[0].count, 1) << c.spec;
    EXPECT_EQ(groups[0].product_name, c.product) << c.spec;
    EXPECT_EQ(groups[0].model, c.model) << c.spec;
    EXPECT_EQ(groups[0].memory_mib, c.memory_mib) << c.spec;
  }
}

TEST(SimSpec, BareModelMeansOneAndShortNamesMeanTheirCommonVersion) {
  EXPECT_EQ(format_sim_spec(parse_ok("A100")), "1xA100-80GB");
  EXPECT_EQ(format_sim_spec(parse_ok("2xH100")), "2xH100-80GB");
  EXPECT_EQ(format_sim_spec(parse_ok("V100")), "1xV100-16GB");
}

TEST(SimSpec, CaseAndSpacesDoNotMatter) {
  EXPECT_EQ(format_sim_spec(parse_ok(" 2Xh200 , 1xrtx4090 ,4xt4")), "2xH200,1xRTX4090,4xT4");
}

TEST(SimSpec, EmptyMeansTheDefaultMachine) {
  EXPECT_EQ(format_sim_spec(parse_ok("")), "8xA100-80GB");
  EXPECT_EQ(format_sim_spec(parse_ok("  ")), "8xA100-80GB");
}

TEST(SimSpec, UnknownModelsAreKeptWithDefaultMemory) {
  auto groups = parse_ok("3xG2");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].count, 3);
  EXPECT_EQ(groups[0].product_name, "G2");
  EXPECT_EQ(groups[0].model, "G2");
  EXPECT_EQ(groups[0].memory_mib, 16384);
  EXPECT_EQ(groups[0].links, SimLinks::kNone);
  EXPECT_EQ(format_sim_spec(groups), "3xG2");
}

TEST(SimSpec, UnknownModelsTakeMemoryFromASuffix) {
  auto groups = parse_ok("2xG2-32GB");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].model, "G2");
  EXPECT_EQ(groups[0].memory_mib, 32768);
  EXPECT_EQ(format_sim_spec(groups), "2xG2-32GB");
}

TEST(SimSpec, KnownModelsWithOtherMemoryKeepTheirModelAndLinks) {
  auto groups = parse_ok("8xh100-94gb");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].model, "H100");
  EXPECT_EQ(groups[0].product_name, "NVIDIA H100-94GB");
  EXPECT_EQ(groups[0].memory_mib, 94 * 1024);
  EXPECT_EQ(groups[0].links, SimLinks::kBoardOf8);
}

TEST(SimSpec, SixtyFourGpusInAllIsTheLimit) {
  EXPECT_EQ(format_sim_spec(parse_ok("64xT4")), "64xT4");
  EXPECT_EQ(format_sim_spec(parse_ok("32xA100,32xT4")), "32xA100-80GB,32xT4");
}

TEST(SimSpec, BadSpecsSayWhatIsWrongAndWhatIsAccepted) {
  struct Case {
    const char* spec;
    const char* what;
  };
  for (const auto& c : std::vector<Case>{
           {"0xA100", "part \"0xA100\": count 0 is out of range 1..64"},
           {"65xT4", "part \"65xT4\": count 65 is out of range 1..64"},
           {"99999999xT4", "count 99999999 is out of range 1..64"},
           {"8x", "part \"8x\" has a count but no model"},
           {"8", "part \"8\" has a count but no model"},
           {"8A100", "part \"8A100\" needs an 'x' between the count and the model"},
           {"xT4", "part \"xT4\" has an 'x' but no count before it"},
           {"8xA100,", "a part is empty"},
           {",4xT4", "a part is empty"},
           {"4xA100!", "model \"A100!\" may only contain letters, digits, '-', '_' and '.'"},
           {"4xA 100", "model \"A 100\" may only contain"},
           {"2xG2-0GB", "memory 0GB is out of range 1GB..1024GB"},
           {"2x-16GB", "has a memory size but no model"},
           {"40xA100,30xT4", "70 GPUs in all, but a simulated machine has at most 64"},
       }) {
    auto groups = parse_sim_spec(c.spec);
    ASSERT_FALSE(groups.ok()) << c.spec;
    const auto& message = groups.error().message;
    EXPECT_EQ(groups.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(message.rfind("GPU spec \"" + std::string(c.spec) + "\": ", 0), 0u) << message;
    EXPECT_NE(message.find(c.what), std::string::npos) << message;
    EXPECT_NE(message.find("e.g. \"8xA100-80GB\", \"4xT4\" or \"2xH100-80GB,2xL4\""),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace gpucloud::gpu
