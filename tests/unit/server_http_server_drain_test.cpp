// HttpServer::Stop: requests in flight finish while new connections are refused; requests
// that outlast the grace period are cut off.
#include "core/server/http_server.h"
#include "tests/unit/server_http_server_test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

namespace powerctl::server {
namespace {

using namespace std::chrono_literals;
using testing::EchoRoutes;
using testing::FastOptions;
using testing::Get;
using testing::RawClient;

TEST(HttpServerTest, StopDrainsRequestsInFlightAndRefusesNewConnections) {
  std::promise<void> entered;
  std::atomic<bool> release = false;
  HttpServerOptions options = FastOptions();
  options.limits.idle_timeout = 10s;
  auto server = testing::StartServer(options, [&](HttpServer& s) {
    s.Route("GET", "/slow", [&](const HttpRequest&) {
      entered.set_value();
      while (!release) std::this_thread::sleep_for(5ms);
      return HttpResponse::Text(200, "finished");
    });
    EchoRoutes(s);
  });
  int port = server->port();
  RawClient idle;  // an idle keep-alive connection is closed at once by Stop
  ASSERT_TRUE(idle.Connect(port));
  ASSERT_TRUE(idle.Exchange(Get("/echo")));
  RawClient busy;
  ASSERT_TRUE(busy.Connect(port));
  ASSERT_TRUE(busy.Send(Get("/slow")));
  entered.get_future().wait();

  std::thread stopper([&] { server->Stop(5s); });
  EXPECT_TRUE(idle.WaitClosed(2s));
  bool refused = false;
  for (int i = 0; i < 200 && !refused; ++i) {  // until Stop has closed the listener
    RawClient probe;
    refused = !probe.Connect(port);
    if (!refused) std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(refused);
  release = true;
  auto r = busy.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "finished");
  EXPECT_TRUE(r->HasHeader("Connection: close"));
  stopper.join();
}

TEST(HttpServerTest, StopGivesUpOnRequestsAfterTheGracePeriod) {
  HttpServerOptions options = FastOptions();
  options.limits.read_timeout = 10s;
  auto server = testing::StartServer(options, EchoRoutes);
  RawClient half;  // a request whose body never arrives
  ASSERT_TRUE(half.Connect(server->port()));
  ASSERT_TRUE(half.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab"));
  auto started = std::chrono::steady_clock::now();
  server->Stop(200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  EXPECT_TRUE(half.WaitClosed(1s));
}

}  // namespace
}  // namespace powerctl::server
