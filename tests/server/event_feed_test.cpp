// EventFeed: order, filters, the bounded ring's missed count, and long-poll waiters.
#include "server/event_feed.h"

#include <gtest/gtest.h>

namespace gpucloud::server {
namespace {

FeedEvent job_event(const std::string& job, const std::string& tenant, const std::string& type) {
  return {0, 1000, "job", type, job, tenant, "node-1", ""};
}

std::vector<int64_t> seqs(const FeedPage& page) {
  std::vector<int64_t> out;
  for (const auto& e : page.events) out.push_back(e.seq);
  return out;
}

TEST(EventFeed, ReadsAfterASeqInOrderWithFilters) {
  EventFeed feed;
  feed.publish(job_event("a", "vision", "submitted"));
  feed.publish({0, 1001, "node", "cordoned", "", "", "node-2", "by admin"});
  feed.publish(job_event("b", "nlp", "submitted"));
  feed.publish(job_event("a", "vision", "placed"));
  EXPECT_EQ(feed.head(), 4);
  EXPECT_EQ(seqs(feed.read_after(0, {}, 100)), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(seqs(feed.read_after(2, {}, 100)), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(seqs(feed.read_after(0, {}, 2)), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(feed.read_after(0, {}, 2).next, 2);
  FeedFilter only_a;
  only_a.job = "a";
  EXPECT_EQ(seqs(feed.read_after(0, only_a, 100)), (std::vector<int64_t>{1, 4}));
  // Skipped events still move `next`, so a filtered follower does not read them again.
  EXPECT_EQ(feed.read_after(1, only_a, 100).next, 4);
  FeedFilter nodes;
  nodes.kind = "node";
  EXPECT_EQ(seqs(feed.read_after(0, nodes, 100)), (std::vector<int64_t>{2}));
  FeedFilter member;
  member.may_see_tenant = [](const std::string& t) { return t == "vision"; };
  EXPECT_EQ(seqs(feed.read_after(0, member, 100)), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(seqs(feed.read_newest(member, 2)), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(feed.read_newest(member, 2).next, 4);
  EXPECT_TRUE(feed.read_after(4, {}, 100).events.empty());
  EXPECT_EQ(feed.read_after(4, {}, 100).next, 4);
}

TEST(EventFeed, AFollowerThatFellBehindTheRingIsToldHowManyItMissed) {
  EventFeed feed(3);
  for (int i = 0; i < 10; ++i) feed.publish(job_event("a", "t", "e" + std::to_string(i)));
  FeedPage page = feed.read_after(2, {}, 100);
  EXPECT_EQ(seqs(page), (std::vector<int64_t>{8, 9, 10}));
  EXPECT_EQ(page.missed, 5);  // 3..7 left the ring unread
  EXPECT_EQ(feed.read_after(7, {}, 100).missed, 0);
}

TEST(EventFeed, WaitersAreWokenOnceByTheNextPublishAndCanBeCancelled) {
  EventFeed feed;
  int woken = 0, cancelled_woken = 0;
  feed.on_next_publish([&] { ++woken; });
  uint64_t id = feed.on_next_publish([&] { ++cancelled_woken; });
  feed.cancel_waiter(id);
  EXPECT_EQ(feed.waiter_count(), 1u);
  feed.publish(job_event("a", "t", "submitted"));
  feed.publish(job_event("a", "t", "placed"));
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(cancelled_woken, 0);
  EXPECT_EQ(feed.waiter_count(), 0u);
  // A waiter that registers again while woken waits for the publish after.
  std::function<void()> again = [&] {
    ++woken;
    if (woken < 3) feed.on_next_publish(again);
  };
  feed.on_next_publish(again);
  feed.publish(job_event("a", "t", "running"));
  EXPECT_EQ(woken, 2);
  feed.publish(job_event("a", "t", "exited"));
  EXPECT_EQ(woken, 3);
}

}  // namespace
}  // namespace gpucloud::server
