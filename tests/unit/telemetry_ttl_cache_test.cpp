// TtlCache: single flight across threads, background refresh, expiry and errors, with a
// manual clock for ages and a gate to hold fetches in flight.

#include "core/telemetry/ttl_cache.h"
#include "tests/unit/telemetry_test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace powerctl::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using telemetry_test::ManualClock;

// Fetches block until Open(); counts calls and answers "v<n>" (or an error when failing).
class GatedFetcher {
 public:
  Result<std::string> operator()(const std::string& key) {
    int n = ++calls_;
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_ > 0; });
    --waiting_;
    if (open_ != kForever) --open_;
    if (fail_) return MakeError(ErrorCode::kNetwork, "origin down");
    return key + ":v" + std::to_string(n);
  }
  void Open(int n = kForever) {
    std::lock_guard lock(mu_);
    open_ = n;
    cv_.notify_all();
  }
  void Close() {
    std::lock_guard lock(mu_);
    open_ = 0;
  }
  void Fail(bool fail) {
    std::lock_guard lock(mu_);
    fail_ = fail;
  }
  // Waits until `n` fetches are blocked at the gate.
  void AwaitWaiting(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return waiting_ >= n; });
  }
  int calls() const { return calls_; }

  static constexpr int kForever = 1 << 30;

 private:
  std::atomic<int> calls_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  int open_ = 0;
  int waiting_ = 0;
  bool fail_ = false;
};

class TtlCacheTest : public ::testing::Test {
 protected:
  TtlCacheOptions Options() {
    TtlCacheOptions o;
    o.refresh_after = seconds(10);
    o.expire_after = seconds(60);
    o.retry_after = seconds(2);
    o.clock = clock_.AsClock();
    return o;
  }
  std::unique_ptr<TtlCache<std::string, std::string>> Make() {
    return std::make_unique<TtlCache<std::string, std::string>>(
        [this](const std::string& k) { return fetcher_(k); }, Options());
  }
  ManualClock clock_;
  GatedFetcher fetcher_;
};

TEST_F(TtlCacheTest, ManyThreadsOneFetch) {
  auto cache = Make();
  constexpr int kThreads = 32;
  std::vector<std::string> got(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto r = cache->Get("node");
      got[i] = r.ok() ? *r : r.error().message;
    });
  }
  fetcher_.AwaitWaiting(1);
  std::this_thread::sleep_for(milliseconds(50));  // let the others pile up behind it
  fetcher_.Open();
  for (auto& t : threads) t.join();
  EXPECT_EQ(fetcher_.calls(), 1);
  for (const std::string& v : got) EXPECT_EQ(v, "node:v1");
  // Different keys fetch independently.
  EXPECT_EQ(*cache->Get("other"), "other:v2");
}

TEST_F(TtlCacheTest, FreshValuesAreServedWithoutFetching) {
  auto cache = Make();
  fetcher_.Open();
  EXPECT_EQ(*cache->Get("k"), "k:v1");
  clock_.Advance(seconds(9));
  EXPECT_EQ(*cache->Get("k"), "k:v1");
  EXPECT_EQ(fetcher_.calls(), 1);
  EXPECT_FALSE(cache->Peek("k").refreshing);
  EXPECT_FALSE(cache->Peek("missing").value);
}

TEST_F(TtlCacheTest, OldValuesAreServedAtOnceWhileOneBackgroundRefreshRuns) {
  auto cache = Make();
  fetcher_.Open(1);
  ASSERT_EQ(*cache->Get("k"), "k:v1");
  auto first_fetch = clock_.Now();
  clock_.Advance(seconds(11));
  // The gate is closed: the refresh hangs, and readers still get v1 at once.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(*cache->Get("k"), "k:v1");
  fetcher_.AwaitWaiting(1);
  EXPECT_EQ(fetcher_.calls(), 2);
  EXPECT_TRUE(cache->Peek("k").refreshing);
  EXPECT_EQ(cache->Peek("k").fetched_at, first_fetch);
  fetcher_.Open();
  cache->WaitIdle();
  EXPECT_EQ(*cache->Get("k"), "k:v2");
  EXPECT_EQ(cache->Peek("k").fetched_at, clock_.Now());  // when the refresh began
  EXPECT_EQ(fetcher_.calls(), 2);
}

