// HttpServer against hostile clients: chunked framing that grows without a parser limit
// (extensions, trailers), client-chosen metric labels, slow handlers and the probes, and the
// connection limits (pending, established, per peer) over plain HTTP and mTLS.
#include "core/server/http_server.h"
#include "tests/unit/server_http_server_test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace powerctl::server {
namespace {

using namespace std::chrono_literals;
using testing::EchoRoutes;
using testing::FastOptions;
using testing::FixturePath;
using testing::Get;
using testing::Post;
using testing::RawClient;

// POST /echo with a chunked body: one chunk "{}" whose size line carries `extension`, then
// the last chunk and `trailers` (each "Name: value\r\n").
std::string ChunkedEcho(const std::string& extension, const std::string& trailers) {
  return "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2" + extension +
         "\r\n{}\r\n0\r\n" + trailers + "\r\n";
}

// The answer to `request` on a new connection, or nullopt when the server closed it first.
std::optional<testing::RawResponse> Answer(int port, const std::string& request) {
  RawClient c;
  if (!c.Connect(port)) return std::nullopt;
  return c.Exchange(request);
}

TEST(HttpServerLimitsTest, ATrailerFieldOf64KiBIsRefusedAndTheServerStaysUp) {
  // Beast throws std::length_error for a field of 65,534 bytes or more (16-bit offsets); the
  // header limit does not cover trailers, and the exception once escaped the event loop and
  // aborted the process. Default limits, as the extender's ports run.
  auto server = testing::StartServer(HttpServerOptions{}, EchoRoutes);
  for (const std::string& field :
       {"X: " + std::string(65534, 'a'), std::string(65534, 'X') + ": a"}) {
    auto r = Answer(server->port(), ChunkedEcho("", field + "\r\n"));
    if (r) {
      EXPECT_EQ(r->status, 431) << r->body;
    }
  }
  auto alive = Answer(server->port(), Get("/echo"));
  ASSERT_TRUE(alive);
  EXPECT_EQ(alive->status, 200);
}

TEST(HttpServerLimitsTest, ChunkExtensionsAndTrailersCountAgainstAFixedBuffer) {
  // Neither has a parser limit: a 300 MB extension was once buffered whole (544 MiB). Now the
  // read buffer's bound (header_bytes + 16 KiB) refuses them.
  auto server = testing::StartServer(FastOptions(), EchoRoutes);  // 2 KiB of header
  std::string big_extension = ";x=" + std::string(1 << 20, 'e');
  auto r = Answer(server->port(), ChunkedEcho(big_extension, ""));
  if (r) {
    EXPECT_EQ(r->status, 431) << r->body;
  }
  std::string many_trailers;
  for (int i = 0; i < 20000; ++i) many_trailers += "T" + std::to_string(i) + ": v\r\n";
  r = Answer(server->port(), ChunkedEcho("", many_trailers));
  if (r) {
    EXPECT_EQ(r->status, 431) << r->body;
  }
  // Small extensions and trailers are fine.
  r = Answer(server->port(), ChunkedEcho(";name=value", "Checksum: abc\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "{}");
}

TEST(HttpServerLimitsTest, CreateRefusesAHeaderLimitBeyondWhatTheParserHandles) {
  HttpServerOptions options;
  options.limits.header_bytes = 64 * 1024;
  auto server = HttpServer::Create(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.error().code, ErrorCode::kInvalidInput);
  options.limits.header_bytes = kMaxHeaderBytes;
  EXPECT_TRUE(HttpServer::Create(options).ok());
}

TEST(HttpServerLimitsTest, RequestRecordsNameUnknownMethodsOther) {
  // The method became a metric label: 20,000 distinct 8 KB methods grew the process by
  // 160 MB for good. A record names only a known method.
  std::mutex mu;
  std::vector<RequestRecord> records;
  HttpServerOptions options = FastOptions();
  options.limits.header_bytes = 16 * 1024;
  options.on_request = [&](const RequestRecord& r) {
    std::lock_guard lock(mu);
    records.push_back(r);
  };
  auto server = testing::StartServer(options, EchoRoutes);
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  const std::string method(8000, 'Z');
  auto r = c.Exchange(method + " /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  ASSERT_TRUE(c.Exchange("BREW /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(c.Exchange("DELETE /echo HTTP/1.1\r\nHost: x\r\n\r\n"));
  server->Stop(1s);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].method, "other");
  EXPECT_EQ(records[1].method, "other");
  EXPECT_EQ(records[2].method, "DELETE");
}

// GET /fast on the I/O thread; GET /slow on a worker, holding until `release` is set.
struct SlowRoutes {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> slow_started{0};

  void Add(HttpServer& s) {
    s.Route("GET", "/fast", [](const HttpRequest&) { return HttpResponse::Text(200, "ok\n"); });
    s.Route(
        "GET", "/slow",
        [this](const HttpRequest&) {
          ++slow_started;
          released.wait_for(10s);
          return HttpResponse::Text(200, "slow\n");
        },
        RouteThreads::kWorker);
  }
};

TEST(HttpServerLimitsTest, WorkerRoutesNeverHoldUpTheProbes) {
  // On the single-threaded ops port a 17 s /v1/score held /healthz for 17 s: a liveness probe
  // would have killed the pod.
  HttpServerOptions options = FastOptions();
  options.threads = 1;
  options.worker_threads = 1;
  options.limits.read_timeout = 5s;
  options.limits.idle_timeout = 5s;
  SlowRoutes routes;
  auto server = testing::StartServer(options, [&](HttpServer& s) { routes.Add(s); });
  RawClient slow;
  ASSERT_TRUE(slow.Connect(server->port()));
  ASSERT_TRUE(slow.Send(Get("/slow")));
  while (routes.slow_started == 0) std::this_thread::sleep_for(1ms);

  auto started = std::chrono::steady_clock::now();
  auto probe = Answer(server->port(), Get("/fast"));
  ASSERT_TRUE(probe);
  EXPECT_EQ(probe->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);  // not until the slow one ends
  // Every worker is busy: another slow request is told so at once, not queued.
  auto busy = Answer(server->port(), Get("/slow"));
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 503);
  EXPECT_TRUE(busy->HasHeader("Retry-After: 1")) << busy->head;
  EXPECT_EQ(routes.slow_started, 1);

  routes.release.set_value();
  auto answered = slow.Read();
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->body, "slow\n");
}

