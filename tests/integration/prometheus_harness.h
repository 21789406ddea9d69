// A real Prometheus (Debian's `prometheus`, installed by scripts/install-deps.sh) for tests:
// started on a free port with a config, stopped by the destructor, queried over its HTTP API.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpucloud::testing {

inline const char* const kPrometheusBinary = "/usr/bin/prometheus";
inline const char* const kPromtoolBinary = "/usr/bin/promtool";

/// A child process, stopped (SIGTERM, then SIGKILL) and reaped by the destructor.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

 private:
  pid_t pid_ = -1;
};

/// Prometheus on 127.0.0.1:<free port> with `config_file`, its data under `data_dir`.
class RealPrometheus {
 public:
  RealPrometheus(const std::string& config_file, const std::string& data_dir);
  /// http://127.0.0.1:PORT
  const std::string& url() const { return url_; }
  /// What Prometheus logged so far.
  std::string log() const;

 private:
  std::string data_dir_;
  std::string url_;
  std::unique_ptr<ChildProcess> process_;
};

/// Percent-encodes a query parameter.
std::string url_encode(const std::string& s);

/// GET path of a Prometheus API; the parsed body (discarded JSON when it failed).
nlohmann::json prometheus_get(const std::string& prometheus_url, const std::string& path);

/// The value of a PromQL query that yields one sample, or nullopt (no sample yet, or an error).
std::optional<double> query(const std::string& prometheus_url, const std::string& promql);

/// Reads a whole file ("" when it cannot be read).
std::string read_file(const std::string& path);

/// The root of the source tree (where deploy/ is).
std::string source_dir();

}  // namespace gpucloud::testing
