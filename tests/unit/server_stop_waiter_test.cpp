// StopWaiter::WaitFor: a loop's sleep that a stop request or a signal ends at once.
#include "core/server/stop_waiter.h"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

namespace powerctl::server {
namespace {

using namespace std::chrono_literals;

TEST(StopWaiter, WaitForRunsOutWhenNothingStopsIt) {
  std::stop_source stop;
  StopWaiter waiter(false, stop.get_token());
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(waiter.WaitFor(50ms).has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - started, 50ms);
  EXPECT_FALSE(waiter.WaitFor(10ms).has_value());  // and may be called again
}

TEST(StopWaiter, AStopRequestEndsWaitForEarlyAndEveryLaterCall) {
  std::stop_source stop;
  StopWaiter waiter(false, stop.get_token());
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(waiter.WaitFor(1h), "stop requested");
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  EXPECT_EQ(waiter.WaitFor(1h), "stop requested");
  EXPECT_EQ(waiter.Wait(), "stop requested");
}

TEST(StopWaiter, ASignalWhileTheCallerWorksEndsTheNextWait) {
  StopWaiter waiter(true, std::stop_token{});
  ASSERT_EQ(std::raise(SIGTERM), 0);  // caught by the waiter, not the default action
  EXPECT_EQ(waiter.WaitFor(1h), "SIGTERM");
}

}  // namespace
}  // namespace powerctl::server
