#include "core/common/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace powerctl {
namespace {

// Counts, per index, how often a loop visited it.
std::vector<int> Visits(WorkerPool& pool, std::size_t n, std::size_t min_chunk,
                        std::set<std::thread::id>* threads = nullptr) {
  std::vector<std::atomic<int>> seen(n);
  std::mutex mu;
  pool.ForEachChunk(n, min_chunk, [&](std::size_t begin, std::size_t end) {
    EXPECT_LT(begin, end);
    EXPECT_LE(end, n);
    for (std::size_t i = begin; i < end; ++i) ++seen[i];
    if (threads != nullptr) {
      std::lock_guard lock(mu);
      threads->insert(std::this_thread::get_id());
    }
  });
  std::vector<int> out;
  for (auto& s : seen) out.push_back(s.load());
  return out;
}

TEST(WorkerPoolTest, EveryIndexExactlyOnce) {
  WorkerPool pool(3);
  for (std::size_t n : {0u, 1u, 7u, 1000u, 10007u}) {
    for (std::size_t min_chunk : {0u, 1u, 64u, 5000u}) {
      std::vector<int> visits = Visits(pool, n, min_chunk);
      EXPECT_EQ(visits, std::vector<int>(n, 1)) << n << " " << min_chunk;
    }
  }
}

TEST(WorkerPoolTest, SmallLoopsStayOnTheCaller) {
  WorkerPool pool(3);
  std::set<std::thread::id> threads;
  Visits(pool, 100, 1000, &threads);
  EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(WorkerPoolTest, LargeLoopsUseTheHelpers) {
  WorkerPool pool(1);
  // Chunks that wait for each other can only finish when two threads run them.
  std::atomic<int> started{0};
  pool.ForEachChunk(2, 1, [&](std::size_t, std::size_t) {
    ++started;
    while (started.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(started.load(), 2);
}

TEST(WorkerPoolTest, WithoutHelpersTheCallerRunsEverything) {
  WorkerPool pool(0);
  EXPECT_EQ(pool.threads(), 0u);
  std::set<std::thread::id> threads;
  EXPECT_EQ(Visits(pool, 5000, 10, &threads), std::vector<int>(5000, 1));
  EXPECT_EQ(threads.size(), 1u);
}

TEST(WorkerPoolTest, ConcurrentCallersShareThePool) {
  WorkerPool pool(2);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        if (Visits(pool, 3000, 100) != std::vector<int>(3000, 1)) ++wrong;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace powerctl
