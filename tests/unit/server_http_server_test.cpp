// HttpServer over plain HTTP: routing, keep-alive, limits, timeouts, handler errors, drain.
#include "core/server/http_server.h"
#include "tests/unit/server_http_server_test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>

namespace powerctl::server {
namespace {

using namespace std::chrono_literals;
using testing::EchoRoutes;
using testing::FastOptions;
using testing::Get;
using testing::Post;
using testing::RawClient;

TEST(HttpServerTest, RoutesByExactPathAndMethod) {
  auto server = testing::StartServer(FastOptions(), EchoRoutes);
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->url(), "http://127.0.0.1:" + std::to_string(server->port()));
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  auto ok = c.Exchange(Post("/echo?a=1&b=2", R"({"x":1})", "X-Test: hello\r\n"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, R"({"x":1})");
  EXPECT_TRUE(ok->HasHeader("Content-Type: application/json"));
  EXPECT_TRUE(ok->HasHeader("X-Query: a=1&b=2"));
  EXPECT_TRUE(ok->HasHeader("X-Test: hello"));

  auto missing = c.Exchange(Get("/echo/more"));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);

  auto wrong = c.Exchange("DELETE /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  EXPECT_TRUE(wrong->HasHeader("Allow: POST, GET")) << wrong->head;
}

TEST(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  std::atomic<int> calls = 0;
  std::set<std::string> peers;
  std::mutex mu;
  auto server = testing::StartServer(FastOptions(), [&](HttpServer& s) {
    s.Route("GET", "/n", [&](const HttpRequest& r) {
      std::lock_guard lock(mu);
      peers.insert(r.remote);
      return HttpResponse::Text(200, std::to_string(++calls));
    });
  });
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  // Two requests in one write (pipelined), then a third after the answers.
  ASSERT_TRUE(c.Send(Get("/n") + Get("/n")));
  auto first = c.Read();
  auto second = c.Read();
  auto third = c.Exchange(Get("/n"));
  ASSERT_TRUE(first && second && third);
  EXPECT_EQ(first->body, "1");
  EXPECT_EQ(second->body, "2");
  EXPECT_EQ(third->body, "3");
  EXPECT_FALSE(third->HasHeader("Connection: close"));
  EXPECT_EQ(peers.size(), 1u);  // one client port: the same connection
}

TEST(HttpServerTest, AfterSendRunsOnceTheAnswerIsWrittenBeforeTheNextRequest) {
  std::atomic<int> answered = 0;
  std::atomic<int> after = 0;
  std::atomic<int> after_seen_by_next = -1;
  auto server = testing::StartServer(FastOptions(), [&](HttpServer& s) {
    s.Route("GET", "/n", [&](const HttpRequest&) {
      if (answered > 0) after_seen_by_next = after.load();
      HttpResponse r = HttpResponse::Text(200, std::to_string(++answered));
      r.after_send = [&] { ++after; };
      return r;
    });
  });
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  auto first = c.Exchange(Get("/n"));
  auto second = c.Exchange(Get("/n"));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->body, "1");
  EXPECT_EQ(after_seen_by_next.load(), 1);  // the first answer's work ran before the second
}

TEST(HttpServerTest, HandlerErrorStatusesKeepTheConnection) {
  auto server = testing::StartServer(FastOptions(), [](HttpServer& s) {
    s.Route("POST", "/verb",
            [](const HttpRequest&) { return HttpResponse::Json(400, R"({"Error":"bad pod"})"); });
  });
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  auto first = c.Exchange(Post("/verb", "{"));
  auto second = c.Exchange(Post("/verb", "{"));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->status, 400);
  EXPECT_EQ(second->body, R"({"Error":"bad pod"})");
  EXPECT_FALSE(second->HasHeader("Connection: close"));
}

TEST(HttpServerTest, ConnectionCloseAndHttp10AreHonoured) {
  auto server = testing::StartServer(FastOptions(), EchoRoutes);
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  auto r = c.Exchange(Get("/echo", "Connection: close\r\n"));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->HasHeader("Connection: close"));
  EXPECT_TRUE(c.WaitClosed(1s));
  RawClient old;
  ASSERT_TRUE(old.Connect(server->port()));
  auto r10 = old.Exchange("GET /echo HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(r10);
  EXPECT_EQ(r10->status, 200);
  EXPECT_TRUE(old.WaitClosed(1s));
}

