#include "agent/job_users.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>

#include <fstream>
#include <sstream>

namespace gpucloud::agent {

namespace {

constexpr int64_t kMaxId = 4294967294LL;

// True when `id` lies in a "name:first:count" range of /etc/subuid or /etc/subgid.
bool in_subordinate_range(const char* path, int64_t id) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, first, count;
    if (!std::getline(fields, name, ':') || !std::getline(fields, first, ':') ||
        !std::getline(fields, count))
      continue;
    try {
      int64_t f = std::stoll(first), c = std::stoll(count);
      if (id >= f && id < f + c) return true;
    } catch (...) {
    }
  }
  return false;
}

}  // namespace

Result<JobUidRange> parse_job_uid_range(const std::string& text) {
  auto bad = [&] {
    return invalid(fmt::format(
        "--job-uid-range '{}': expected FIRST-LAST with ids 1..4294967294, e.g. 200000-299999",
        text));
  };
  auto dash = text.find('-');
  if (dash == std::string::npos) return bad();
  JobUidRange range;
  try {
    size_t used = 0;
    range.first = std::stoll(text.substr(0, dash), &used);
    if (used != dash) return bad();
    std::string rest = text.substr(dash + 1);
    range.last = std::stoll(rest, &used);
    if (used != rest.size()) return bad();
  } catch (...) {
    return bad();
  }
  if (range.first < 1 || range.last > kMaxId || range.first > range.last) return bad();
  return range;
}

Result<JobIds> job_ids_for(const Allocation& a, const JobUidRange& range,
                           std::map<std::string, int64_t>& tenant_uids,
                           const std::function<bool(int64_t)>& id_taken) {
  if (a.allow_root) return JobIds{0, 0};
  auto owner_of = [&](int64_t uid) -> const std::string* {
    for (const auto& [tenant, id] : tenant_uids)
      if (id == uid && tenant != a.tenant) return &tenant;
    return nullptr;
  };
  if (a.uid > 0) {
    if (const std::string* other = owner_of(a.uid))
      return Error{ErrorCode::kConflict,
                   fmt::format("tenant {} is configured with uid {}, which this node gave to "
                               "tenant {}; configure uids outside the agents' --job-uid-range",
                               a.tenant, a.uid, *other)};
    tenant_uids[a.tenant] = a.uid;
    return JobIds{a.uid, a.gid > 0 ? a.gid : a.uid};
  }
  if (auto it = tenant_uids.find(a.tenant); it != tenant_uids.end()) {
    if (it->second >= range.first && it->second <= range.last)
      return JobIds{it->second, it->second};
  }
  // Starts at a place given by the tenant's name, so that nodes which see the same tenants
  // mostly agree on its uid (files a job writes on shared storage stay its own on every node).
  const int64_t size = range.last - range.first + 1;
  uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : a.tenant) h = (h ^ c) * 1099511628211ull;
  const int64_t start = static_cast<int64_t>(h % static_cast<uint64_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    int64_t id = range.first + (start + i) % size;
    if (owner_of(id) != nullptr || id_taken(id)) continue;
    tenant_uids[a.tenant] = id;
    return JobIds{id, id};
  }
  return Error{ErrorCode::kUnavailable,
               fmt::format("no free uid left in --job-uid-range {}-{} for tenant '{}' ({} tenants "
                           "hold one here); widen the range or configure the tenant's uid",
                           range.first, range.last, a.tenant, tenant_uids.size())};
}

bool host_id_taken(int64_t id) {
  auto uid = static_cast<uid_t>(id);
  auto gid = static_cast<gid_t>(id);
  return ::getpwuid(uid) != nullptr || ::getgrgid(gid) != nullptr ||
         in_subordinate_range("/etc/subuid", id) || in_subordinate_range("/etc/subgid", id);
}

}  // namespace gpucloud::agent
