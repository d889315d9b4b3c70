// The shared libcurl layer: its callbacks on their own, and Transfer against an in-process
// HTTP/1.1 server on loopback.

#include "core/common/curl_easy.h"

#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace powerctl::curl {
namespace {

using std::chrono::milliseconds;
using telemetry_test::LocalHttpServer;
using telemetry_test::ServerRequest;
using telemetry_test::ServerResponse;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The server's view of a request, as the body of the answer.
ServerResponse Echo(const ServerRequest& r) {
  if (r.target == "/slow") return {200, "late", "text/plain", milliseconds(3000)};
  std::string headers;
  for (const auto& [name, value] : r.headers) headers += name + "=" + value + ";";
  return {200, r.method + "|" + r.body + "|" + headers, "application/json"};
}

struct Answer {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
  bool too_large = false;
  std::string error;  // NetworkError's message when the transfer failed
};

Answer Exchange(CURL* handle, const Request& request, std::size_t max_body_bytes = 1 << 20) {
  Answer answer;
  Transfer transfer(handle, request);
  transfer.KeepResponse(&answer.body, max_body_bytes, &answer.headers);
  answer.code = transfer.Perform();
  answer.status = transfer.status();
  answer.too_large = transfer.body_too_large();
  if (answer.code != CURLE_OK) answer.error = transfer.NetworkError(answer.code, "X").message;
  return answer;
}

Handle MakeHandle() {
  Result<Handle> handle = NewHandle();
  EXPECT_TRUE(handle.ok()) << handle.error().message;
  return handle.ok() ? std::move(handle).value() : Handle();
}

TEST(CollectHeaderTest, LowerCasesNamesJoinsRepeatsAndStartsOverOnANewStatusLine) {
  std::map<std::string, std::string> headers;
  auto feed = [&](std::string line) { CollectHeader(line.data(), 1, line.size(), &headers); };
  feed("HTTP/1.1 100 Continue\r\n");
  feed("X-Early: 1\r\n");
  feed("HTTP/1.1 429 Too Many Requests\r\n");
  feed("Retry-After:  3 \r\n");
  feed("Warning: a\r\n");
  feed("warning: b\r\n");
  feed("\r\n");
  EXPECT_EQ(headers,
            (std::map<std::string, std::string>{{"retry-after", "3"}, {"warning", "a, b"}}));
}

TEST(AppendCappedTest, KeepsUpToTheCapThenRefuses) {
  std::string data;
  CappedBody body{&data, 8};
  std::string chunk = "abcde";
  EXPECT_EQ(AppendCapped(chunk.data(), 1, chunk.size(), &body), 5u);
  EXPECT_FALSE(body.too_large);
  EXPECT_EQ(AppendCapped(chunk.data(), 1, 3, &body), 3u);  // exactly at the cap
  EXPECT_FALSE(body.too_large);
  EXPECT_EQ(AppendCapped(chunk.data(), 1, 1, &body), 0u);
  EXPECT_TRUE(body.too_large);
  EXPECT_EQ(data, "abcdeabc");
}

TEST(AbortIfCancelledTest, AbortsOnceTheFlagIsSet) {
  std::atomic<bool> cancel{false};
  EXPECT_EQ(AbortIfCancelled(&cancel, 0, 0, 0, 0), 0);
  cancel = true;
  EXPECT_NE(AbortIfCancelled(&cancel, 0, 0, 0, 0), 0);
}

TEST(TransferTest, GetKeepsStatusBodyAndHeaders) {
  LocalHttpServer server(Echo);
  Handle handle = MakeHandle();
  Request request;
  request.url = server.url() + "/a?b=1";
  request.headers = {"Authorization: Bearer t"};
  Answer got = Exchange(handle.get(), request);
  ASSERT_EQ(got.code, CURLE_OK) << got.error;
  EXPECT_EQ(got.status, 200);
  EXPECT_THAT(got.body, StartsWith("GET||"));
  EXPECT_THAT(got.body, HasSubstr("authorization=Bearer t;"));
  EXPECT_THAT(got.body, HasSubstr("user-agent=powerctl;"));
  EXPECT_THAT(got.body, Not(HasSubstr("content-length")));
  EXPECT_EQ(got.headers.at("content-type"), "application/json");
}

TEST(TransferTest, MethodsSendTheirBodiesWithoutExpect) {
  LocalHttpServer server(Echo);
  Handle handle = MakeHandle();
  std::string big(70000, 'q');  // large enough that libcurl would otherwise send Expect
  Request post;
  post.url = server.url() + "/p";
  post.method = "POST";
  post.body = big;
  post.content_type = "text/plain";
  Answer posted = Exchange(handle.get(), post);
  ASSERT_EQ(posted.code, CURLE_OK) << posted.error;
  EXPECT_THAT(posted.body, StartsWith("POST|" + big + "|"));
  EXPECT_THAT(posted.body, HasSubstr("content-type=text/plain;"));
  EXPECT_THAT(posted.body, Not(HasSubstr("expect=")));

  // The same handle again: the last request's options are gone.
  Request put;
  put.url = server.url() + "/p";
  put.method = "PUT";  // sends its (empty) body
  Answer empty_put = Exchange(handle.get(), put);
  ASSERT_EQ(empty_put.code, CURLE_OK) << empty_put.error;
  EXPECT_THAT(empty_put.body, StartsWith("PUT||"));
  EXPECT_THAT(empty_put.body, HasSubstr("content-length=0;"));

  Request del;
  del.url = server.url() + "/p";
  del.method = "DELETE";
  del.body = R"({"kind":"DeleteOptions"})";
  Answer deleted = Exchange(handle.get(), del);
  ASSERT_EQ(deleted.code, CURLE_OK) << deleted.error;
  EXPECT_THAT(deleted.body, StartsWith(R"(DELETE|{"kind":"DeleteOptions"}|)"));
  EXPECT_EQ(server.connections(), 1);  // one connection for all three
}

TEST(TransferTest, ABodyOverTheCapFailsTheTransfer) {
  LocalHttpServer server([](const ServerRequest&) { return ServerResponse{200, "0123456789"}; });
  Handle handle = MakeHandle();
  Request request;
  request.url = server.url() + "/";
  Answer capped = Exchange(handle.get(), request, 9);
  EXPECT_EQ(capped.code, CURLE_WRITE_ERROR);
  EXPECT_TRUE(capped.too_large);
  Answer exact = Exchange(handle.get(), request, 10);
  EXPECT_EQ(exact.code, CURLE_OK);
  EXPECT_FALSE(exact.too_large);
  EXPECT_EQ(exact.body, "0123456789");
}

TEST(TransferTest, OnlyHttpAndHttps) {
  Handle handle = MakeHandle();
  Request request;
  request.url = "file:///etc/passwd";
  Answer got = Exchange(handle.get(), request);
  EXPECT_EQ(got.code, CURLE_UNSUPPORTED_PROTOCOL);
  EXPECT_THAT(got.error, StartsWith("request to X failed: "));
}

TEST(NetworkErrorTest, ARefusedConnectionInTheSystemsWords) {
  int port = 0;
  {
    LocalHttpServer closed([](const ServerRequest&) { return ServerResponse{}; });
    port = closed.port();
  }
  Handle handle = MakeHandle();
  Request request;
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  Answer got = Exchange(handle.get(), request);
  EXPECT_EQ(got.code, CURLE_COULDNT_CONNECT);
  EXPECT_EQ(got.error, "cannot connect to X: Connection refused");
}

TEST(NetworkErrorTest, ATimeoutNamesTheTimeoutThatRanOut) {
  LocalHttpServer server(Echo);
  Handle handle = MakeHandle();
  Request request;
  request.url = server.url() + "/slow";
  request.timeout = milliseconds(200);
  request.connect_timeout = milliseconds(150);  // connects at once: not this one
  Answer got = Exchange(handle.get(), request);
  EXPECT_EQ(got.code, CURLE_OPERATION_TIMEDOUT);
  EXPECT_EQ(got.error, "request to X timed out after 200ms");
}

// A listener whose accept queue is full: the kernel drops further SYNs, so a connect hangs.
class UnansweredListener {
 public:
  UnansweredListener() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len);
    ::listen(listen_fd_, 0);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    for (int i = 0; i < 4; ++i) {  // more than the queue holds
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      ::fcntl(fd, F_SETFL, O_NONBLOCK);
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
      fillers_.push_back(fd);
    }
    std::this_thread::sleep_for(milliseconds(100));  // let the handshakes fill the queue
  }
  ~UnansweredListener() {
    for (int fd : fillers_) ::close(fd);
    ::close(listen_fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<int> fillers_;
};

TEST(NetworkErrorTest, AConnectTimeoutSaysSo) {
  UnansweredListener listener;
  Handle handle = MakeHandle();
  Request request;
  request.url = listener.url();
  request.connect_timeout = milliseconds(200);
  request.timeout = milliseconds(5000);
  Answer got = Exchange(handle.get(), request);
  ASSERT_EQ(got.code, CURLE_OPERATION_TIMEDOUT) << got.error;
  EXPECT_EQ(got.error, "connecting to X timed out after 200ms");

  request.timeout = milliseconds(0);  // none, as for a watch
  got = Exchange(handle.get(), request);
  ASSERT_EQ(got.code, CURLE_OPERATION_TIMEDOUT) << got.error;
  EXPECT_EQ(got.error, "connecting to X timed out after 200ms");
}

TEST(TransferTest, ACancelledTransferAbortsAtOnce) {
  LocalHttpServer server(Echo);
  Handle handle = MakeHandle();
  std::atomic<bool> cancel{false};
  Request request;
  request.url = server.url() + "/slow";  // answers after 3 s
  request.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(100));
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  Answer got = Exchange(handle.get(), request);
  canceller.join();
  EXPECT_EQ(got.code, CURLE_ABORTED_BY_CALLBACK);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
}

}  // namespace
}  // namespace powerctl::curl
