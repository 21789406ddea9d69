#include "prometheus_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>

#include "metrics_text.h"
#include "net/http_client.h"

namespace gpucloud::testing {

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_path) {
  pid_ = ::fork();
  if (pid_ == 0) {
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    ::usleep(50'000);
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

RealPrometheus::RealPrometheus(const std::string& config_file, const std::string& data_dir)
    : data_dir_(data_dir) {
  int port = free_port();
  url_ = "http://127.0.0.1:" + std::to_string(port);
  process_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{kPrometheusBinary, "--config.file=" + config_file,
                               "--storage.tsdb.path=" + data_dir + "/tsdb",
                               "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      data_dir + "/prometheus.log");
}

std::string RealPrometheus::log() const {
  return read_file(data_dir_ + "/prometheus.log");
}

std::string url_encode(const std::string& s) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

nlohmann::json prometheus_get(const std::string& prometheus_url, const std::string& path) {
  auto client = net::HttpClient::create(prometheus_url);
  if (!client.ok()) return nlohmann::json::value_t::discarded;
  auto r = (*client)->request("GET", path, "", {}, 5'000);
  if (!r.ok()) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(r->body, nullptr, false);
}

std::optional<double> query(const std::string& prometheus_url, const std::string& promql) {
  auto body = prometheus_get(prometheus_url, "/api/v1/query?query=" + url_encode(promql));
  if (body.is_discarded() || body["status"] != "success") return std::nullopt;
  const auto& result = body["data"]["result"];
  if (!result.is_array() || result.size() != 1) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string source_dir() {
  return GPUCLOUD_SOURCE_DIR;
}

}  // namespace gpucloud::testing
