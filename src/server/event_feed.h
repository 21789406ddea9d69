// EventFeed: the cluster's recent events, job lifecycle and node changes, numbered in order,
// for `gpucloud events -f` (GET /v1/events, long-poll). In memory only: a bounded ring of the
// newest events, so a follower that falls too far behind is told how many it missed.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"

namespace gpucloud::server {

/// One event of the feed.
struct FeedEvent {
  int64_t seq = 0;     // 1, 2, ... in publishing order (set by publish)
  TimeMs at = 0;       // when it happened
  std::string kind;    // "job" or "node"
  std::string type;    // a job event type (submitted, placed, running, ...) or a node change
                       // (joined, ready, cordoned, draining, interrupting, leaving, left, ...)
  std::string job;     // job id, for job events
  std::string tenant;  // the job's tenant, for job events
  std::string node;    // node name: for node events, and job events that name one
  std::string message;
};

/// Which events a reader wants; an empty field matches everything.
struct FeedFilter {
  std::string job;
  std::string node;
  std::string tenant;
  std::string kind;
  /// Whether a job event of this tenant may be shown to the reader (its access, not its wish).
  std::function<bool(const std::string& tenant)> may_see_tenant;
  bool matches(const FeedEvent& e) const;
};

/// What a read found.
struct FeedPage {
  std::vector<FeedEvent> events;  // oldest first
  int64_t next = 0;               // the `after` of the next read
  int64_t missed = 0;             // events after `after` that have left the ring unread
};

/// Not thread-safe: the server uses it from its event loop only.
class EventFeed {
 public:
  explicit EventFeed(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}
  static constexpr size_t kDefaultCapacity = 20'000;

  /// Appends an event (its seq is assigned) and wakes every waiter.
  void publish(FeedEvent event);
  /// Up to `limit` matching events with seq > after, oldest first.
  FeedPage read_after(int64_t after, const FeedFilter& filter, size_t limit) const;
  /// The newest `limit` matching events, oldest first; next is the newest seq.
  FeedPage read_newest(const FeedFilter& filter, size_t limit) const;
  /// The seq of the newest event (0 when none yet).
  int64_t head() const { return next_seq_ - 1; }

  /// Calls fn once, at the next publish. Returns an id for cancel_waiter().
  uint64_t on_next_publish(std::function<void()> fn);
  /// Forgets a waiter whose poll ended.
  void cancel_waiter(uint64_t id) { waiters_.erase(id); }
  size_t waiter_count() const { return waiters_.size(); }

 private:
  size_t capacity_;
  std::deque<FeedEvent> events_;
  int64_t next_seq_ = 1;
  uint64_t next_waiter_ = 1;
  std::map<uint64_t, std::function<void()>> waiters_;
};

}  // namespace gpucloud::server
