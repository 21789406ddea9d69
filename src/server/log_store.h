// LogStore: the server's copy of every replica's output, shipped in chunks by agents.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpucloud::server {

/// Logs live in <dir>/<job>.<attempt>.<rank>.log. Appends are idempotent by offset.
class LogStore {
 public:
  explicit LogStore(std::string dir) : dir_(std::move(dir)) {}
  /// Appends what of data (the log's bytes from offset on) lies past the current size; a chunk
  /// that starts past it is ignored. Returns the size afterwards (the offset the agent must
  /// continue from).
  Result<int64_t> append(const std::string& key, int64_t offset, const std::string& data);
  /// The current size of a replica's log (0 when none).
  int64_t size(const std::string& key);
  /// Up to max_bytes from offset.
  Result<std::string> read(const std::string& key, int64_t offset, int64_t max_bytes);
  /// Calls fn once, the next time the log of key grows (long-poll of `logs -f`). Returns an id
  /// for cancel_waiter().
  uint64_t on_next_append(const std::string& key, std::function<void()> fn);
  /// Forgets a waiter that is no longer needed (its poll timed out).
  void cancel_waiter(const std::string& key, uint64_t id);
  /// Wakes every waiter of key (when its replica ends, so followers see the end).
  void wake(const std::string& key);
  /// Forgets the cached size of a log that will not grow any more (the file stays).
  void forget(const std::string& key) { sizes_.erase(key); }

 private:
  std::string path_for(const std::string& key) const;
  std::string dir_;
  bool dir_made_ = false;
  std::map<std::string, int64_t> sizes_;
  std::multimap<std::string, std::pair<uint64_t, std::function<void()>>> waiters_;
  uint64_t next_waiter_ = 1;
};

}  // namespace gpucloud::server
