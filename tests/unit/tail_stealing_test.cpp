// TailStealing: the shares of a small batch's matmul dispatch. A thread takes its own share from the front, in
// order, then the back of the share with the most left; every unit goes out exactly once, also when threads race.
#include "runtime/util/tail_stealing.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

namespace lmrt {
namespace {

std::vector<std::pair<size_t, size_t>> drain(TailStealing& s, size_t thread) {
  std::vector<std::pair<size_t, size_t>> got;  // (owner, unit)
  size_t owner, unit;
  while (s.next(thread, &owner, &unit)) got.emplace_back(owner, unit);
  return got;
}

TEST(TailStealing, OwnShareFromTheFrontThenTheLongestShareFromTheBack) {
  TailStealing s;
  ASSERT_TRUE(s.allocate(4));
  const size_t units[] = {3, 2, 4};
  s.reset(3, [&](size_t t) { return units[t]; });
  const std::vector<std::pair<size_t, size_t>> want = {
      {0, 0}, {0, 1}, {0, 2},  // its own, in order
      {2, 3}, {2, 2},          // thread 2's back while it has more left than thread 1
      {1, 1}, {2, 1},          // ties go to the first thread with the most left
      {1, 0}, {2, 0}};
  EXPECT_EQ(drain(s, 0), want);
  size_t owner = 99, unit = 99;
  EXPECT_FALSE(s.next(1, &owner, &unit));
  EXPECT_FALSE(s.next(2, &owner, &unit));
  EXPECT_EQ(owner, 99u);  // untouched when nothing is left
}

TEST(TailStealing, EmptySharesAndAResetStartOver) {
  TailStealing s;
  ASSERT_TRUE(s.allocate(3));
  s.reset(3, [](size_t t) { return t == 1 ? size_t{2} : size_t{0}; });
  const std::vector<std::pair<size_t, size_t>> want = {{1, 1}, {1, 0}};
  EXPECT_EQ(drain(s, 2), want);
  EXPECT_TRUE(drain(s, 0).empty());
  s.reset(2, [](size_t) { return size_t{1}; });
  const std::vector<std::pair<size_t, size_t>> again = {{1, 0}, {0, 0}};
  EXPECT_EQ(drain(s, 1), again);
  EXPECT_TRUE(drain(s, 0).empty());
}

TEST(TailStealing, RacingThreadsTakeEveryUnitOnceAndALateThreadsTail) {
  constexpr size_t kThreads = 4, kUnits = 5000;
  TailStealing s;
  ASSERT_TRUE(s.allocate(kThreads));
  for (int round = 0; round < 20; ++round) {
    s.reset(kThreads, [](size_t t) { return kUnits + t; });
    std::vector<std::vector<std::pair<size_t, size_t>>> got(kThreads);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (size_t t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        if (t == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a thread the host holds up
        got[t] = drain(s, t);
      });
    go = true;
    for (std::thread& th : threads) th.join();
    std::vector<std::vector<int>> seen(kThreads);
    for (size_t t = 0; t < kThreads; ++t) seen[t].assign(kUnits + t, 0);
    for (size_t t = 0; t < kThreads; ++t) {
      size_t last_own = 0;
      bool first_own = true;
      for (const auto& [owner, unit] : got[t]) {
        ASSERT_LT(owner, kThreads);
        ASSERT_LT(unit, kUnits + owner);
        ++seen[owner][unit];
        if (owner == t) {  // its own units come in order
          EXPECT_TRUE(first_own || unit > last_own) << "thread " << t << " unit " << unit;
          last_own = unit, first_own = false;
        }
      }
    }
    for (size_t t = 0; t < kThreads; ++t)
      for (size_t u = 0; u < kUnits + t; ++u) {
        ASSERT_EQ(seen[t][u], 1) << "share " << t << " unit " << u;
      }
    size_t taken_from_late = 0;
    for (size_t t = 1; t < kThreads; ++t)
      for (const auto& [owner, unit] : got[t]) taken_from_late += owner == 0;
    EXPECT_GT(taken_from_late, 0u) << "round " << round;
  }
}

}  // namespace
}  // namespace lmrt