TEST(HttpServerLimitsTest, StopWaitsForAHandlerOnAWorker) {
  HttpServerOptions options = FastOptions();
  options.worker_threads = 1;
  options.limits.read_timeout = 5s;
  SlowRoutes routes;
  auto server = testing::StartServer(options, [&](HttpServer& s) { routes.Add(s); });
  RawClient slow;
  ASSERT_TRUE(slow.Connect(server->port()));
  ASSERT_TRUE(slow.Send(Get("/slow")));
  while (routes.slow_started == 0) std::this_thread::sleep_for(1ms);
  std::thread release([&] {
    std::this_thread::sleep_for(200ms);
    routes.release.set_value();
  });
  server->Stop(5s);  // drains: the request in flight is answered
  release.join();
  auto answered = slow.Read(1s);
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200);
}

TEST(HttpServerLimitsTest, SilentConnectionsCannotStarveRealClients) {
  // Idle sockets once filled the connection limit and /healthz failed 30 times of 30.
  HttpServerOptions options = FastOptions();
  options.limits.max_connections = 8;
  options.limits.max_pending_connections = 8;
  options.limits.handshake_timeout = 10s;  // the silent ones stay for the whole test
  auto server = testing::StartServer(options, EchoRoutes);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 40; ++i) {
    silent.push_back(std::make_unique<RawClient>());
    ASSERT_TRUE(silent.back()->Connect(server->port()));
  }
  for (int i = 0; i < 30; ++i) {
    auto r = Answer(server->port(), Get("/echo"));
    ASSERT_TRUE(r) << "request " << i;
    EXPECT_EQ(r->status, 200);
  }
  // The oldest silent connections made room.
  EXPECT_TRUE(silent.front()->WaitClosed(2s));
}

TEST(HttpServerLimitsTest, PendingConnectionsEndAfterTheHandshakeTimeout) {
  HttpServerOptions options = FastOptions();
  options.limits.idle_timeout = 10s;
  options.limits.read_timeout = 10s;
  options.limits.handshake_timeout = 300ms;
  auto server = testing::StartServer(options, EchoRoutes);
  RawClient silent, slow;
  ASSERT_TRUE(silent.Connect(server->port()));
  ASSERT_TRUE(slow.Connect(server->port()));
  ASSERT_TRUE(slow.Send("GET /echo HTTP/1.1\r\n"));  // and never the rest
  EXPECT_TRUE(silent.WaitClosed(3s));
  EXPECT_TRUE(slow.WaitClosed(3s));
  // A client that has sent its first request is past it: the idle timeout applies.
  RawClient real;
  ASSERT_TRUE(real.Connect(server->port()));
  ASSERT_TRUE(real.Exchange(Get("/echo")));
  std::this_thread::sleep_for(600ms);
  EXPECT_TRUE(real.Exchange(Get("/echo")));
}

