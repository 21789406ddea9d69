// WaitIndex against a plain list: after random adds and removes, every query answers what a walk
// of all jobs in queue order answers, and the blocks' summaries match their jobs. Jobs of wait
// classes marked waiting are refused, as the scheduler's accept() refuses them; accept() is asked
// in queue order.
#include "sched/wait_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace gpucloud::sched {
namespace {

struct Job {
  int tenant = 0, signature = 0;
  int priority = 0;
  int64_t rank = 0;
  int64_t created_at = 0;
  std::string id;
  WaitNeed need;
  int wait_class = -1;
  bool refused = false;  // what the query's accept() says no to
  QueueKey key() const {
    QueueKey k{priority, rank, created_at, &id};
    k.set_id_prefix(id);
    return k;
  }
};

// The jobs that `in` selects, in queue order.
template <typename In>
std::vector<const Job*> in_queue_order(const std::list<Job>& jobs, In in) {
  std::vector<const Job*> out;
  for (const auto& j : jobs)
    if (in(j)) out.push_back(&j);
  std::sort(out.begin(), out.end(), [](const Job* a, const Job* b) { return a->key() < b->key(); });
  return out;
}

// What a query must answer, by a walk: the first job of `queue` after `after` (nullptr: from
// the start) that is not refused and that one of `caps_of(job)` admits.
template <typename CapsOf>
const Job* first_admitted_by_walk(const std::vector<const Job*>& queue, const Job* after,
                                  CapsOf caps_of) {
  for (const Job* j : queue) {
    if (after && !(after->key() < j->key())) continue;
    const std::vector<WaitCapacity>& caps = caps_of(*j);
    bool admitted = std::any_of(caps.begin(), caps.end(), [&](const WaitCapacity& cap) {
      return cap.admits(j->need, j->priority);
    });
    if (!j->refused && admitted) return j;
  }
  return nullptr;
}

WaitNeed random_need(std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  WaitNeed n;
  if (pick(4) == 0)
    n.share_milli = 100 * (1 + pick(9));
  else
    n.whole_gpus = pick(9);
  n.cpu_milli = 1000 * (1 + pick(64));
  n.memory_mib = 1024 * (1 + pick(512));
  n.quota_each = n.share_milli > 0 ? n.share_milli : n.whole_gpus * 1000;
  n.quota_milli = n.quota_each * (1 + pick(3));  // replicas
  n.runtime_ms = pick(3) == 0 ? 0 : 60'000 * (1 + pick(120));
  n.spot = pick(5) == 0;
  return n;
}

WaitCapacity random_capacity(std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  WaitCapacity c;
  c.whole_gpus = pick(9);
  c.max_free_milli = 100 * pick(11);
  c.cpu_milli = 1000 * pick(70);
  c.memory_mib = 1024 * pick(600);
  if (pick(3) == 0) c.quota_milli = 1000 * pick(10);
  if (pick(4) == 0) c.runtime_limit = 60'000 * pick(100);
  if (pick(3) == 0) c.min_priority = pick(3) * 100 - 1;
  if (pick(5) == 0) c.spot_excluded_priority = pick(3) * 100;
  if (pick(6) == 0) c.quota_blocked_above = 1000 * pick(4);
  return c;
}

TEST(QueueKey, TheIdPrefixOrdersAsTheIdDoes) {
  // Ties of priority, rank and age: the order must be the ids' order, prefix or not.
  std::vector<std::string> ids = {"",
                                  "a",
                                  "ab",
                                  "ab\x01",
                                  "abcdefgh",
                                  "abcdefgh0",
                                  "abcdefghijklmnop",
                                  "abcdefghijklmnopq",
                                  "abcdefghijklmnopr",
                                  "\xff",
                                  "01a234867e817009a0a5c749e1868ff4",
                                  "01a234867e817009a0a5c749e1868ff5",
                                  "01a234867e81700aa0a5c749e1868ff4"};
  for (const auto& a : ids)
    for (const auto& b : ids) {
      QueueKey x{0, 0, 0, &a}, y{0, 0, 0, &b};
      x.set_id_prefix(a);
      y.set_id_prefix(b);
      EXPECT_EQ(x < y, a < b) << "'" << a << "' against '" << b << "'";
    }
}

TEST(WaitIndex, AnswersAsAWalkOfEveryJobInQueueOrder) {
  std::mt19937 rng(11);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::list<Job> jobs;  // stable addresses: the index keeps pointers to them
  WaitIndex index;
  int next_id = 0, found = 0, queries = 0;
  // (tenant, signature, wait class, ends before the reservation)
  std::set<std::tuple<int, int, int, bool>> marked;
  int64_t limit = -1;  // jobs with a runtime up to it end before the reservation
  auto ends_before = [&](const Job& j) {
    return j.need.runtime_ms > 0 && j.need.runtime_ms <= limit;
  };
  auto waits = [&](const Job& j) {
    return j.wait_class >= 0 && marked.count({j.tenant, j.signature, j.wait_class, ends_before(j)});
  };
  int skipped_by_mark = 0;
  int asked_across = 0;  // tenant queries that asked about more than one job
  std::map<std::tuple<int, int, int>, std::pair<WaitNeed, int>> classes;  // need, priority
  for (int round = 0; round < 4000; ++round) {
    if (jobs.empty() || pick(3) != 0) {
      Job j;
      j.tenant = pick(3);
      j.signature = pick(4);
      j.priority = 100 * pick(3);
      j.rank = pick(3) == 0 ? 0 : pick(4);  // ranks of a queue policy, often equal
      j.created_at = pick(50);              // many equal times: ids decide
      j.id = "job-" + std::to_string(next_id++ * 7919 % 100003);
      j.need = random_need(rng);
      // Few classes, but more than a partition has bits for in signature 3. A class's jobs
      // have one need and priority; their runtimes differ.
      j.wait_class = pick(10) == 0 ? -1 : j.signature == 3 ? pick(300) : pick(6);
      if (j.wait_class >= 0) {
        auto [known, fresh] = classes.try_emplace({j.tenant, j.signature, j.wait_class},
                                                  std::pair{j.need, j.priority});
        int64_t runtime = j.need.runtime_ms;
        std::tie(j.need, j.priority) = known->second;
        j.need.runtime_ms = runtime;
      }
      jobs.push_back(j);
      index.add(j.tenant, j.signature, jobs.back().key(), j.need, &jobs.back(), j.wait_class);
    } else {
      auto it = std::next(jobs.begin(), pick(static_cast<int>(jobs.size())));
      index.remove(it->tenant, it->signature, it->key());
      jobs.erase(it);
    }
    ASSERT_EQ(index.size(), jobs.size());
    if (round % 50 == 0) {
      ASSERT_TRUE(index.consistent()) << "round " << round;
    }
    if (pick(4) != 0) {  // marks kept for some rounds
      limit = pick(3) == 0 ? -1 : 60'000 * pick(150);
      index.clear_waiting(limit);
      marked.clear();
    }
    for (int k = pick(6); k > 0 && !jobs.empty(); --k) {
      const Job& j = *std::next(jobs.begin(), pick(static_cast<int>(jobs.size())));
      if (j.wait_class < 0) continue;
      bool both = pick(3) == 0;  // both kinds of the class
      for (bool before : {false, true})
        if (both || before == ends_before(j)) {
          index.mark_waiting(j.tenant, j.signature, j.wait_class, before);
          marked.insert({j.tenant, j.signature, j.wait_class, before});
        }
    }
    for (auto& j : jobs) {
      j.refused = pick(8) == 0;
      if (waits(j)) {
        j.refused = true;
        ++skipped_by_mark;
      }
    }
    // A query per partition, from the start or after a random job of it.
    for (int tenant = 0; tenant < 3; ++tenant)
      for (const auto& [signature, partition] : index.partitions_of(tenant)) {
        std::vector<const Job*> part = in_queue_order(
            jobs, [&](const Job& j) { return j.tenant == tenant && j.signature == signature; });
        // One to three capacities at once.
        std::vector<WaitCapacity> caps;
        for (int k = 1 + pick(3); k > 0; --k) caps.push_back(random_capacity(rng));
        std::vector<const WaitCapacity*> cap_ptrs;
        for (const auto& cap : caps) cap_ptrs.push_back(&cap);
        const Job* after =
            pick(2) && !part.empty() ? part[pick(static_cast<int>(part.size()))] : nullptr;
        QueueKey after_key = after ? after->key() : QueueKey{};
        const Job* expected = first_admitted_by_walk(
            part, after, [&](const Job&) -> auto& { return caps; });
        bool may_admit = std::any_of(caps.begin(), caps.end(), [&](const WaitCapacity& cap) {
          return index.may_admit(partition, cap);
        });
        if (expected) {
          ASSERT_TRUE(may_admit) << "round " << round;
        }
        auto accept = [](void* owner) { return !static_cast<Job*>(owner)->refused; };
        void* got = index.first_admitted(partition, after ? &after_key : nullptr, cap_ptrs, accept);
        ++queries;
        found += expected != nullptr;
        ASSERT_EQ(got, static_cast<const void*>(expected))
            << "round " << round << " tenant " << tenant << " signature " << signature;
        QueueKey first_key;
        void* first = index.first_after(partition, nullptr, &first_key);
        ASSERT_EQ(first, static_cast<const void*>(part.front()));
      }
    // A query over all of a tenant's partitions at once, each with its own capacities: the
    // first job in the tenant's queue order that its partition's capacities admit.
    for (int tenant = 0; tenant < 3; ++tenant) {
      std::map<int, std::vector<WaitCapacity>> caps;  // by signature
      std::vector<WaitIndex::PartitionQuery> all;
      for (const auto& [signature, partition] : index.partitions_of(tenant))
        for (int k = pick(3); k > 0; --k) caps[signature].push_back(random_capacity(rng));
      for (const auto& [signature, partition] : index.partitions_of(tenant)) {
        WaitIndex::PartitionQuery q{partition, {}};
        for (const auto& cap : caps[signature]) q.caps.push_back(&cap);
        if (!q.caps.empty()) all.push_back(std::move(q));
      }
      std::vector<const Job*> queue =
          in_queue_order(jobs, [&](const Job& j) { return j.tenant == tenant; });
      const Job* after =
          pick(2) && !queue.empty() ? queue[pick(static_cast<int>(queue.size()))] : nullptr;
      QueueKey after_key = after ? after->key() : QueueKey{};
      const Job* expected = first_admitted_by_walk(
          queue, after, [&](const Job& j) -> auto& { return caps[j.signature]; });
      // accept() is asked in queue order, up to the answer (the scheduler decides the jobs it
      // refuses as it meets them).
      std::vector<const Job*> asked;
      auto accept = [&](void* owner) {
        asked.push_back(static_cast<const Job*>(owner));
        return !static_cast<Job*>(owner)->refused;
      };
      void* got = index.first_admitted(all, after ? &after_key : nullptr, accept);
      ++queries;
      found += expected != nullptr;
      ASSERT_EQ(got, static_cast<const void*>(expected))
          << "round " << round << " tenant " << tenant;
      for (size_t i = 1; i < asked.size(); ++i)
        ASSERT_TRUE(asked[i - 1]->key() < asked[i]->key())
            << "round " << round << " tenant " << tenant << ": asked about " << asked[i - 1]->id
            << " before " << asked[i]->id;
      if (got) {
        ASSERT_EQ(asked.back(), got);
      }
      asked_across += asked.size() > 1;
    }
  }
  // The generator must give queries that find something and queries that do not.
  EXPECT_GT(found, queries / 10);
  EXPECT_GT(skipped_by_mark, 10000);
  EXPECT_GT(asked_across, 1000);
  EXPECT_LT(found, queries - queries / 10);
}

TEST(WaitIndex, AQueryResumedWhereTheLastStoppedAnswersAsOneFromTheStart) {
  // As the scheduler asks: one tenant's partitions with the same capacities, `after` moving on
  // to each answer once it is decided (or to a job before it decided first), classes marked
  // waiting as their jobs wait, and now and then a job added or removed.
  std::mt19937 rng(5);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::list<Job> jobs;
  WaitIndex index;
  int next_id = 0;
  auto add_job = [&] {
    Job j;
    j.signature = pick(3);
    j.priority = 100 * pick(2);
    j.created_at = pick(400);
    j.id = "job-" + std::to_string(next_id++);
    j.need = random_need(rng);
    j.wait_class = pick(8) == 0 ? -1 : pick(12);
    if (j.wait_class >= 0) {  // a class's jobs have one need (but the runtime) and priority
      for (const Job& other : jobs)
        if (other.signature == j.signature && other.wait_class == j.wait_class) {
          const int64_t runtime = j.need.runtime_ms;
          j.need = other.need;
          j.need.runtime_ms = runtime;
          j.priority = other.priority;
          break;
        }
    }
    jobs.push_back(j);
    index.add(0, j.signature, jobs.back().key(), j.need, &jobs.back(), j.wait_class);
  };
  for (int i = 0; i < 600; ++i) add_job();
  std::set<std::pair<int, int>> marked;  // (signature, wait class), for jobs of either kind
  auto waits = [&](const Job& j) {
    return j.wait_class >= 0 && marked.count({j.signature, j.wait_class}) > 0;
  };
  size_t asked_fresh = 0, asked_resumed = 0;
  int answers = 0, resumes = 0;
  for (int round = 0; round < 200; ++round) {
    std::map<int, std::vector<WaitCapacity>> caps;  // by signature
    std::vector<WaitIndex::PartitionQuery> all;
    for (const auto& [signature, partition] : index.partitions_of(0)) {
      for (int k = 1 + pick(3); k > 0; --k) caps[signature].push_back(random_capacity(rng));
      WaitIndex::PartitionQuery q{partition, {}};
      for (const auto& cap : caps[signature]) q.caps.push_back(&cap);
      all.push_back(std::move(q));
    }
    WaitIndex::Resume resume;  // (new capacities: a new one)
    index.clear_waiting(-1);
    marked.clear();
    for (auto& j : jobs) j.refused = pick(6) == 0;
    const Job* after = nullptr;
    QueueKey after_key;
    for (int step = 0; step < 60; ++step) {
      if (pick(12) == 0) {  // the index changes: the next query starts afresh
        if (pick(2) == 0) {
          add_job();
        } else {
          auto it = std::next(jobs.begin(), pick(static_cast<int>(jobs.size())));
          if (&*it != after) {
            index.remove(0, it->signature, it->key());
            jobs.erase(it);
          }
        }
      }
      if (pick(20) == 0) {  // marks cleared (a reservation made): the next query starts afresh
        index.clear_waiting(-1);
        marked.clear();
      }
      if (pick(6) == 0) {  // a job waits, and its class with it
        const Job& j = *std::next(jobs.begin(), pick(static_cast<int>(jobs.size())));
        if (j.wait_class >= 0) {
          for (bool before : {false, true})
            index.mark_waiting(0, j.signature, j.wait_class, before);
          marked.insert({j.signature, j.wait_class});
        }
      }
      std::vector<const Job*> queue = in_queue_order(jobs, [](const Job&) { return true; });
      const Job* expected = nullptr;
      for (const Job* j : queue) {
        if ((after && !(after->key() < j->key())) || j->refused || waits(*j)) continue;
        const auto& mine = caps[j->signature];
        if (std::any_of(mine.begin(), mine.end(), [&](const WaitCapacity& cap) {
              return cap.admits(j->need, j->priority);
            })) {
          expected = j;
          break;
        }
      }
      size_t* asked = &asked_fresh;
      auto accept = [&](void* owner) {
        ++*asked;
        return !static_cast<Job*>(owner)->refused;
      };
      void* fresh = index.first_admitted(all, after ? &after_key : nullptr, accept);
      asked = &asked_resumed;
      void* resumed = index.first_admitted(all, after ? &after_key : nullptr, accept, &resume);
      ASSERT_EQ(fresh, static_cast<const void*>(expected)) << "round " << round << " step " << step;
      ASSERT_EQ(resumed, static_cast<const void*>(expected))
          << "round " << round << " step " << step;
      resumes += resume.resumed();
      ASSERT_LE(asked_resumed, asked_fresh);  // (it asks again only about a listed job's answer)
      if (!expected) break;
      ++answers;
      // Decided: the answer, or (a job listed before it) one between the last and the answer.
      const Job* decided = expected;
      if (pick(4) == 0) {
        auto at = std::find(queue.begin(), queue.end(), expected);
        auto from =
            after ? std::upper_bound(queue.begin(), queue.end(), after,
                                     [](const Job* a, const Job* b) { return a->key() < b->key(); })
                  : queue.begin();
        if (at > from) decided = *(from + pick(static_cast<int>(at - from)));
      }
      const_cast<Job*>(decided)->refused = true;
      after = decided;
      after_key = after->key();
    }
  }
  EXPECT_GT(answers, 2000);
  EXPECT_GT(resumes, answers / 2);
}

TEST(WaitIndex, JobsOfAWaitingClassAreSkippedWithoutAskingAboutEach) {
  // 5,000 jobs of one class, then one of another: once the first class is marked waiting, the
  // query finds the last job without asking accept() about the others.
  std::list<Job> jobs;
  WaitIndex index;
  for (int i = 0; i <= 5000; ++i) {
    Job j;
    j.created_at = i;
    j.id = "job-" + std::to_string(i);
    j.need.whole_gpus = 1;
    j.need.cpu_milli = 1000;
    j.need.memory_mib = 1024;
    j.need.quota_each = j.need.quota_milli = 1000;
    j.wait_class = i < 5000 ? 7 : 8;
    jobs.push_back(j);
    index.add(0, 0, jobs.back().key(), j.need, &jobs.back(), j.wait_class);
  }
  WaitCapacity cap;
  cap.whole_gpus = 8;
  cap.max_free_milli = 1000;
  const int partition = index.partitions_of(0).at(0);
  int asked = 0;
  auto refuse_first_class = [&](void* owner) {
    ++asked;
    return static_cast<Job*>(owner)->wait_class != 7;
  };
  EXPECT_EQ(index.first_admitted(partition, nullptr, {&cap}, refuse_first_class), &jobs.back());
  EXPECT_EQ(asked, 5001);  // not marked: every job is asked about
  index.mark_waiting(0, 0, 7, false);
  asked = 0;
  EXPECT_EQ(index.first_admitted(partition, nullptr, {&cap}, refuse_first_class), &jobs.back());
  EXPECT_EQ(asked, 1);
  // Marks last until cleared.
  index.clear_waiting(-1);
  asked = 0;
  EXPECT_EQ(index.first_admitted(partition, nullptr, {&cap}, refuse_first_class), &jobs.back());
  EXPECT_EQ(asked, 5001);
  EXPECT_TRUE(index.consistent());

  // A partition of more classes than it has bits for: jobs of the later classes are asked
  // about one by one, marked or not.
  for (int c = 0; c < 300; ++c) {
    Job j;
    j.tenant = 1;
    j.created_at = c;
    j.id = "class-" + std::to_string(c);
    j.need = jobs.front().need;
    j.wait_class = c;
    jobs.push_back(j);
    index.add(1, 0, jobs.back().key(), j.need, &jobs.back(), j.wait_class);
  }
  for (int c = 0; c < 300; ++c) index.mark_waiting(1, 0, c, false);
  asked = 0;
  auto refuse_all = [&](void*) {
    ++asked;
    return false;
  };
  EXPECT_EQ(index.first_admitted(index.partitions_of(1).at(0), nullptr, {&cap}, refuse_all),
            nullptr);
  EXPECT_EQ(asked, 300 - static_cast<int>(WaitIndex::kClassBits));
  EXPECT_TRUE(index.consistent());
}

TEST(WaitIndex, SpotJobsAreNotAdmittedForSpotVictimsOfTheirOwnPriority) {
  WaitCapacity cap;
  cap.whole_gpus = 8;
  cap.max_free_milli = 1000;
  cap.min_priority = 99;
  cap.spot_excluded_priority = 100;
  WaitNeed spot;
  spot.whole_gpus = 1;
  spot.spot = true;
  WaitNeed firm = spot;
  firm.spot = false;
  EXPECT_FALSE(cap.admits(spot, 100));
  EXPECT_TRUE(cap.admits(firm, 100));
  EXPECT_TRUE(cap.admits(spot, 1000));  // a higher priority preempts spot jobs all the same
  EXPECT_FALSE(cap.admits(firm, 99));   // not above the victims' level
}

}  // namespace
}  // namespace gpucloud::sched
