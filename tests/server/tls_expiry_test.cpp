// The served certificate's expiry, which gpucloud_tls_certificate_expiry_timestamp_seconds
// shows and the GpucloudCertificateExpiresSoon alert watches.
#include <gtest/gtest.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "net/tls.h"

namespace gpucloud::net {
namespace {

TEST(CertificateNotAfter, ReadsWhenASelfSignedCertificateExpires) {
  std::string dir =
      std::filesystem::temp_directory_path() / ("gpucloud-tls-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(generate_self_signed(dir + "/c.pem", dir + "/k.pem", {"127.0.0.1"}, {}).ok());
  auto not_after = certificate_not_after(dir + "/c.pem");
  ASSERT_TRUE(not_after.ok()) << not_after.error().message;
  int64_t ten_years = 10LL * 365 * 24 * 3600;
  int64_t now = static_cast<int64_t>(std::time(nullptr));
  EXPECT_GE(*not_after, now + ten_years - 3600);
  EXPECT_LE(*not_after, now + ten_years + 3600);

  std::ofstream(dir + "/junk.pem") << "not a certificate\n";
  auto junk = certificate_not_after(dir + "/junk.pem");
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.error().message.find("holds no PEM certificate"), std::string::npos);
  EXPECT_FALSE(certificate_not_after(dir + "/missing.pem").ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpucloud::net
