#include "agent/gpu_devices.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/driver_files.h"

namespace gpucloud::agent {
namespace {

constexpr unsigned kNvidiaMajor = 195;
constexpr unsigned kNvidiactlMinor = 255;
const char* const kControlNodes[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"};

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

Status make_node(const std::string& path, unsigned minor) {
  ::unlink(path.c_str());
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(kNvidiaMajor, minor)) != 0)
    return internal("cannot make the simulated GPU device node " + path + ": " +
                    std::strerror(errno) + " (needs root)");
  ::chmod(path.c_str(), 0666);  // whatever the umask: the job's user opens it, like /dev/nvidiaN
  return {};
}

}  // namespace

std::vector<std::string> GpuDevices::device_args(const std::vector<int>& indexes) const {
  std::vector<std::string> out;
  if (dir.empty()) return out;
  for (int index : indexes) {
    std::string name = "nvidia" + std::to_string(index);
    if (exists(dir + "/" + name)) out.push_back(dir + "/" + name + ":/dev/" + name);
  }
  for (const char* name : kControlNodes)
    if (exists(dir + "/" + name)) out.push_back(dir + "/" + name + ":/dev/" + name);
  return out;
}

Result<GpuDevices> prepare_gpu_devices(bool simulated, const std::string& dir,
                                       const std::vector<int>& indexes,
                                       const std::string& driver_version) {
  if (!simulated) return GpuDevices{"/dev", find_driver_files(driver_version)};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return internal("cannot create " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0755);
  for (int index : indexes)
    GPUCLOUD_TRY(make_node(dir + "/nvidia" + std::to_string(index), static_cast<unsigned>(index)));
  GPUCLOUD_TRY(make_node(dir + "/nvidiactl", kNvidiactlMinor));
  return GpuDevices{dir};
}

Status write_cdi_spec(const GpuDevices& devices, const std::vector<int>& indexes,
                      const std::string& cdi_dir) {
  using nlohmann::json;
  json spec = {{"cdiVersion", "0.5.0"}, {"kind", "nvidia.com/gpu"}};
  json list = json::array();
  for (int index : indexes) {
    std::string node = devices.dir + "/nvidia" + std::to_string(index);
    list.push_back({{"name", std::to_string(index)},
                    {"containerEdits",
                     {{"deviceNodes", json::array({{{"path", "/dev/nvidia" + std::to_string(index)},
                                                    {"hostPath", node}}})}}}});
  }
  spec["devices"] = list;
  json common = json::array();
  for (const char* name : kControlNodes) {
    std::string node = devices.dir + "/" + name;
    if (exists(node)) common.push_back({{"path", std::string("/dev/") + name}, {"hostPath", node}});
  }
  json mounts = json::array();
  for (const auto& file : devices.driver_files)
    mounts.push_back({{"hostPath", file},
                      {"containerPath", file},
                      {"options", {"ro", "nosuid", "nodev", "bind"}}});
  spec["containerEdits"] = {{"deviceNodes", common}, {"mounts", mounts}};
  std::error_code ec;
  std::filesystem::create_directories(cdi_dir, ec);
  if (ec) return internal("cannot create " + cdi_dir + ": " + ec.message());
  std::string path = cdi_dir + "/gpucloud-nvidia.json";
  std::ofstream out(path + ".tmp", std::ios::trunc);
  out << spec.dump(2) << "\n";
  out.close();
  if (!out || std::rename((path + ".tmp").c_str(), path.c_str()) != 0)
    return internal("cannot write the CDI spec " + path);
  return {};
}

}  // namespace gpucloud::agent