TEST_F(TtlCacheTest, ExpiredValuesMakeReadersWait) {
  auto cache = Make();
  fetcher_.Open(1);
  ASSERT_EQ(*cache->Get("k"), "k:v1");
  clock_.Advance(seconds(61));
  std::string got;
  std::thread reader([&] { got = *cache->Get("k"); });
  fetcher_.AwaitWaiting(1);
  EXPECT_EQ(got, "");  // still waiting
  fetcher_.Open();
  reader.join();
  EXPECT_EQ(got, "k:v2");
}

TEST_F(TtlCacheTest, FailedRefreshKeepsTheOldValueAndRecordsTheError) {
  auto cache = Make();
  fetcher_.Open();
  ASSERT_EQ(*cache->Get("k"), "k:v1");
  fetcher_.Fail(true);
  clock_.Advance(seconds(11));
  EXPECT_EQ(*cache->Get("k"), "k:v1");
  cache->WaitIdle();
  auto peek = cache->Peek("k");
  ASSERT_TRUE(peek.last_error);
  EXPECT_EQ(peek.last_error->message, "origin down");
  EXPECT_EQ(*peek.value, "k:v1");
  EXPECT_EQ(*cache->Get("k"), "k:v1");  // no new refresh within retry_after
  EXPECT_EQ(fetcher_.calls(), 2);
  clock_.Advance(seconds(2));
  EXPECT_EQ(*cache->Get("k"), "k:v1");  // then it tries again in the background
  cache->WaitIdle();
  EXPECT_EQ(fetcher_.calls(), 3);
  clock_.Advance(seconds(2));
  fetcher_.Fail(false);
  EXPECT_EQ(*cache->Get("k"), "k:v1");
  cache->WaitIdle();
  EXPECT_EQ(*cache->Get("k"), "k:v4");
  EXPECT_FALSE(cache->Peek("k").last_error);
}

TEST_F(TtlCacheTest, ErrorsWithoutAValueReachEveryWaiterAndAreNotRetriedAtOnce) {
  auto cache = Make();
  fetcher_.Fail(true);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      auto r = cache->Get("k");
      if (!r.ok() && r.error().message == "origin down") ++errors;
    });
  }
  fetcher_.AwaitWaiting(1);
  std::this_thread::sleep_for(milliseconds(50));
  fetcher_.Open();
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, 8);
  int calls = fetcher_.calls();
  EXPECT_EQ(calls, 1);  // late arrivals get the fresh error
  EXPECT_FALSE(cache->Get("k").ok());
  EXPECT_EQ(fetcher_.calls(), calls);  // within retry_after: the error, no fetch
  clock_.Advance(seconds(3));
  fetcher_.Fail(false);
  auto r = cache->Get("k");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(fetcher_.calls(), calls + 1);
}

TEST_F(TtlCacheTest, FetchAlwaysGetsANewValueAndRefreshWarms) {
  auto cache = Make();
  fetcher_.Open();
  cache->Refresh("k");
  cache->WaitIdle();
  EXPECT_EQ(*cache->Peek("k").value, "k:v1");
  EXPECT_EQ(*cache->Fetch("k"), "k:v2");
  EXPECT_EQ(*cache->Get("k"), "k:v2");
}

TEST_F(TtlCacheTest, ThrowingFetcherBecomesAnError) {
  TtlCache<int, int> cache([](int) -> Result<int> { throw std::runtime_error("boom"); }, Options());
  auto r = cache.Get(1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "fetch failed: boom");
}

TEST_F(TtlCacheTest, DestructionWaitsForARunningRefreshAndEndsQueuedOnes) {
  auto cache = std::make_unique<TtlCache<std::string, std::string>>(
      [this](const std::string& k) { return fetcher_(k); },
      [&] {
        TtlCacheOptions o = Options();
        o.refresh_threads = 1;
        return o;
      }());
  fetcher_.Open(2);
  ASSERT_TRUE(cache->Get("a").ok());
  ASSERT_TRUE(cache->Get("b").ok());
  clock_.Advance(seconds(11));
  EXPECT_TRUE(cache->Get("a").ok());  // a refresh of a starts and blocks at the gate
  fetcher_.AwaitWaiting(1);
  EXPECT_TRUE(cache->Get("b").ok());  // its refresh queues behind it on the one thread
  std::thread opener([&] {
    std::this_thread::sleep_for(milliseconds(50));
    fetcher_.Open();
  });
  cache.reset();  // must not hang, leak or crash
  opener.join();
  EXPECT_EQ(fetcher_.calls(), 3);  // b's refresh was dropped
}

}  // namespace
}  // namespace powerctl::telemetry
