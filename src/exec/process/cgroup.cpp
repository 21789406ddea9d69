#include "exec/process/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "exec/process/bpf_devices.h"
#include "exec/process/files.h"

namespace gpucloud::exec {
namespace {

bool has_word(const std::string& text, const std::string& word, char sep) {
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (item == word || item == word + "\n") return true;
  }
  return false;
}

bool is_permission_error(int err) {
  return err == EACCES || err == EPERM || err == EROFS;
}

Status write_control(const std::string& file, const std::string& value) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    Error e = internal(errno_message("cannot open " + file));
    if (is_permission_error(errno)) e.code = ErrorCode::kPermissionDenied;
    return e;
  }
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    errno = err;
    return internal(errno_message("cannot write '" + value + "' to " + file));
  }
  return {};
}

// Reads "name N" from a flat keyed file such as memory.events or memory.oom_control.
std::optional<int64_t> keyed_value(const std::string& file, const std::string& name) {
  auto text = read_file(file);
  if (!text.ok()) return std::nullopt;
  std::istringstream in(*text);
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::optional<int64_t> number_file(const std::string& file) {
  auto text = read_file(file);
  if (!text.ok()) return std::nullopt;
  try {
    return std::stoll(*text);
  } catch (const std::exception&) {
    return std::nullopt;  // "max"
  }
}

bool is_v2(const std::string& cgroup) {
  return path_exists(cgroup + "/cgroup.controllers");
}

// cgroup v2 only exposes memory.max in a child when every ancestor enables the controller for
// its subtree.
Status enable_memory_controller(const std::string& dir) {
  auto current = read_file(dir + "/cgroup.subtree_control");
  if (current.ok() && has_word(*current, "memory", ' ')) return {};
  return write_control(dir + "/cgroup.subtree_control", "+memory");
}

Status make_cgroup_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return {};
  Error e = internal(errno_message("cannot create cgroup " + dir));
  if (is_permission_error(errno)) e.code = ErrorCode::kPermissionDenied;
  return e;
}

}  // namespace

std::optional<MemoryCgroupRoot> find_memory_cgroup_root(const std::string& mounts_path) {
  std::ifstream in(mounts_path);
  std::string line;
  std::optional<MemoryCgroupRoot> v1;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string device, mountpoint, type, options;
    if (!(fields >> device >> mountpoint >> type >> options)) continue;
    if (type == "cgroup2") {
      auto controllers = read_file(mountpoint + "/cgroup.controllers");
      if (controllers.ok() && has_word(*controllers, "memory", ' ')) {
        return MemoryCgroupRoot{CgroupVersion::kV2, mountpoint};
      }
    } else if (type == "cgroup" && !v1 && has_word(options, "memory", ',')) {
      v1 = MemoryCgroupRoot{CgroupVersion::kV1, mountpoint};
    }
  }
  return v1;
}

std::optional<std::string> find_devices_cgroup_root(const std::string& mounts_path) {
  std::ifstream in(mounts_path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string device, mountpoint, type, options;
    if (!(fields >> device >> mountpoint >> type >> options)) continue;
    if (type == "cgroup" && has_word(options, "devices", ',')) return mountpoint;
  }
  return std::nullopt;
}

// Makes `<root>/<parent>/<cgroup_name_for_key(key)>` and the directories above it; its path.
// *existed says whether the job's own directory was there already.
static Result<std::string> make_job_cgroup(const std::string& root, const std::string& parent,
                                           const std::string& key, bool* existed) {
  if (::access(root.c_str(), W_OK) != 0)
    return Error{ErrorCode::kPermissionDenied, root + " is not writable"};
  std::string dir = root;
  for (const auto& part : std::filesystem::path(parent)) {
    if (part.empty() || part == "/" || part == ".") continue;
    dir += "/" + part.string();
    GPUCLOUD_TRY(make_cgroup_dir(dir));
  }
  std::string cgroup = dir + "/" + cgroup_name_for_key(key);
  *existed = ::access(cgroup.c_str(), F_OK) == 0;
  GPUCLOUD_TRY(make_cgroup_dir(cgroup));
  return cgroup;
}

Result<std::string> create_gpu_devices_cgroup(const std::string& root, const std::string& parent,
                                              const std::string& key,
                                              const GpuDeviceAccess& access) {
  bool existed = false;
  auto made = make_job_cgroup(root, parent, key, &existed);
  if (!made) return made.error();
  const std::string& cgroup = *made;
  // With the default "allow all", v1 cannot punch holes in a deny rule (an allow only removes
  // an identical deny). So: deny all, then allow block devices, every character major but the
  // NVIDIA driver's (dynamic majors end at 511), and the driver's minors the job may use.
  Status denied = write_control(cgroup + "/devices.deny", "a");
  std::vector<std::string> rules = {"b *:* rwm"};
  for (int major = 0; major <= kLastCharMajor; ++major)
    if (major != kNvidiaDeviceMajor && major != access.caps_major)
      rules.push_back("c " + std::to_string(major) + ":* rwm");
  std::vector<int> allowed = access.gpu_minors;
  allowed.insert(allowed.end(), std::begin(kNvidiaControlMinors), std::end(kNvidiaControlMinors));
  for (int minor : allowed)
    rules.push_back("c " + std::to_string(kNvidiaDeviceMajor) + ":" + std::to_string(minor) +
                    " rwm");
  if (access.caps_major >= 0)
    for (int minor : access.caps_minors)
      rules.push_back("c " + std::to_string(access.caps_major) + ":" + std::to_string(minor) +
                      " rwm");
  for (const auto& rule : rules) {
    if (!denied.ok()) break;
    denied = write_control(cgroup + "/devices.allow", rule);
  }
  if (!denied.ok()) {
    ::rmdir(cgroup.c_str());
    return denied.error();
  }
  return cgroup;
}

