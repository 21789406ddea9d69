#include "metrics_text.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "net/http_client.h"

namespace gpucloud::testing {

Scrape scrape_metrics(const std::string& base_url, const std::string& token,
                      const std::string& accept) {
  auto client = net::HttpClient::create(base_url);
  EXPECT_TRUE(client.ok());
  if (!client.ok()) return {};
  std::map<std::string, std::string> headers;
  if (!token.empty()) headers["Authorization"] = "Bearer " + token;
  if (!accept.empty()) headers["Accept"] = accept;
  auto r = (*client)->request("GET", "/metrics", "", headers, 10'000);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  return {r->status, r->content_type, r->body};
}

std::optional<double> sample(const std::string& text, const std::string& series) {
  std::string needle = "\n" + series + " ";
  size_t at = ("\n" + text).find(needle);
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(text.c_str() + at + needle.size() - 1, nullptr);
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

}  // namespace gpucloud::testing
