// A `gpucloud dev` process for benchmarks: started on a free port with a fresh data dir, its
// log in that dir. Header-only; benchmarks are single programs.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"

extern char** environ;

namespace gpucloud::bench {

/// The first line of a file ("" when it cannot be read).
inline std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

struct DevProcess {
  pid_t pid = -1;
  std::string dir;   // a fresh /tmp/gpucloud-bench-XXXXXX
  std::string data;  // dir/.gpucloud
  std::string log;   // dir/dev.log: the server's stdout and stderr
  std::string address() const { return read_first_line(data + "/address"); }
  std::string admin_token() const { return read_first_line(data + "/admin.token"); }
};

/// Starts `binary dev --listen 127.0.0.1:0 --data-dir DIR --sim-gpus 8xA100-80GB` and waits
/// until it has written its address; pid is -1 when it could not start.
inline DevProcess start_dev(const std::string& binary) {
  DevProcess dev;
  char tmpl[] = "/tmp/gpucloud-bench-XXXXXX";
  dev.dir = ::mkdtemp(tmpl);
  dev.data = dev.dir + "/.gpucloud";
  dev.log = dev.dir + "/dev.log";
  std::vector<std::string> args = {binary,       "dev",    "--listen",   "127.0.0.1:0",
                                   "--data-dir", dev.data, "--sim-gpus", "8xA100-80GB"};
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, dev.log.c_str(), O_WRONLY | O_CREAT, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  int rc = ::posix_spawn(&dev.pid, cargs[0], &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    dev.pid = -1;
    return dev;
  }
  while (!std::filesystem::exists(dev.data + "/address"))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return dev;
}

/// The dev server's API with the admin token, for benchmarks: a failed call ends the program.
struct DevApi {
  std::unique_ptr<net::HttpClient> http;
  std::string token;
  /// A request whose answer must be 2xx; its JSON body (a non-JSON body as a JSON string).
  nlohmann::json call(const std::string& method, const std::string& target,
                      const std::string& body = "") {
    auto r = http->request(method, target, body, {{"Authorization", "Bearer " + token}}, 60'000);
    if (!r || r->status >= 300) {
      std::cerr << "request " << method << " " << target
                << " failed: " << (r ? r->body : r.error().message) << "\n";
      std::exit(1);
    }
    return r->body.empty() || r->body[0] != '{' ? nlohmann::json(r->body)
                                                : nlohmann::json::parse(r->body);
  }
  /// GET target's body as it is ("" when the request failed).
  std::string raw(const std::string& target) {
    auto r = http->request("GET", target, "", {{"Authorization", "Bearer " + token}}, 60'000);
    return r ? r->body : "";
  }
  /// Connects to a started dev process with its admin token.
  static DevApi of(const DevProcess& dev) {
    return {std::move(net::HttpClient::create(dev.address()).value()), dev.admin_token()};
  }
};

}  // namespace gpucloud::bench