Result<std::string> create_gpu_devices_bpf_cgroup(const std::string& root,
                                                  const std::string& parent, const std::string& key,
                                                  const GpuDeviceAccess& access) {
  // On a v2 host it may be the job's memory cgroup already: that one is not removed below.
  bool existed = false;
  auto made = make_job_cgroup(root, parent, key, &existed);
  if (!made) return made.error();
  const std::string& cgroup = *made;
  if (Status attached = attach_gpu_device_program(cgroup, access); !attached.ok()) {
    if (!existed) ::rmdir(cgroup.c_str());
    return attached.error();
  }
  return cgroup;
}

std::string cgroup_name_for_key(const std::string& key) {
  std::string name;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    name += ok ? c : '_';
  }
  if (name.empty() || name[0] == '.') name = "job" + name;
  if (name.size() > 200) {
    char hash[32];
    std::snprintf(hash, sizeof hash, "-%zx", std::hash<std::string>{}(key));
    name = name.substr(0, 180) + hash;
  }
  return name;
}

Result<std::string> create_memory_cgroup(const MemoryCgroupRoot& root, const std::string& parent,
                                         const std::string& key, int64_t limit_mib) {
  if (::access(root.path.c_str(), W_OK) != 0) {
    return Error{ErrorCode::kPermissionDenied, root.path + " is not writable"};
  }
  // Create the parent chain, enabling the memory controller on the way down (v2).
  std::string dir = root.path;
  std::filesystem::path rel(parent);
  for (const auto& part : rel) {
    if (part.empty() || part == "/" || part == ".") continue;
    if (root.version == CgroupVersion::kV2) GPUCLOUD_TRY(enable_memory_controller(dir));
    dir += "/" + part.string();
    GPUCLOUD_TRY(make_cgroup_dir(dir));
  }
  if (root.version == CgroupVersion::kV2) GPUCLOUD_TRY(enable_memory_controller(dir));
  std::string cgroup = dir + "/" + cgroup_name_for_key(key);
  GPUCLOUD_TRY(make_cgroup_dir(cgroup));

  std::string bytes = std::to_string(limit_mib * 1024 * 1024);
  Status limited = root.version == CgroupVersion::kV2
                       ? write_control(cgroup + "/memory.max", bytes)
                       : write_control(cgroup + "/memory.limit_in_bytes", bytes);
  if (!limited.ok()) {
    ::rmdir(cgroup.c_str());
    return limited.error();
  }
  // Best effort: without a swap limit a job over its limit swaps instead of being stopped.
  if (root.version == CgroupVersion::kV2) {
    (void)write_control(cgroup + "/memory.swap.max", "0");
    (void)write_control(cgroup + "/memory.oom.group", "1");
  } else {
    (void)write_control(cgroup + "/memory.memsw.limit_in_bytes", bytes);
  }
  return cgroup;
}

Result<int64_t> cgroup_memory_bytes(const std::string& cgroup) {
  auto value = number_file(cgroup + (is_v2(cgroup) ? "/memory.current" : "/memory.usage_in_bytes"));
  if (!value) return internal("cannot read the memory use of cgroup " + cgroup);
  return *value;
}

std::optional<int64_t> cgroup_memory_limit_bytes(const std::string& cgroup) {
  return number_file(cgroup + (is_v2(cgroup) ? "/memory.max" : "/memory.limit_in_bytes"));
}

int64_t cgroup_oom_kills(const std::string& cgroup) {
  auto value = is_v2(cgroup) ? keyed_value(cgroup + "/memory.events", "oom_kill")
                             : keyed_value(cgroup + "/memory.oom_control", "oom_kill");
  return value.value_or(0);
}

std::vector<int> cgroup_pids(const std::string& cgroup) {
  std::vector<int> pids;
  auto text = read_file(cgroup + "/cgroup.procs");
  if (!text.ok()) return pids;
  std::istringstream in(*text);
  int pid = 0;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

bool remove_cgroup(const std::string& cgroup) {
  if (cgroup.empty() || !path_exists(cgroup)) return true;
  for (int pid : cgroup_pids(cgroup)) ::kill(pid, SIGKILL);
  return ::rmdir(cgroup.c_str()) == 0 || errno == ENOENT;
}

}  // namespace gpucloud::exec
