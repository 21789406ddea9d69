// Job users: which uid/gid each job runs as on this node (docs/security.md, "Job code").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpucloud::agent {

/// The uids (and equal gids) the agent hands out to tenants without a configured uid.
struct JobUidRange {
  int64_t first = 200000;
  int64_t last = 299999;
};

/// Parses "FIRST-LAST" (e.g. "60000-60999"): ids 1..4294967294, FIRST <= LAST.
Result<JobUidRange> parse_job_uid_range(const std::string& text);

/// The ids a job runs as.
struct JobIds {
  int64_t uid = -1;
  int64_t gid = -1;
};

/// Picks the ids for a job: root when the allocation allows it, the tenant's configured uid/gid
/// when it has one, else the uid this node gave the tenant before (tenant_uids, persisted in
/// the agent state) or a free one of the range, recorded in tenant_uids. The search starts at
/// a place given by a hash of the tenant's name, so nodes mostly agree on a tenant's uid; only
/// a configured uid is the same on every node for sure. An id is free
/// when no tenant in tenant_uids has it and id_taken(id) is false (the host uses it). Fails
/// when the range is exhausted or a configured uid is another tenant's here.
Result<JobIds> job_ids_for(const Allocation& a, const JobUidRange& range,
                           std::map<std::string, int64_t>& tenant_uids,
                           const std::function<bool(int64_t)>& id_taken);

/// True when the host already uses `id`: a user or group in /etc/passwd or /etc/group (or NSS),
/// or a subordinate id range in /etc/subuid or /etc/subgid.
bool host_id_taken(int64_t id);

}  // namespace gpucloud::agent
