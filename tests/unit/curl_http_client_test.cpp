// MakeCurlHttpClient against an in-process HTTP/1.1 server on loopback.

#include "core/common/http_client.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace powerctl {
namespace {

using std::chrono::milliseconds;
using telemetry_test::LocalHttpServer;
using telemetry_test::ServerRequest;
using telemetry_test::ServerResponse;
using ::testing::HasSubstr;
using ::testing::Not;

ServerResponse Route(const ServerRequest& r) {
  if (r.target == "/echo") {
    std::string expect = r.headers.count("expect") ? "yes" : "no";
    return {200, r.method + "|" + r.body + "|" + r.headers.at("content-type") + "|" + expect,
            "application/json"};
  }
  if (r.target == "/slow") return {200, "late", "text/plain", milliseconds(3000)};
  if (r.target == "/big") return {200, std::string(4096, 'x')};
  if (r.target == "/missing") return {404, "not here"};
  return {200, "hello " + r.target};
}

// A port nothing listens on: bound, then closed.
int ClosedPort() {
  LocalHttpServer server([](const ServerRequest&) { return ServerResponse{}; });
  return server.port();
}

TEST(CurlHttpClientTest, GetReturnsStatusBodyAndLowerCasedHeaders) {
  LocalHttpServer server(Route);
  auto http = MakeCurlHttpClient();
  auto r = http->Do({"GET", server.url() + "/metrics?x=1", "", "", milliseconds(2000)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello /metrics?x=1");
  EXPECT_EQ(r->headers.at("content-type"), "text/plain");
  EXPECT_EQ(r->headers.at("content-length"), "18");

  auto missing = http->Do({"GET", server.url() + "/missing", "", "", milliseconds(2000)});
  ASSERT_TRUE(missing.ok());  // any HTTP status is a successful call
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, "not here");
}

TEST(CurlHttpClientTest, PostSendsBodyAndContentTypeWithoutExpect) {
  LocalHttpServer server(Route);
  auto http = MakeCurlHttpClient();
  std::string big(70000, 'q');  // large enough that curl would otherwise send Expect
  auto r = http->Do({"POST", server.url() + "/echo", "query=" + big,
                     "application/x-www-form-urlencoded", milliseconds(2000)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "POST|query=" + big + "|application/x-www-form-urlencoded|no");
  auto empty = http->Do({"POST", server.url() + "/echo", "", "text/plain", milliseconds(2000)});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->body, "POST||text/plain|no");
}

TEST(CurlHttpClientTest, AnExpectedSizeIsOnlyAHint) {
  LocalHttpServer server(Route);
  auto http = MakeCurlHttpClient();
  for (std::size_t hint : {std::size_t{1}, std::size_t{4096}, std::size_t{1} << 40}) {
    HttpClientRequest request{"GET", server.url() + "/big", "", "", milliseconds(2000)};
    request.expected_body_bytes = hint;  // smaller, exact, and far over the body limit
    auto r = http->Do(request);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->body, std::string(4096, 'x')) << hint;
  }
}

TEST(CurlHttpClientTest, ConnectionsAreKeptAlive) {
  LocalHttpServer server(Route);
  auto http = MakeCurlHttpClient();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(http->Do({"GET", server.url() + "/a", "", "", milliseconds(2000)}).ok());
  }
  EXPECT_EQ(server.connections(), 1);
}

TEST(CurlHttpClientTest, ConcurrentRequests) {
  LocalHttpServer server(Route);
  auto http = MakeCurlHttpClient();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::string path = "/t" + std::to_string(t) + "-" + std::to_string(i);
        auto r = http->Do({"GET", server.url() + path, "", "", milliseconds(5000)});
        if (r.ok() && r->body == "hello " + path) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 80);
  EXPECT_LE(server.connections(), 8);
}

TEST(CurlHttpClientTest, Timeout) {
  LocalHttpServer server(Route);
  auto http = MakeCurlHttpClient();
  auto start = std::chrono::steady_clock::now();
  auto r = http->Do({"GET", server.url() + "/slow", "", "", milliseconds(200)});
  ASSERT_FALSE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2500));
  EXPECT_EQ(r.error().code, ErrorCode::kNetwork);
  EXPECT_EQ(r.error().message, "request to " + server.url() + "/slow timed out after 200ms");
  // The client still works afterwards.
  EXPECT_TRUE(http->Do({"GET", server.url() + "/a", "", "", milliseconds(2000)}).ok());
}

TEST(CurlHttpClientTest, RefusedConnectionNamesTheUrlWithoutCredentials) {
  int port = ClosedPort();
  auto http = MakeCurlHttpClient();
  std::string url = "http://user:s3cret@127.0.0.1:" + std::to_string(port) + "/metrics?q=1";
  auto r = http->Do({"GET", url, "", "", milliseconds(2000)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNetwork);
  EXPECT_THAT(r.error().message,
              HasSubstr("cannot connect to http://127.0.0.1:" + std::to_string(port) + "/metrics"));
  EXPECT_THAT(r.error().message, Not(HasSubstr("s3cret")));
}

TEST(CurlHttpClientTest, BodiesAreCapped) {
  LocalHttpServer server(Route);
  auto http = MakeCurlHttpClient(1024);
  auto r = http->Do({"GET", server.url() + "/big", "", "", milliseconds(2000)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "the response from " + server.url() + "/big is larger than 1024 bytes");
  EXPECT_TRUE(http->Do({"GET", server.url() + "/small", "", "", milliseconds(2000)}).ok());
}

TEST(CurlHttpClientTest, RejectsOtherMethodsAndSchemes) {
  auto http = MakeCurlHttpClient();
  auto del = http->Do({"DELETE", "http://127.0.0.1:1/", "", "", milliseconds(100)});
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(del.error().code, ErrorCode::kInternal);
  auto file = http->Do({"GET", "file:///etc/passwd", "", "", milliseconds(100)});
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().code, ErrorCode::kNetwork);
}

}  // namespace
}  // namespace powerctl
