// TenantBook over random quotas, cohorts, borrowing limits, use and reclaim holds: a request is
// allowed exactly when it is no larger than the headroom, and a cohort's change count tells when
// its members' answers may have changed.
#include "sched/tenant_book.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace gpucloud::sched {
namespace {

TEST(TenantBook, HeadroomIsTheLargestRequestAllowed) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> models = {"A100", "H100"};
  int checked_borrowing = 0, checked_lent = 0;
  for (int round = 0; round < 3000; ++round) {
    TenantBook book;
    std::vector<TenantSpec> specs;
    for (int t = 0; t < 4; ++t) {
      TenantSpec s;
      s.name = "t" + std::to_string(t);
      s.has_quota = pick(5) != 0;
      s.cohort = pick(4) == 0 ? "" : (pick(2) ? "c1" : "c2");
      for (const auto& m : models) {
        if (pick(4)) s.quota[m] = pick(6);
        if (pick(2)) s.borrowing_limit[m] = pick(4);
      }
      specs.push_back(s);
    }
    book.configure(specs);
    for (int i = 0; i < 8; ++i)
      book.charge("t" + std::to_string(pick(4)), models[pick(2)], 250 * (1 + pick(12)), 0, 0, +1);
    for (int i = 0; i < 2; ++i)
      if (pick(2))
        book.hold_reclaim("t" + std::to_string(pick(4)), models[pick(2)], 500 * (1 + pick(4)), +1);
    for (const auto& s : specs)
      for (const auto& m : models) {
        const int64_t h = book.headroom(s.name, m);
        if (!s.has_quota) {
          EXPECT_TRUE(book.allows(s.name, m, int64_t{1} << 40));
          continue;
        }
        for (int64_t milli = 0; milli <= 12000; milli += 50)
          ASSERT_EQ(book.allows(s.name, m, milli), milli <= h)
              << "round " << round << ", tenant " << s.name << ", " << m << ", " << milli
              << " milli, headroom " << h;
        checked_borrowing += book.borrowing(s.name, m);
        checked_lent += book.cohort_excess(s.name, m, 50) > 0;
      }
  }
  // The rounds reach the branches that matter: borrowing, and quota lent within a cohort.
  EXPECT_GT(checked_borrowing, 500);
  EXPECT_GT(checked_lent, 500);
}

// A cohort's change count stays put only when nothing its members are told changed: the answers
// about them (all but the dominant share) are the same before and after a charge or hold that
// leaves it unchanged.
TEST(TenantBook, ACohortsCountMovesWhenItsMembersAnswersMay) {
  std::mt19937 rng(11);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> models = {"A100", "H100"};
  const std::vector<std::string> cohorts = {"c1", "c2"};
  auto answers = [&](const TenantBook& book, const std::string& tenant) {
    std::vector<int64_t> out{static_cast<int64_t>(book.cohort_of(tenant).size())};
    for (const auto& m : models)
      for (int64_t milli : {250, 1000, 3000})
        out.insert(out.end(),
                   {book.headroom(tenant, m), book.nominal_headroom(tenant, m),
                    book.cohort_room(tenant, m), book.borrowing(tenant, m),
                    book.over_nominal(tenant, m), book.over_limit(tenant, m),
                    book.within_nominal(tenant, m, milli), book.cohort_excess(tenant, m, milli)});
    return out;
  };
  int unchanged = 0, moved = 0;
  for (int round = 0; round < 500; ++round) {
    TenantBook book;
    std::vector<TenantSpec> specs;
    for (int t = 0; t < 5; ++t) {
      TenantSpec s;
      s.name = "t" + std::to_string(t);
      s.has_quota = pick(4) != 0;
      s.cohort = pick(3) == 0 ? "" : cohorts[pick(2)];
      for (const auto& m : models) {
        if (pick(4)) s.quota[m] = pick(6);
        if (pick(2)) s.borrowing_limit[m] = pick(4);
      }
      specs.push_back(s);
    }
    book.configure(specs);
    for (int step = 0; step < 20; ++step) {
      std::vector<std::vector<int64_t>> before;
      for (const auto& s : specs) before.push_back(answers(book, s.name));
      std::map<std::string, uint64_t> counts;
      for (const char* cohort : {"", "c1", "c2"}) counts[cohort] = book.cohort_changes(cohort);
      const std::string who = "t" + std::to_string(pick(5));
      if (pick(4))
        book.charge(who, models[pick(2)], 250 * (1 + pick(8)), 100, 100, pick(3) ? +1 : -1);
      else
        book.hold_reclaim(who, models[pick(2)], 500 * (1 + pick(4)), pick(2) ? +1 : -1);
      for (size_t t = 0; t < specs.size(); ++t) {
        const std::string& cohort = book.cohort_of(specs[t].name);  // "" without one
        if (book.cohort_changes(cohort) != counts[cohort]) {
          ++moved;
          continue;
        }
        ++unchanged;
        ASSERT_EQ(answers(book, specs[t].name), before[t])
            << "round " << round << ": " << who << " changed, " << specs[t].name << " in " << cohort
            << " was told otherwise while its cohort's count stayed";
      }
    }
  }
  EXPECT_GT(unchanged, 1000);
  EXPECT_GT(moved, 1000);
}

}  // namespace
}  // namespace gpucloud::sched
