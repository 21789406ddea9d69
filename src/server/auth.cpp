#include "server/auth.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"
#include "net/crypto.h"

namespace gpucloud::server {

bool Principal::may_act_for(const std::string& tenant) const {
  return is_admin() || std::find(tenants.begin(), tenants.end(), tenant) != tenants.end();
}

void Authenticator::set_tokens(const std::vector<store::TokenRecord>& tokens) {
  tokens_.clear();
  for (const auto& t : tokens) tokens_[t.sha256] = t;
}

void Authenticator::set_node_credential(const std::string& sha256, const std::string& node_id,
                                        const std::string& node_name) {
  auto& current = credential_of_node_[node_id];
  if (!current.empty()) nodes_.erase(current);  // the old one stops working
  current = sha256;
  nodes_[sha256] = Principal{node_name, "node", {}, node_id};
}

void Authenticator::remove_node_credential(const std::string& node_id) {
  auto it = credential_of_node_.find(node_id);
  if (it == credential_of_node_.end()) return;
  nodes_.erase(it->second);
  credential_of_node_.erase(it);
}

std::optional<Principal> Authenticator::authenticate(const std::string& header, TimeMs now) const {
  const std::string prefix = "Bearer ";
  if (header.size() <= prefix.size() || header.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  std::string hash = net::sha256_hex(header.substr(prefix.size()));
  if (auto it = nodes_.find(hash); it != nodes_.end()) return it->second;
  auto it = tokens_.find(hash);
  if (it == tokens_.end()) return std::nullopt;
  const auto& t = it->second;
  if (t.revoked || (t.expires_at != 0 && t.expires_at <= now)) return std::nullopt;
  return Principal{t.name, t.role, t.tenants, ""};
}

std::string Authenticator::rejection(const std::string& header, TimeMs now) const {
  const std::string prefix = "Bearer ";
  if (header.size() <= prefix.size() || header.compare(0, prefix.size(), prefix) != 0) return "";
  auto it = tokens_.find(net::sha256_hex(header.substr(prefix.size())));
  if (it == tokens_.end()) return "";
  const auto& t = it->second;
  std::string fix = t.role == "agent"
                        ? "ask an admin for a new one: gpucloud token create --role agent"
                        : "ask an admin for a new token";
  if (t.revoked) return fmt::format("token '{}' was revoked; {}", t.name, fix);
  if (t.expires_at != 0 && t.expires_at <= now)
    return fmt::format("token '{}' expired {} ago; {}", t.name,
                       format_duration_ms(now - t.expires_at), fix);
  return "";
}

}  // namespace gpucloud::server
