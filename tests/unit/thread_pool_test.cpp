// The persistent thread pool: every thread runs every job exactly once, chunks cover the range
// exactly once, and workers asleep or spinning both pick up new jobs.
#include "runtime/util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace lmrt {
namespace {

TEST(ThreadPool, EveryThreadRunsEachJobOnce) {
  for (size_t n : {1, 2, 3}) {
    ThreadPool pool(n);
    ASSERT_EQ(pool.size(), n);
    std::vector<std::atomic<int>> hits(n);
    for (int rep = 0; rep < 500; ++rep) {
      std::atomic<int> calls{0};
      pool.run([&](size_t i, size_t count) {
        EXPECT_EQ(count, n);
        hits[i].fetch_add(1);
        calls.fetch_add(1);
      });
      ASSERT_EQ(calls.load(), static_cast<int>(n));  // run() returned only after every thread finished
    }
    for (auto& h : hits) EXPECT_EQ(h.load(), 500);
  }
}

TEST(ThreadPool, ParallelForCoversTheRangeExactlyOnce) {
  ThreadPool pool(3);
  for (size_t n : {0, 1, 15, 16, 17, 1000}) {
    for (size_t grain : {0, 1, 7, 16, 5000}) {
      std::vector<std::atomic<int>> seen(n);
      pool.parallel_for(n, grain, [&](size_t b, size_t e) {
        EXPECT_LT(b, e);
        for (size_t i = b; i < e; ++i) seen[i].fetch_add(1);
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << "n=" << n << " grain=" << grain << " i=" << i;
    }
  }
}

TEST(ThreadPool, WorkersWakeAfterSleepingAndStopWhileAsleep) {
  ThreadPool pool(2);
  std::atomic<int> calls{0};
  pool.run([&](size_t, size_t) { calls.fetch_add(1); });
  // Long enough for the worker to give up spinning and block.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pool.run([&](size_t, size_t) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The destructor must wake the sleeping worker (the test would hang otherwise).
}

// run() with a plan asks it once per thread per run, before any thread starts the job, and runs with and
// without plans mix. Spans may point at memory freed right after the run (they are only prefetched);
// under TSan this also checks that a plan slot is never written while a waiting thread reads it.
TEST(ThreadPool, PlanIsAskedOncePerThreadBeforeTheJob) {
  for (size_t n : {1, 2, 3}) {
    ThreadPool pool(n);
    std::vector<uint8_t> data(1 << 16, 1);
    std::vector<int> planned(n, 0);
    for (int rep = 0; rep < 300; ++rep) {
      std::atomic<int> jobs{0};
      int plans = 0;
      const bool with_plan = rep % 3 != 2;
      auto job = [&](size_t i, size_t count) {
        EXPECT_EQ(count, n);
        EXPECT_EQ(plans, with_plan && n > 1 ? static_cast<int>(n) : 0);  // every plan was made before the job
        jobs.fetch_add(1);
        (void)i;
      };
      if (!with_plan) {
        pool.run(job);
      } else {
        std::vector<uint8_t> shortlived(4096 * (1 + rep % 5), 2);  // freed as run() returns
        pool.run(job, [&](size_t i, size_t count, NextReads& out) {
          EXPECT_EQ(count, n);
          EXPECT_EQ(out.count, 0u);  // handed out empty
          ++planned[i];
          ++plans;
          out.add(data.data() + i * 4096, 4096);
          out.add(shortlived.data(), shortlived.size());
        });
      }
      ASSERT_EQ(jobs.load(), static_cast<int>(n));
    }
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(planned[i], n > 1 ? 200 : 0) << "thread " << i;
  }
}

TEST(ThreadPool, MoreThreadsThanCoresStillFinish) {
  ThreadPool pool(std::thread::hardware_concurrency() + 3);
  std::atomic<int> calls{0};
  for (int rep = 0; rep < 50; ++rep) pool.run([&](size_t, size_t) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 50 * static_cast<int>(pool.size()));
}

}  // namespace
}  // namespace lmrt