TEST(HttpServerLimitsTest, AtTheLimitTheConnectionIdleLongestMakesRoom) {
  HttpServerOptions options = FastOptions();
  options.limits.max_connections = 2;
  options.limits.idle_timeout = 5s;
  auto server = testing::StartServer(options, EchoRoutes);
  RawClient a, b, c;
  ASSERT_TRUE(a.Connect(server->port()));
  ASSERT_TRUE(a.Exchange(Get("/echo")));
  ASSERT_TRUE(b.Connect(server->port()));
  ASSERT_TRUE(b.Exchange(Get("/echo")));
  ASSERT_TRUE(a.Exchange(Get("/echo")));  // b is now the one idle longest
  ASSERT_TRUE(c.Connect(server->port()));
  auto r = c.Exchange(Get("/echo"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(b.WaitClosed(2s));
  EXPECT_TRUE(a.Exchange(Get("/echo")));
}

TEST(HttpServerLimitsTest, BusyConnectionsAreNeverClosedForRoom) {
  HttpServerOptions options = FastOptions();
  options.limits.max_connections = 1;
  options.limits.read_timeout = 5s;
  options.limits.idle_timeout = 5s;
  options.worker_threads = 1;
  SlowRoutes routes;
  auto server = testing::StartServer(options, [&](HttpServer& s) { routes.Add(s); });
  RawClient busy;
  ASSERT_TRUE(busy.Connect(server->port()));
  ASSERT_TRUE(busy.Send(Get("/slow")));
  while (routes.slow_started == 0) std::this_thread::sleep_for(1ms);
  auto refused = Answer(server->port(), Get("/fast"));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_NE(refused->body.find("too many connections"), std::string::npos) << refused->body;
  routes.release.set_value();
  auto answered = busy.Read();
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200);
}

TEST(HttpServerLimitsTest, APeerAtItsLimitMakesRoomFromItsOwnConnections) {
  HttpServerOptions options = FastOptions();
  options.limits.max_connections_per_peer = 2;
  options.limits.idle_timeout = 5s;
  auto server = testing::StartServer(options, EchoRoutes);
  RawClient a, b, c;
  ASSERT_TRUE(a.Connect(server->port()));
  ASSERT_TRUE(a.Exchange(Get("/echo")));
  ASSERT_TRUE(b.Connect(server->port()));
  ASSERT_TRUE(b.Exchange(Get("/echo")));
  ASSERT_TRUE(c.Connect(server->port()));  // 127.0.0.1's third: a, idle longest, goes
  auto r = c.Exchange(Get("/echo"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(a.WaitClosed(2s));
  EXPECT_TRUE(b.Exchange(Get("/echo")));
}

TEST(HttpServerLimitsTest, SilentTcpConnectionsCannotStarveMutualTlsClients) {
  // 512 silent TCP connections with no certificate made 20 of 32 real mTLS prioritize
  // requests fail: they counted against the limit before their handshake.
  HttpServerOptions options;
  options.limits.max_connections = 8;
  options.limits.max_pending_connections = 8;
  options.tls =
      TlsOptions{FixturePath("server.crt"), FixturePath("server.key"), FixturePath("ca.crt")};
  auto server = testing::StartServer(options, EchoRoutes);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 40; ++i) {
    silent.push_back(std::make_unique<RawClient>());
    ASSERT_TRUE(silent.back()->Connect(server->port()));
  }
  testing::TlsClientOptions trusted{FixturePath("ca.crt"), FixturePath("client.crt"),
                                    FixturePath("client.key")};
  for (int i = 0; i < 16; ++i) {
    RawClient real;
    ASSERT_TRUE(real.ConnectTls(server->port(), trusted)) << "request " << i;
    auto r = real.Exchange(Get("/echo"));
    ASSERT_TRUE(r) << "request " << i;
    EXPECT_EQ(r->status, 200);
  }
}

TEST(HttpServerLimitsTest, TheTlsHandshakeHasItsOwnShorterDeadline) {
  HttpServerOptions options;
  options.limits.handshake_timeout = 300ms;
  options.tls = TlsOptions{FixturePath("server.crt"), FixturePath("server.key"), ""};
  auto server = testing::StartServer(options, EchoRoutes);
  RawClient silent;
  ASSERT_TRUE(silent.Connect(server->port()));
  auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(silent.WaitClosed(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);  // read timeout: 10 s
}

}  // namespace
}  // namespace powerctl::server
