// The CUDA/driver table and version comparison behind `gpucloud doctor --image`.
#include <gtest/gtest.h>

#include "agent/doctor.h"

namespace gpucloud::agent {
namespace {

TEST(Doctor, DriverVersionsCompareByNumbersAndTheTableIsData) {
  EXPECT_LT(compare_versions("535.54.03", "550.54.14"), 0);
  EXPECT_GT(compare_versions("550.100", "550.54.14"), 0);
  EXPECT_EQ(compare_versions("470.57.02", "470.57.02"), 0);
  EXPECT_EQ(min_driver_for_cuda("12.2").value_or(""), "535.54.03");
  EXPECT_EQ(min_driver_for_cuda("11.8").value_or(""), "520.61.05");
  EXPECT_FALSE(min_driver_for_cuda("99.9"));
}

}  // namespace
}  // namespace gpucloud::agent
