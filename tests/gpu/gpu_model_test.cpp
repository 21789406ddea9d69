// canonical_gpu_model and gpu_model_matches (src/model/gpu_model.h), as the gpu layer relies on
// them: every product name it reports must map to the model users ask for.
#include "model/gpu_model.h"

#include <gtest/gtest.h>

#include "gpu/simulated/sim_spec.h"

namespace gpucloud {
namespace {

TEST(CanonicalGpuModel, ProductNamesAsDriversReportThem) {
  EXPECT_EQ(canonical_gpu_model("NVIDIA A100-SXM4-80GB"), "A100");
  EXPECT_EQ(canonical_gpu_model("NVIDIA A100-PCIE-40GB"), "A100");
  EXPECT_EQ(canonical_gpu_model("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(canonical_gpu_model("NVIDIA H200"), "H200");
  EXPECT_EQ(canonical_gpu_model("Tesla T4"), "T4");
  EXPECT_EQ(canonical_gpu_model("Tesla V100-SXM2-16GB"), "V100");
  EXPECT_EQ(canonical_gpu_model("NVIDIA L4"), "L4");
  EXPECT_EQ(canonical_gpu_model("NVIDIA L40S"), "L40S");
  EXPECT_EQ(canonical_gpu_model("NVIDIA A10G"), "A10G");
  EXPECT_EQ(canonical_gpu_model("NVIDIA GeForce RTX 4090"), "RTX4090");
  EXPECT_EQ(canonical_gpu_model("NVIDIA RTX A6000"), "RTXA6000");
  EXPECT_EQ(canonical_gpu_model("Quadro RTX 8000"), "RTX8000");
}

TEST(CanonicalGpuModel, OtherNamesAreKept) {
  EXPECT_EQ(canonical_gpu_model("G2"), "G2");
  EXPECT_EQ(canonical_gpu_model("MI300X"), "MI300X");
  EXPECT_EQ(canonical_gpu_model(""), "");
}

TEST(CanonicalGpuModel, EverySimulatedProductNameMapsToItsModel) {
  for (const char* spec : {"A100-80GB", "A100-40GB", "H100-80GB", "H200", "L4", "T4", "V100",
                           "V100-32GB", "A10", "A10G", "L40S", "RTX4090"}) {
    auto groups = gpu::parse_sim_spec(spec);
    ASSERT_TRUE(groups.ok()) << spec;
    EXPECT_EQ(canonical_gpu_model((*groups)[0].product_name), (*groups)[0].model) << spec;
  }
}

TEST(GpuModelMatches, ModelsAlternativesAndMemory) {
  EXPECT_TRUE(gpu_model_matches("", "T4", 15360));
  EXPECT_TRUE(gpu_model_matches("A100", "A100", 40960));
  EXPECT_TRUE(gpu_model_matches("a100", "A100", 81920));
  EXPECT_TRUE(gpu_model_matches("A100|H100", "H100", 81559));
  EXPECT_FALSE(gpu_model_matches("A100|H100", "L4", 23034));
  EXPECT_TRUE(gpu_model_matches("A100-80GB", "A100", 81920));
  EXPECT_FALSE(gpu_model_matches("A100-80GB", "A100", 40960));
  EXPECT_TRUE(gpu_model_matches("H100-80GB", "H100", 81559));
  EXPECT_TRUE(gpu_model_matches("H200-141GB", "H200", 143771));
  EXPECT_TRUE(gpu_model_matches("L4-24GB", "L4", 23034));
  EXPECT_TRUE(gpu_model_matches("V100-16GB", "V100", 16160));
  EXPECT_FALSE(gpu_model_matches("A10", "A100", 81920));
  EXPECT_FALSE(gpu_model_matches("A100-80GB", "A10", 81920));
  EXPECT_TRUE(gpu_model_matches("G2", "G2", 16384));
}

TEST(GpuModelMatches, MigDevicesMatchOnlyConstraintsNamingTheirProfile) {
  EXPECT_FALSE(gpu_model_matches("", "A100/1g.10gb", 9728));
  EXPECT_FALSE(gpu_model_matches("A100", "A100/1g.10gb", 9728));
  EXPECT_FALSE(gpu_model_matches("A100-80GB", "A100/1g.10gb", 9728));
  EXPECT_TRUE(gpu_model_matches("A100/1g.10gb", "A100/1g.10gb", 9728));
  EXPECT_TRUE(gpu_model_matches("a100-80gb/1G.10GB", "A100/1g.10gb", 9728));
  EXPECT_TRUE(gpu_model_matches("H100|A100-80GB/3g.40gb", "A100/3g.40gb", 40192));
  EXPECT_FALSE(gpu_model_matches("A100/3g.40gb", "A100/1g.10gb", 9728));
  EXPECT_FALSE(gpu_model_matches("H100/1g.10gb", "A100/1g.10gb", 9728));
  EXPECT_FALSE(gpu_model_matches("A10/1g.10gb", "A100/1g.10gb", 9728));
  EXPECT_FALSE(gpu_model_matches("A100-80/1g.10gb", "A100/1g.10gb", 9728));
  EXPECT_FALSE(gpu_model_matches("A100-abcGB/1g.10gb", "A100/1g.10gb", 9728));
  // A profile never matches a whole GPU.
  EXPECT_FALSE(gpu_model_matches("A100/1g.10gb", "A100", 81920));
}

TEST(GpuModelMatches, EverySimulatedModelMatchesItsOwnSpec) {
  for (const char* spec :
       {"A100-80GB", "A100-40GB", "H100-80GB", "V100-16GB", "V100-32GB", "G2-32GB", "H100-94GB"}) {
    auto groups = gpu::parse_sim_spec(spec);
    ASSERT_TRUE(groups.ok()) << spec;
    const auto& g = (*groups)[0];
    EXPECT_TRUE(gpu_model_matches(spec, g.model, g.memory_mib)) << spec;
  }
}

}  // namespace
}  // namespace gpucloud
