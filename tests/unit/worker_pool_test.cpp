#include "core/common/worker_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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

TEST(WorkerPoolTest, ForEachVisitsEveryIndexExactlyOnce) {
  WorkerPool pool(3);
  for (std::size_t n : {0u, 1u, 7u, 1000u}) {
    std::vector<std::atomic<int>> seen(n);
    pool.ForEach(n, [&](std::size_t i) { ++seen[i]; });
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i].load(), 1) << n << " " << i;
  }
}

TEST(WorkerPoolTest, ForEachClaimsItemsOneByOne) {
  WorkerPool pool(1);
  // Item 0 blocks until every other item has run. Were items chunked (64 items for two
  // threads would make chunks of 8), those sharing its chunk could only run after it.
  constexpr std::size_t kItems = 64;
  std::atomic<std::size_t> others{0};
  std::atomic<bool> waited_out{false};
  pool.ForEach(kItems, [&](std::size_t i) {
    if (i != 0) {
      ++others;
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (others.load() < kItems - 1) {
      if (std::chrono::steady_clock::now() > deadline) {
        waited_out = true;
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_FALSE(waited_out.load());
  EXPECT_EQ(others.load(), kItems - 1);
}

TEST(WorkerPoolTest, ForEachWithoutHelpersRunsOnTheCaller) {
  WorkerPool pool(0);
  std::set<std::thread::id> threads;
  std::size_t count = 0;
  pool.ForEach(100, [&](std::size_t) {
    threads.insert(std::this_thread::get_id());
    ++count;
  });
  EXPECT_EQ(count, 100u);
  EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(DefaultWorkersTest, TheMachinesThreadsUpToTheCap) {
  const std::size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(DefaultWorkers(1), 1u);
  EXPECT_EQ(DefaultWorkers(1000), hardware);
  EXPECT_EQ(DefaultWorkers(), std::min<std::size_t>(hardware, 4));
}

}  // namespace
}  // namespace powerctl
