// create_gpu_backend: the name->factory table and the "auto" choice.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "gpu/gpu_backend.h"
#include "test_env.h"

namespace gpucloud::gpu {
namespace {

using testing::ScopedEnv;

constexpr const char* kMissing = "/nonexistent/libnvidia-ml.so.1";

// Captures what is logged through spdlog's default logger while it lives.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64)) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink_));
  }
  ~LogCapture() { spdlog::set_default_logger(old_); }
  /// The warnings logged so far.
  std::vector<std::string> warnings() const {
    std::vector<std::string> out;
    for (const auto& msg : sink_->last_raw()) {
      if (msg.level == spdlog::level::warn)
        out.emplace_back(msg.payload.begin(), msg.payload.end());
    }
    return out;
  }

 private:
  std::shared_ptr<spdlog::logger> old_ = spdlog::default_logger();
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

GpuBackendConfig config_of(const std::string& kind, const std::string& library,
                           const std::string& sim_spec = "") {
  GpuBackendConfig config;
  config.kind = kind;
  config.nvml_library = library;
  config.sim_spec = sim_spec;
  config.sim_node_name = "factory-test";
  return config;
}

class GpuBackendFactoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"FAKE_NVML_DEVICES", "FAKE_NVML_FAIL", "FAKE_NVML_FAIL_CODE",
                             "FAKE_NVML_FAIL_INDEX", "FAKE_NVML_NVSWITCH", "FAKE_NVML_MIG"}) {
      unsetenv(name);
    }
  }
  ScopedEnv env_;
};

TEST_F(GpuBackendFactoryTest, SimulatedByName) {
  auto backend = create_gpu_backend(config_of("simulated", FAKE_NVML_PATH));
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_EQ((*backend)->kind(), "simulated");
  EXPECT_EQ((*backend)->discover()->size(), 8u);
}

TEST_F(GpuBackendFactoryTest, NvmlByName) {
  auto backend = create_gpu_backend(config_of("nvml", FAKE_NVML_PATH));
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_EQ((*backend)->kind(), "nvml");
  EXPECT_EQ((*backend)->discover()->size(), 4u);
}

TEST_F(GpuBackendFactoryTest, NvmlWithoutTheLibrarySaysWhatToDo) {
  auto backend = create_gpu_backend(config_of("nvml", kMissing));
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  const auto& message = backend.error().message;
  EXPECT_EQ(message.rfind(std::string("NVML not available (dlopen ") + kMissing + ": ", 0), 0u)
      << message;
  EXPECT_NE(message.find("--sim-gpus"), std::string::npos) << message;
}

TEST_F(GpuBackendFactoryTest, AnUnknownKindListsTheKnownOnes) {
  auto backend = create_gpu_backend(config_of("cuda", FAKE_NVML_PATH));
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(backend.error().message,
            "GPU backend \"cuda\" is not known; choose one of: auto, nvml, simulated");
}

TEST_F(GpuBackendFactoryTest, AutoPrefersNvmlWhenItReportsGpus) {
  LogCapture log;
  auto backend = create_gpu_backend(config_of("auto", FAKE_NVML_PATH));
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_EQ((*backend)->kind(), "nvml");
  EXPECT_TRUE(log.warnings().empty());
}

TEST_F(GpuBackendFactoryTest, AutoFallsBackToSimulatedWithAWarningWhenNvmlIsMissing) {
  LogCapture log;
  auto backend = create_gpu_backend(config_of("auto", kMissing));
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_EQ((*backend)->kind(), "simulated");
  EXPECT_EQ((*backend)->discover()->size(), 8u);
  auto warnings = log.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind(std::string("NVML not available (dlopen ") + kMissing + ": ", 0), 0u)
      << warnings[0];
  EXPECT_TRUE(
      warnings[0].ends_with("; using simulated GPUs 8xA100-80GB; pass --sim-gpus to choose"))
      << warnings[0];
}

TEST_F(GpuBackendFactoryTest, AutoFallsBackToSimulatedWhenNvmlReportsNoGpus) {
  env_.set("FAKE_NVML_DEVICES", "0");
  LogCapture log;
  auto backend = create_gpu_backend(config_of("auto", FAKE_NVML_PATH));
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_EQ((*backend)->kind(), "simulated");
  auto warnings = log.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "NVML reports no GPUs (driver 550.54.15); using simulated GPUs 8xA100-80GB; pass "
            "--sim-gpus to choose");
}

TEST_F(GpuBackendFactoryTest, AutoWithASimSpecIsSimulated) {
  LogCapture log;
  auto backend = create_gpu_backend(config_of("auto", FAKE_NVML_PATH, "4xT4"));
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_EQ((*backend)->kind(), "simulated");
  auto gpus = (*backend)->discover();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[0].model, "T4");
  EXPECT_TRUE(log.warnings().empty());
}

TEST_F(GpuBackendFactoryTest, AutoWithABadSimSpecFails) {
  auto backend = create_gpu_backend(config_of("auto", FAKE_NVML_PATH, "0xT4"));
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpucloud::gpu
