#include "net/tls.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>

namespace gpucloud::net {

namespace {

template <class T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509, X509_free>>;

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

Status add_san(X509* cert, const std::string& san) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, san.c_str());
  if (!ext) return internal(fmt::format("cannot build the certificate's names ({})", san));
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return {};
}

}  // namespace

Status generate_self_signed(const std::string& cert_path, const std::string& key_path,
                            const std::vector<std::string>& ip_addresses,
                            const std::vector<std::string>& dns_names) {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return internal("cannot generate an EC P-256 key");
  CertPtr cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("gpucloud"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("gpucloud server"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  std::string san = "DNS:localhost";
  std::set<std::string> seen;
  for (const auto& d : dns_names)
    if (!d.empty() && seen.insert(d).second) san += ",DNS:" + d;
  for (const auto& ip : ip_addresses)
    if (!ip.empty() && ip.find('%') == std::string::npos && seen.insert(ip).second)
      san += ",IP:" + ip;
  GPUCLOUD_TRY(add_san(cert.get(), san));
  if (!X509_sign(cert.get(), key.get(), EVP_sha256()))
    return internal("cannot sign the self-signed certificate");

  // The key is readable by its owner only, from the moment it exists.
  mode_t old_mask = ::umask(0077);
  std::unique_ptr<FILE, FileCloser> kf(std::fopen(key_path.c_str(), "w"));
  ::umask(old_mask);
  if (!kf) return internal(fmt::format("cannot write the TLS key {}", key_path));
  if (!PEM_write_PrivateKey(kf.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr))
    return internal(fmt::format("cannot write the TLS key {}", key_path));
  ::chmod(key_path.c_str(), 0600);
  std::unique_ptr<FILE, FileCloser> cf(std::fopen(cert_path.c_str(), "w"));
  if (!cf || !PEM_write_X509(cf.get(), cert.get()))
    return internal(fmt::format("cannot write the TLS certificate {}", cert_path));
  ::chmod(cert_path.c_str(), 0644);
  return {};
}

std::string der_fingerprint_hex(const unsigned char* der, int length) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(der, static_cast<size_t>(length), digest);
  std::string out;
  for (unsigned char c : digest) out += fmt::format("{:02x}", c);
  return out;
}

Result<std::string> certificate_fingerprint(const std::string& cert_path) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(cert_path.c_str(), "r"));
  if (!f) return invalid(fmt::format("cannot read the certificate {}", cert_path));
  CertPtr cert(PEM_read_X509(f.get(), nullptr, nullptr, nullptr));
  if (!cert) return invalid(fmt::format("{} holds no PEM certificate", cert_path));
  unsigned char* der = nullptr;
  int len = i2d_X509(cert.get(), &der);
  if (len <= 0) return internal(fmt::format("cannot encode the certificate {}", cert_path));
  std::string hex = der_fingerprint_hex(der, len);
  OPENSSL_free(der);
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    if (i) out += ':';
    out += static_cast<char>(std::toupper(hex[i]));
    out += static_cast<char>(std::toupper(hex[i + 1]));
  }
  return out;
}

Result<int64_t> certificate_not_after(const std::string& cert_path) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(cert_path.c_str(), "r"));
  if (!f) return invalid(fmt::format("cannot read the certificate {}", cert_path));
  CertPtr cert(PEM_read_X509(f.get(), nullptr, nullptr, nullptr));
  if (!cert) return invalid(fmt::format("{} holds no PEM certificate", cert_path));
  struct tm end {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &end) != 1)
    return invalid(fmt::format("{}: cannot read the certificate's expiry time", cert_path));
  return static_cast<int64_t>(timegm(&end));
}

Result<std::string> fingerprint_normalize(const std::string& text) {
  std::string t = text;
  if (t.size() > 7) {
    std::string head = t.substr(0, 7);
    for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (head == "sha256:") t = t.substr(7);
  }
  std::string out;
  for (char c : t) {
    if (c == ':' || c == ' ') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      out.clear();
      break;
    }
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (out.size() != 64)
    return invalid(fmt::format(
        "fingerprint '{}' is not a SHA-256 fingerprint (64 hex digits, colons allowed); copy the "
        "one `gpucloud server` printed at start",
        text));
  return out;
}

std::vector<std::string> local_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || !(a->ifa_flags & IFF_UP)) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      auto* sin = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
      if (::inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf)) out.emplace_back(buf);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(a->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr)) continue;
      if (::inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf)) out.emplace_back(buf);
    }
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace gpucloud::net
