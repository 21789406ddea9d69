// A `gpucloud dev` with two tenants, vision and nlp, and a member token (alice's, kAlice) good
// for vision only: the fixture of tests where what a member sees matters.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "dev_cluster.h"
#include "net/crypto.h"

namespace gpucloud::testing {

inline const std::string kAlice = "alice-token-0123456789";

class MemberCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.path() + "/gpucloud.yaml";
    std::ofstream(config_) << "tenants:\n  - {name: vision}\n  - {name: nlp}\n"
                              "tokens:\n  - {name: alice, role: member, tenants: [vision], "
                              "sha256: " +
                                  net::sha256_hex(kAlice) + "}\n";
    cluster_ = std::make_unique<DevCluster>(
        std::vector<std::string>{"--sim-gpus", "2xA100-80GB", "--config", config_});
  }
  /// `gpucloud ARGS` as the holder of token.
  CommandResult as(const std::string& token, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {GPUCLOUD_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, {{"GPUCLOUD_ADDR", cluster_->address()}, {"GPUCLOUD_TOKEN", token}},
                       cluster_->work_dir());
  }

  TempDir dir_;
  std::string config_;
  std::unique_ptr<DevCluster> cluster_;
};

}  // namespace gpucloud::testing
