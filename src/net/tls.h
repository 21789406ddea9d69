// TLS helpers on OpenSSL that need no Asio: a self-signed certificate for a server that was
// given none, and SHA-256 certificate fingerprints for pinning.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpucloud::net {

/// How a client decides to trust an https:// server. With neither field set, the system's
/// trust store is used (and the server name is checked against the certificate).
struct TlsClientOptions {
  std::string ca_file;      // PEM file of the CA (or the server's own self-signed cert)
  std::string fingerprint;  // the server certificate's SHA-256, in any form fingerprint_normalize
                            // accepts; when set, only that exact certificate is trusted
};

/// Writes a new EC P-256 key (mode 0600) and a self-signed certificate valid for ten years to
/// the two paths. The certificate names "localhost" and each entry of ip_addresses and
/// dns_names as subject alternative names.
Status generate_self_signed(const std::string& cert_path, const std::string& key_path,
                            const std::vector<std::string>& ip_addresses,
                            const std::vector<std::string>& dns_names);

/// The SHA-256 fingerprint of the first certificate in a PEM file, as OpenSSL prints it
/// ("AB:CD:...", 95 characters).
Result<std::string> certificate_fingerprint(const std::string& cert_path);

/// When the first certificate in a PEM file expires (its notAfter), in seconds since the epoch.
Result<int64_t> certificate_not_after(const std::string& cert_path);

/// The SHA-256 of a DER-encoded certificate, as 64 lower-case hex digits.
std::string der_fingerprint_hex(const unsigned char* der, int length);

/// Normalises a fingerprint for comparison: drops an optional "sha256:" prefix, colons and
/// spaces, and lower-cases it. Fails unless 64 hex digits remain.
Result<std::string> fingerprint_normalize(const std::string& text);

/// The addresses of this machine's up interfaces (IPv4 and IPv6, loopback included).
std::vector<std::string> local_addresses();

}  // namespace gpucloud::net
