// TenantBook::headroom against allows(): over random quotas, cohorts, borrowing limits, use and
// reclaim holds, a request is allowed exactly when it is no larger than the headroom.
#include "sched/tenant_book.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpucloud::sched