TEST(HttpServerTest, HandlerExceptionGives500WithoutDetails) {
  auto server = testing::StartServer(FastOptions(), EchoRoutes);
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  auto r = c.Exchange(Get("/throw"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body.find("secret"), std::string::npos);
  auto after = c.Exchange(Get("/echo"));  // the connection and the server survive
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST(HttpServerTest, BodyOverTheLimitGets413) {
  auto server = testing::StartServer(FastOptions(), EchoRoutes);
  RawClient declared;
  ASSERT_TRUE(declared.Connect(server->port()));
  ASSERT_TRUE(declared.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"));
  auto r = declared.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_TRUE(declared.WaitClosed(1s));

  RawClient chunked;  // no declared length: the limit applies while reading
  ASSERT_TRUE(chunked.Connect(server->port()));
  std::string chunk(800, 'a');
  auto r2 = chunked.Exchange(
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n320\r\n" + chunk +
      "\r\n320\r\n" + chunk + "\r\n0\r\n\r\n");
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 413);

  RawClient fits;
  ASSERT_TRUE(fits.Connect(server->port()));
  auto r3 = fits.Exchange(Post("/echo", std::string(1024, 'b')));
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->status, 200);
}

TEST(HttpServerTest, HugeHeadersGet431) {
  auto server = testing::StartServer(FastOptions(), EchoRoutes);
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  auto r = c.Exchange(Get("/echo", "X-Big: " + std::string(4096, 'h') + "\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_TRUE(c.WaitClosed(1s));
}

TEST(HttpServerTest, MalformedRequestsGet400) {
  auto server = testing::StartServer(FastOptions(), EchoRoutes);
  for (std::string bad : {"NOT HTTP AT ALL\r\n\r\n", "GET /echo HTTP/1.1\r\nBad Header\r\n\r\n",
                          "GET echo HTTP/1.1\r\nHost: x\r\n\r\n",
                          "POST /echo HTTP/1.1\r\nContent-Length: abc\r\n\r\n"}) {
    RawClient c;
    ASSERT_TRUE(c.Connect(server->port()));
    auto r = c.Exchange(bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_TRUE(c.WaitClosed(1s)) << bad;
  }
}

TEST(HttpServerTest, SlowClientIsDisconnectedAfterTheReadTimeout) {
  auto server = testing::StartServer(FastOptions(), EchoRoutes);  // read timeout 300ms
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  std::string request = Get("/echo");
  auto started = std::chrono::steady_clock::now();
  bool closed = false;
  for (char byte : request) {  // one byte every 100ms: the whole head would take seconds
    if (!c.Send(std::string(1, byte)) || c.WaitClosed(100ms)) {
      closed = true;
      break;
    }
  }
  EXPECT_TRUE(closed);
  auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_LT(elapsed, 2s);
}

TEST(HttpServerTest, IdleKeepAliveConnectionIsClosed) {
  auto server = testing::StartServer(FastOptions(), EchoRoutes);  // idle timeout 300ms
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Exchange(Get("/echo")));
  EXPECT_TRUE(c.WaitClosed(3s));
  RawClient silent;  // connected but never sends a byte
  ASSERT_TRUE(silent.Connect(server->port()));
  EXPECT_TRUE(silent.WaitClosed(3s));
}

TEST(HttpServerTest, CreateRejectsBadOptionsAndStartReportsBindErrors) {
  HttpServerOptions bad_port;
  bad_port.port = 70000;
  EXPECT_EQ(HttpServer::Create(bad_port).error().code, ErrorCode::kInvalidInput);

  auto first = testing::StartServer(FastOptions(), EchoRoutes);
  HttpServerOptions same = FastOptions();
  same.port = first->port();
  auto second = HttpServer::Create(same);
  ASSERT_TRUE(second.ok());
  Status s = (*second)->Start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kNetwork);
  EXPECT_NE(s.error().message.find(std::to_string(first->port())), std::string::npos);

  HttpServerOptions bad_host = FastOptions();
  bad_host.host = "not-an-ip";
  auto third = HttpServer::Create(bad_host);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ((*third)->Start().error().code, ErrorCode::kInvalidInput);
}

TEST(HttpServerTest, RequestRecordsNameTheRouteNotTheRawPath) {
  std::mutex mu;
  std::vector<RequestRecord> records;
  HttpServerOptions options = FastOptions();
  options.on_request = [&](const RequestRecord& r) {
    std::lock_guard lock(mu);
    records.push_back(r);
  };
  auto server = testing::StartServer(options, EchoRoutes);
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Exchange(Post("/echo", "{}")));
  ASSERT_TRUE(c.Exchange(Get("/random/path/123")));
  server->Stop(1s);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].path, "/echo");
  EXPECT_EQ(records[0].method, "POST");
  EXPECT_EQ(records[0].status, 200);
  EXPECT_EQ(records[1].path, "");
  EXPECT_EQ(records[1].status, 404);
}

}  // namespace
}  // namespace powerctl::server
