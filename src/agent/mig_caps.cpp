#include "agent/mig_caps.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace gpucloud::agent {

std::vector<int> MigCaps::for_device(int gpu_minor, int gpu_instance, int compute_instance) const {
  if (major < 0 || gpu_instance < 0 || compute_instance < 0) return {};
  auto gi = minors.find(fmt::format("gpu{}/gi{}/access", gpu_minor, gpu_instance));
  auto ci =
      minors.find(fmt::format("gpu{}/gi{}/ci{}/access", gpu_minor, gpu_instance, compute_instance));
  if (gi == minors.end() || ci == minors.end()) return {};
  return {gi->second, ci->second};
}

MigCaps read_mig_caps(const std::string& proc_devices, const std::string& mig_minors) {
  MigCaps caps;
  // /proc/devices: "Character devices:" then "MAJOR NAME" lines, then "Block devices:".
  std::ifstream devices(proc_devices);
  bool character = false;
  for (std::string line; std::getline(devices, line);) {
    if (line.rfind("Character devices:", 0) == 0) character = true;
    if (line.rfind("Block devices:", 0) == 0) character = false;
    std::istringstream fields(line);
    int major = -1;
    std::string name;
    if (character && fields >> major >> name && name == "nvidia-caps") caps.major = major;
  }
  if (caps.major < 0) return caps;
  std::ifstream list(mig_minors);
  int lines = 0;
  for (std::string line; std::getline(list, line) && ++lines <= 100'000;) {
    std::istringstream fields(line);
    std::string name;
    int minor = -1;
    if (fields >> name >> minor && minor >= 0 && name.size() <= 64) caps.minors[name] = minor;
  }
  return caps;
}

}  // namespace gpucloud::agent
