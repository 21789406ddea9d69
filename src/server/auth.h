// Bearer-token authentication. Tokens are stored as their SHA-256, never in clear.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/state_store.h"

namespace gpucloud::server {

/// Who is calling.
struct Principal {
  std::string name;
  std::string role;  // admin | member | agent | node
  std::vector<std::string> tenants;
  std::string node_id;  // for role "node"

  bool is_admin() const { return role == "admin"; }
  /// Whether the caller may see and act on jobs of this tenant.
  bool may_act_for(const std::string& tenant) const;
};

/// Maps presented tokens to principals.
class Authenticator {
 public:
  /// Replaces the known API tokens.
  void set_tokens(const std::vector<store::TokenRecord>& tokens);
  /// Adds or replaces one node credential (by hash).
  void set_node_credential(const std::string& sha256, const std::string& node_id,
                           const std::string& node_name);
  /// Forgets the node's credential (the node was removed): it is refused from now on.
  void remove_node_credential(const std::string& node_id);
  /// The principal for an "Authorization: Bearer ..." header value, or nullopt.
  std::optional<Principal> authenticate(const std::string& authorization_header, TimeMs now) const;
  /// Why a known token was refused (revoked, expired) with what to do, or "" when the token is
  /// unknown or valid.
  std::string rejection(const std::string& authorization_header, TimeMs now) const;

 private:
  std::unordered_map<std::string, store::TokenRecord> tokens_;
  std::unordered_map<std::string, Principal> nodes_;
  std::unordered_map<std::string, std::string> credential_of_node_;  // node id -> key in nodes_
};

}  // namespace gpucloud::server
