// `gpucloud doctor`: whether this machine can run gpucloud's jobs (docs/doctor.md).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "agent/doctor.h"
#include "cli/commands.h"

namespace gpucloud::cli {

int cmd_doctor(const DoctorCliOptions& o) {
  agent::DoctorOptions options;
  options.data_dir = o.data_dir;
  options.image = o.image;
  if (!o.min_driver.empty()) options.min_driver = o.min_driver;
  if (!o.nvml_library.empty()) options.nvml_library = o.nvml_library;
  auto checks = agent::run_doctor(options);
  bool failed = false;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : checks) {
    failed |= c.status == "fail";
    out.push_back({{"check", c.name}, {"status", c.status}, {"why", c.why}, {"fix", c.fix}});
    if (o.json) continue;
    std::cout << fmt::format("{:<5} {:<11} {}\n", c.status, c.name, c.why);
    if (!c.fix.empty()) std::cout << fmt::format("{:<17} fix: {}\n", "", c.fix);
  }
  if (o.json) std::cout << out.dump(2) << "\n";
  return failed ? kExitError : 0;
}

}  // namespace gpucloud::cli
