#include "exec/process/launch_file.h"

#include <nlohmann/json.hpp>

#include "exec/process/files.h"

namespace gpucloud::exec {

using nlohmann::json;

std::string job_dir_of(const std::string& attempt_dir) {
  return attempt_dir + "/" + kJobDir;
}

std::string job_tmp_dir_of(const std::string& attempt_dir) {
  return attempt_dir + "/" + kJobTmpDir;
}

std::string launch_file_to_json(const LaunchFile& launch) {
  json j;
  j["key"] = launch.key;
  j["argv"] = launch.argv;
  j["env"] = launch.env;
  j["workdir"] = launch.workdir;
  j["cpus"] = launch.cpus;
  j["cgroup"] = launch.cgroup;
  if (!launch.devices_cgroup.empty()) j["devices_cgroup"] = launch.devices_cgroup;
  if (launch.uid >= 0) {
    j["uid"] = launch.uid;
    j["gid"] = launch.gid;
  }
  j["claims"] = launch.claims;
  if (!launch.container_name.empty()) {
    j["container_name"] = launch.container_name;
    j["container_image"] = launch.container_image;
    j["podman"] = launch.podman;
    j["container_env"] = launch.container_env;
  }
  return j.dump(2) + "\n";
}

Result<LaunchFile> launch_file_from_json(const std::string& text) {
  try {
    json j = json::parse(text);
    LaunchFile launch;
    launch.key = j.value("key", "");
    launch.argv = j.at("argv").get<std::vector<std::string>>();
    launch.env = j.value("env", std::map<std::string, std::string>{});
    launch.workdir = j.value("workdir", "");
    launch.cpus = j.value("cpus", std::vector<int>{});
    launch.cgroup = j.value("cgroup", "");
    launch.devices_cgroup = j.value("devices_cgroup", "");
    launch.uid = j.value("uid", int64_t{-1});
    launch.gid = j.value("gid", launch.uid);
    if (launch.uid > 0xfffffffeLL || launch.gid > 0xfffffffeLL)
      return invalid("launch.json: uid/gid out of range");
    launch.claims = j.value("claims", false);
    launch.container_name = j.value("container_name", "");
    launch.container_image = j.value("container_image", "");
    launch.podman = j.value("podman", "");
    launch.container_env = j.value("container_env", std::map<std::string, std::string>{});
    if (launch.argv.empty()) return invalid("launch.json: argv is empty");
    return launch;
  } catch (const json::exception& e) {
    return invalid(std::string("launch.json: ") + e.what());
  }
}

std::string exit_record_to_json(const ExitInfo& info, int64_t ended_at_unix_ms) {
  json j;
  j["exit_code"] = info.exit_code;
  j["signal"] = info.signal;
  j["failed_to_start"] = info.failed_to_start;
  j["message"] = info.message;
  j["ended_at_unix_ms"] = ended_at_unix_ms;
  return j.dump(2) + "\n";
}

Result<ExitInfo> exit_record_from_json(const std::string& text) {
  try {
    json j = json::parse(text);
    ExitInfo info;
    info.exit_code = j.at("exit_code").get<int>();
    info.signal = j.value("signal", 0);
    info.failed_to_start = j.value("failed_to_start", false);
    info.message = j.value("message", "");
    return info;
  } catch (const json::exception& e) {
    return invalid(std::string("exit.json: ") + e.what());
  }
}

Result<ExitInfo> read_exit_record(const std::string& attempt_dir) {
  auto text = read_file(attempt_dir + "/" + kExitFile);
  if (!text.ok()) return text.error();
  return exit_record_from_json(*text);
}

Result<int> read_pid_file(const std::string& attempt_dir) {
  auto text = read_file(attempt_dir + "/" + kPidFile);
  if (!text.ok()) return text.error();
  try {
    int pid = std::stoi(*text);
    if (pid <= 0) return invalid(attempt_dir + "/pid holds " + *text + ", not a pid");
    return pid;
  } catch (const std::exception&) {
    return invalid(attempt_dir + "/pid holds '" + *text + "', not a pid");
  }
}

}  // namespace gpucloud::exec
