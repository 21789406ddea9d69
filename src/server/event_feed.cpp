#include "server/event_feed.h"

#include <algorithm>

namespace gpucloud::server {

bool FeedFilter::matches(const FeedEvent& e) const {
  if (!kind.empty() && e.kind != kind) return false;
  if (!job.empty() && e.job != job) return false;
  if (!node.empty() && e.node != node) return false;
  if (!tenant.empty() && e.tenant != tenant) return false;
  if (e.kind == "job" && may_see_tenant && !may_see_tenant(e.tenant)) return false;
  return true;
}

void EventFeed::publish(FeedEvent event) {
  event.seq = next_seq_++;
  events_.push_back(std::move(event));
  while (events_.size() > capacity_) events_.pop_front();
  // Waiters may register again while being woken: wake only those registered before.
  auto woken = std::move(waiters_);
  waiters_.clear();
  for (auto& [id, fn] : woken) fn();
}

FeedPage EventFeed::read_after(int64_t after, const FeedFilter& filter, size_t limit) const {
  FeedPage page;
  page.next = std::max<int64_t>(after, 0);
  if (events_.empty() || after >= events_.back().seq) return page;
  int64_t oldest = events_.front().seq;
  if (after < oldest - 1) page.missed = oldest - 1 - std::max<int64_t>(after, 0);
  size_t first = after < oldest ? 0 : static_cast<size_t>(after - oldest + 1);
  for (size_t i = first; i < events_.size(); ++i) {
    const FeedEvent& e = events_[i];
    page.next = e.seq;
    if (!filter.matches(e)) continue;
    page.events.push_back(e);
    if (page.events.size() >= limit) break;
  }
  return page;
}

FeedPage EventFeed::read_newest(const FeedFilter& filter, size_t limit) const {
  FeedPage page;
  page.next = head();
  for (auto it = events_.rbegin(); it != events_.rend() && page.events.size() < limit; ++it)
    if (filter.matches(*it)) page.events.push_back(*it);
  std::reverse(page.events.begin(), page.events.end());
  return page;
}

uint64_t EventFeed::on_next_publish(std::function<void()> fn) {
  uint64_t id = next_waiter_++;
  waiters_.emplace(id, std::move(fn));
  return id;
}

}  // namespace gpucloud::server
