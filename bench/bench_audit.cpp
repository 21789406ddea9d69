// The audit log's cost on a submission's commit (issue: observability, "audit appends cost
// <= 5 % of submit throughput"): the store commits what a submit commits — the job and, or not,
// its audit entry (chained: a head lookup and a SHA-256) — alternately in rounds, and prints
// the median commit time of each and their ratio. Durable commits (synchronous=FULL), one
// SQLite file in /tmp.
// Usage: bench_audit [--commits N] [--batch B]   (default 2000 of each, 1 submission per
// commit; under load the server commits the submissions that arrive together in one
// transaction, B of them)
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "store/state_store.h"

using namespace gpucloud;

int main(int argc, char** argv) {
  int commits = 2000, per_commit = 1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--commits") == 0) commits = std::max(10, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--batch") == 0) per_commit = std::max(1, std::atoi(argv[i + 1]));
  }
  char tmpl[] = "/tmp/gpucloud-bench-audit-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string dir = tmpl;
  auto store = store::open_sqlite_store(dir + "/state.db");
  if (!store) return std::fprintf(stderr, "%s\n", store.error().message.c_str()), 1;
  Job job;
  job.spec.command = {"python3", "train.py"};
  job.spec.name = "train";
  job.spec.tenant = "vision";
  std::vector<double> plain, audited;
  for (int i = 0; i < 2 * commits; ++i) {
    bool with_audit = i % 2 == 1;
    store::WriteBatch batch;
    for (int k = 0; k < per_commit; ++k) {
      job.id = "job-" + std::to_string(i) + "-" + std::to_string(k);
      job.created_at = i;
      batch.jobs.push_back(job);
      if (with_audit)
        batch.audit.push_back({i, "alice", "job.submit", job.id, "tenant vision name train",
                               "member", "10.0.0.7", "vision"});
    }
    auto start = std::chrono::steady_clock::now();
    if (auto st = (*store)->commit(batch); !st.ok())
      return std::fprintf(stderr, "%s\n", st.error().message.c_str()), 1;
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    (with_audit ? audited : plain).push_back(us);
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  double p = median(plain), a = median(audited);
  std::printf(
      "commit of %d job(s): median %.1f us; with their chained audit entries: median "
      "%.1f us; ratio %.3f (%d of each)\n",
      per_commit, p, a, a / p, commits);
  std::printf(
      "{\"batch\": %d, \"plain_us\": %.1f, \"audited_us\": %.1f, \"ratio\": %.4f, "
      "\"commits\": %d}\n",
      per_commit, p, a, a / p, commits);
  store->reset();
  std::filesystem::remove_all(dir);
  return 0;
}
