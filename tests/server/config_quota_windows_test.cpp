// The config file's quota windows: read into the tenant, and a bad one refused with the file,
// the tenant and the window named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "server/config.h"

namespace gpucloud::server {
namespace {

std::string write_config(const std::string& text) {
  char path[] = "/tmp/gpucloud-config-XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << text;
  return path;
}

const std::string kTenant =
    "tenants:\n"
    "  - name: ops\n"
    "  - name: inference\n"
    "    quota: {A100: 8}\n"
    "    quota_windows:\n";

TEST(ConfigQuotaWindows, WindowsAreReadIntoTheTenant) {
  std::string path = write_config(
      kTenant +
      "      - {days: mon-fri, from: \"08:00\", to: \"20:00\", zone: Europe/Berlin, quota: {A100: "
      "48}}\n");
  auto config = load_server_config(path);
  ::unlink(path.c_str());
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->tenants.size(), 2u);
  const TenantConfig& t = config->tenants[1];
  EXPECT_EQ(t.quota.at("A100"), 8);
  ASSERT_EQ(t.quota_windows.size(), 1u);
  EXPECT_EQ(describe_quota_window(t.quota_windows[0]), "mon-fri 08:00-20:00 Europe/Berlin");
  EXPECT_EQ(t.quota_windows[0].quota.at("A100"), 48);
}

TEST(ConfigQuotaWindows, ABadWindowIsRefusedNamingFileTenantAndWindow) {
  std::string path = write_config(
      kTenant +
      "      - {days: mon-fri, from: \"08:00\", to: \"20:00\", zone: UTC, quota: {A100: 48}}\n"
      "      - {days: sat, from: \"08:00\", to: \"20:00\", zone: Mars/Olympus, quota: {A100: "
      "48}}\n");
  auto config = load_server_config(path);
  ::unlink(path.c_str());
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().message.rfind(path + ": tenants[1] (inference).quota_windows[1].zone: "
                                                "time zone 'Mars/Olympus' is not in the time "
                                                "zone database",
                                         0),
            0u)
      << config.error().message;
}

}  // namespace
}  // namespace gpucloud::server
