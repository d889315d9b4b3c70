// The probe routes every ops port shares (server/ops.h).
#include "core/server/ops.h"
#include "tests/unit/server_http_server_test_support.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace powerctl::server {
namespace {

using namespace std::chrono_literals;

// A scrape that takes long (a big registry, a slow collect) must not hold the probes: /metrics
// renders on a worker thread, /healthz on the I/O thread.
TEST(OpsRoutesTest, ASlowScrapeDoesNotHoldTheProbes) {
  HttpServerOptions options = testing::FastOptions();
  options.threads = 1;
  options.worker_threads = 1;
  options.limits.read_timeout = 5s;
  MetricsRegistry metrics;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> collecting;
  auto server = testing::StartServer(options, [&](HttpServer& s) {
    AddProbeRoutes(
        s, metrics,
        [] {
          return ReadyState{true, {}};
        },
        [&collecting, released] {
          collecting.set_value();
          released.wait();
        });
  });
  ASSERT_NE(server, nullptr);
  std::thread scrape([&] {
    testing::RawClient c;
    ASSERT_TRUE(c.Connect(server->port()));
    auto r = c.Exchange(testing::Get("/metrics"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  });
  ASSERT_EQ(collecting.get_future().wait_for(5s), std::future_status::ready);
  testing::RawClient probe;
  ASSERT_TRUE(probe.Connect(server->port()));
  // Answered while the scrape is still held (on the I/O thread it would wait for it).
  auto healthz = probe.Exchange(testing::Get("/healthz"));
  ASSERT_TRUE(healthz);
  EXPECT_EQ(healthz->status, 200);
  release.set_value();
  scrape.join();
}

}  // namespace
}  // namespace powerctl::server
