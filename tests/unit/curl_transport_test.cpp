// The curl transport against real local HTTPS servers: a small Python (stdlib only) server
// started by the suite, with certificates from core/manifests/tls.h.

#include "core/kube/transport.h"
#include "tests/unit/test_https_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace powerctl::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;
using testsupport::HttpsServer;
using testsupport::SuiteFiles;

class CurlTransportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { files_ = new SuiteFiles(); }
  static void TearDownTestSuite() {
    delete files_;
    files_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(files_->error.empty()) << files_->error; }

  static const SuiteFiles& Files() { return *files_; }
  static std::string Url(int port, const std::string& host = "localhost") {
    return "https://" + host + ":" + std::to_string(port);
  }

  ClusterConnection Connection(int port) const {
    ClusterConnection connection;
    connection.server = Url(port);
    connection.ca_pem = Files().material.ca_cert;
    connection.credentials.token = "tok-123";
    return connection;
  }

  static std::unique_ptr<HttpTransport> Make(const ClusterConnection& connection,
                                             TransportOptions options = {}) {
    Result<std::unique_ptr<HttpTransport>> made = MakeCurlTransport(connection, options);
    EXPECT_TRUE(made.ok()) << made.error().message;
    return made.ok() ? std::move(made).value() : nullptr;
  }

  static Result<HttpResponse> Send(HttpTransport& transport, const std::string& method,
                                   const std::string& path, const std::string& body = "",
                                   const std::string& content_type = "") {
    HttpRequest request;
    request.method = method;
    request.path = path;
    request.body = body;
    request.content_type = content_type;
    return transport.Send(request);
  }

  // GET /echo and the server's view of the request.
  static json Echo(HttpTransport& transport) {
    Result<HttpResponse> response = Send(transport, "GET", "/echo");
    EXPECT_TRUE(response.ok()) << response.error().message;
    if (!response.ok()) return json::object();
    EXPECT_EQ(response->status, 200);
    return json::parse(response->body, nullptr, false);
  }

  static SuiteFiles* files_;
};

SuiteFiles* CurlTransportTest::files_ = nullptr;

TEST_F(CurlTransportTest, SendsTheRequestWithBearerTokenAndLowerCasesHeaders) {
  auto transport = Make(Connection(Files().tls.port()));
  ASSERT_NE(transport, nullptr);
  Result<HttpResponse> response =
      Send(*transport, "PATCH", "/echo?x=1", R"({"a":1})", "application/merge-patch+json");
  ASSERT_TRUE(response.ok()) << response.error().message;
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->headers["content-type"], "application/json");
  EXPECT_EQ(response->headers["x-multi"], "a, b");
  json seen = json::parse(response->body);
  EXPECT_EQ(seen["method"], "PATCH");
  EXPECT_EQ(seen["path"], "/echo?x=1");
  EXPECT_EQ(seen["body"], R"({"a":1})");
  EXPECT_EQ(seen["headers"]["authorization"], "Bearer tok-123");
  EXPECT_EQ(seen["headers"]["content-type"], "application/merge-patch+json");
  EXPECT_EQ(seen["headers"]["accept"], "application/json");
  EXPECT_FALSE(seen["headers"].contains("expect"));

  Result<HttpResponse> deleted =
      Send(*transport, "DELETE", "/echo", R"({"kind":"DeleteOptions"})", "application/json");
  ASSERT_TRUE(deleted.ok()) << deleted.error().message;
  EXPECT_EQ(json::parse(deleted->body)["method"], "DELETE");
  EXPECT_EQ(json::parse(deleted->body)["body"], R"({"kind":"DeleteOptions"})");
}

TEST_F(CurlTransportTest, ReusesTheConnection) {
  auto transport = Make(Connection(Files().tls.port()));
  ASSERT_NE(transport, nullptr);
  json first = Echo(*transport);
  json second = Echo(*transport);
  EXPECT_EQ(first["client_port"], second["client_port"]);
}

TEST_F(CurlTransportTest, RejectsAServerSignedByAnotherCa) {
  ClusterConnection connection = Connection(Files().tls.port());
  connection.ca_pem = Files().other.ca_cert;
  auto transport = Make(connection);
  ASSERT_NE(transport, nullptr);
  Result<HttpResponse> response = Send(*transport, "GET", "/echo");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kNetwork);
  EXPECT_THAT(response.error().message, HasSubstr(Url(Files().tls.port())));
  EXPECT_THAT(response.error().message, HasSubstr("not trusted"));

  connection.insecure_skip_tls_verify = true;
  auto insecure = Make(connection);
  ASSERT_NE(insecure, nullptr);
  EXPECT_EQ(Echo(*insecure)["path"], "/echo");
}

TEST_F(CurlTransportTest, TlsServerNameIsWhatTheCertificateIsCheckedAgainst) {
  int port = Files().tls.port();
  ClusterConnection connection = Connection(port);
  connection.server = Url(port, "127.0.0.1");  // not in the certificate's SANs
  auto by_ip = Make(connection);
  ASSERT_NE(by_ip, nullptr);
  Result<HttpResponse> refused = Send(*by_ip, "GET", "/echo");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kNetwork);

  connection.tls_server_name = "apiserver.test";
  auto named = Make(connection);
  ASSERT_NE(named, nullptr);
  json seen = Echo(*named);
  EXPECT_EQ(seen["headers"]["host"], "127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(seen["sni"], "apiserver.test");

  connection.tls_server_name = "other.test";
  auto wrong = Make(connection);
  ASSERT_NE(wrong, nullptr);
  Result<HttpResponse> mismatch = Send(*wrong, "GET", "/echo");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(mismatch.error().message, HasSubstr("https://127.0.0.1:" + std::to_string(port)));
}

TEST_F(CurlTransportTest, ClientCertificateAuthentication) {
  ClusterConnection connection = Connection(Files().mtls.port());
  connection.credentials.token.clear();
  auto anonymous = Make(connection);
  ASSERT_NE(anonymous, nullptr);
  Result<HttpResponse> rejected = Send(*anonymous, "GET", "/echo");
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error().code, ErrorCode::kNetwork);

  connection.credentials.client_cert_pem = Files().material.client_cert;
  connection.credentials.client_key_pem = Files().material.client_key;
  auto authenticated = Make(connection);
  ASSERT_NE(authenticated, nullptr);
  json seen = Echo(*authenticated);
  EXPECT_EQ(seen["client_cn"], "powerctl-test-user");
  EXPECT_FALSE(seen["headers"].contains("authorization"));
}

TEST_F(CurlTransportTest, TokenFileIsReadAgainWhenItChanges) {
  fs::path token_file = Files().dir / "token";
  std::ofstream(token_file) << "first-token\n";
  ClusterConnection connection = Connection(Files().tls.port());
  connection.credentials.token_file = token_file;  // wins over token
  auto transport = Make(connection);
  ASSERT_NE(transport, nullptr);
  EXPECT_EQ(Echo(*transport)["headers"]["authorization"], "Bearer first-token");
  std::ofstream(token_file) << "rotated-token-2\n";
  EXPECT_EQ(Echo(*transport)["headers"]["authorization"], "Bearer rotated-token-2");
}

TEST_F(CurlTransportTest, ExecCredentialsAreRefreshedOnceOn401) {
  ClusterConnection connection = Connection(Files().tls.port());
  connection.credentials.token.clear();
  ExecConfig exec;
  exec.api_version = "client.authentication.k8s.io/v1";
  exec.command = (Files().dir / "plugin.sh").string();
  exec.interactive_mode = "Never";
  connection.credentials.exec = exec;
  TransportOptions options;
  options.environment = {{"PATH", "/usr/bin:/bin"}, {"STATE_DIR", Files().dir.string()}};
  auto transport = Make(connection, options);
  ASSERT_NE(transport, nullptr);
  fs::path count = Files().dir / "plugin_count";
  fs::remove(count);
  auto runs = [&] {
    std::ifstream in(count);
    int n = 0;
    in >> n;
    return n;
  };

  Files().SetExpectedToken("exec-2");  // the first token (exec-1) is refused
  Result<HttpResponse> response = Send(*transport, "GET", "/auth");
  ASSERT_TRUE(response.ok()) << response.error().message;
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(runs(), 2);
  ASSERT_TRUE(Send(*transport, "GET", "/auth").ok());
  EXPECT_EQ(runs(), 2);  // cached: the plugin printed no expirationTimestamp

  Files().SetExpectedToken("never");
  Result<HttpResponse> refused = Send(*transport, "GET", "/auth");
  ASSERT_TRUE(refused.ok()) << refused.error().message;
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(runs(), 3);  // one refresh, one retry
}

TEST_F(CurlTransportTest, StreamDeliversLinesAcrossChunks) {
  auto transport = Make(Connection(Files().tls.port()));
  ASSERT_NE(transport, nullptr);
  std::vector<std::string> lines;
  HttpRequest request;
  request.method = "GET";
  request.path = "/stream";
  request.timeout = std::chrono::milliseconds(0);
  std::string error_body;
  Result<long> status = transport->Stream(
      request,
      [&](std::string_view line) {
        lines.emplace_back(line);
        return true;
      },
      &error_body);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(*status, 200);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(json::parse(lines[2])["object"]["n"], 2);
  EXPECT_EQ(lines[3], R"({"type":"BOOKMARK"})");  // the last line had no newline
}

TEST_F(CurlTransportTest, StreamStopsWhenTheHandlerSaysSo) {
  auto transport = Make(Connection(Files().tls.port()));
  ASSERT_NE(transport, nullptr);
  HttpRequest request;
  request.path = "/endless";
  request.method = "GET";
  request.timeout = std::chrono::milliseconds(0);
  int seen = 0;
  auto start = std::chrono::steady_clock::now();
  Result<long> status = transport->Stream(
      request, [&](std::string_view) { return ++seen < 3; }, nullptr);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(*status, 200);
  EXPECT_EQ(seen, 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST_F(CurlTransportTest, CancelEndsAnIdleStreamAtOnce) {
  auto transport = Make(Connection(Files().tls.port()));
  ASSERT_NE(transport, nullptr);
  std::atomic<bool> cancel{false};
  HttpRequest request;
  request.method = "GET";
  request.path = "/idle";  // silent for 30s: only the cancel can end it in time
  request.timeout = std::chrono::milliseconds(0);
  request.cancel = &cancel;
  std::jthread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  Result<long> status = transport->Stream(
      request, [](std::string_view) { return true; }, nullptr);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(IsCancelled(status.error())) << status.error().message;
  EXPECT_THAT(status.error().message, HasSubstr("/idle cancelled"));
  // libcurl looks at the flag about once a second while nothing arrives.
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST_F(CurlTransportTest, CancelAbortsARequestAndRefusesNewOnes) {
  auto transport = Make(Connection(Files().tls.port()));
  ASSERT_NE(transport, nullptr);
  std::atomic<bool> cancel{false};
  HttpRequest request;
  request.method = "GET";
  request.path = "/slow";  // answers after 3s
  request.cancel = &cancel;
  std::jthread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  Result<HttpResponse> response = transport->Send(request);
  ASSERT_FALSE(response.ok());
  EXPECT_TRUE(IsCancelled(response.error())) << response.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
  // Already cancelled: no request at all, and the shared handle still serves others.
  request.path = "/echo";
  Result<HttpResponse> refused = transport->Send(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(IsCancelled(refused.error()));
  EXPECT_EQ(Echo(*transport)["path"], "/echo");
}

TEST_F(CurlTransportTest, StreamReturnsTheErrorBodyOfAFailedWatch) {
  auto transport = Make(Connection(Files().tls.port()));
  ASSERT_NE(transport, nullptr);
  HttpRequest request;
  request.method = "GET";
  request.path = "/status/403";
  std::string error_body;
  bool called = false;
  Result<long> status = transport->Stream(
      request,
      [&](std::string_view) {
        called = true;
        return true;
      },
      &error_body);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(*status, 403);
  EXPECT_FALSE(called);
  EXPECT_THAT(error_body, HasSubstr("\"Forbidden\""));
}

TEST_F(CurlTransportTest, ConnectionRefusedNamesTheServer) {
  int port = testsupport::UnusedPort();
  ClusterConnection connection = Connection(port);
  connection.server = Url(port, "127.0.0.1");
  auto transport = Make(connection);
  ASSERT_NE(transport, nullptr);
  Result<HttpResponse> response = Send(*transport, "GET", "/api/v1/nodes");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kNetwork);
  EXPECT_EQ(response.error().message,
            "cannot connect to https://127.0.0.1:" + std::to_string(port) + ": Connection refused");
  HttpRequest watch;
  watch.method = "GET";
  watch.path = "/api/v1/pods?watch=1";
  Result<long> streamed = transport->Stream(
      watch, [](std::string_view) { return true; }, nullptr);
  ASSERT_FALSE(streamed.ok());
  EXPECT_THAT(streamed.error().message, HasSubstr("Connection refused"));
}

TEST_F(CurlTransportTest, RequestTimeout) {
  auto transport = Make(Connection(Files().tls.port()));
  ASSERT_NE(transport, nullptr);
  HttpRequest request;
  request.method = "GET";
  request.path = "/slow";
  request.timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  Result<HttpResponse> response = transport->Send(request);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kNetwork);
  EXPECT_THAT(response.error().message, HasSubstr("timed out"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(CurlTransportTest, LogsNeitherCredentialsNorBodies) {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto logger = std::make_shared<spdlog::logger>("kube-test", sink);
  logger->set_level(spdlog::level::trace);
  TransportOptions options;
  options.log = logger;
  ClusterConnection connection = Connection(Files().tls.port());
  connection.credentials.token = "sekrit-token-xyz";
  connection.credentials.client_cert_pem = Files().material.client_cert;
  connection.credentials.client_key_pem = Files().material.client_key;
  auto transport = Make(connection, options);
  ASSERT_NE(transport, nullptr);
  ASSERT_TRUE(Send(*transport, "POST", "/echo", R"({"stringData":{"p":"body-secret"}})").ok());
  ASSERT_TRUE(Send(*transport, "GET", "/status/401").ok());
  logger->flush();
  std::string log = captured.str();
  EXPECT_THAT(log, HasSubstr("POST " + Url(Files().tls.port()) + "/echo 200 "));
  EXPECT_THAT(log, HasSubstr("GET " + Url(Files().tls.port()) + "/status/401 401 "));
  EXPECT_THAT(log, Not(HasSubstr("sekrit")));
  EXPECT_THAT(log, Not(HasSubstr("body-secret")));
  EXPECT_THAT(log, Not(HasSubstr("BEGIN")));
  EXPECT_THAT(log, Not(HasSubstr("Authorization")));
}

TEST_F(CurlTransportTest, AResponseOverTheCapFailsWithoutRetrying) {
  auto transport = Make(Connection(Files().tls.port()));
  ASSERT_NE(transport, nullptr);
  Result<HttpResponse> response = Send(*transport, "GET", "/huge");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kApi);
  EXPECT_THAT(response.error().message, HasSubstr("larger than 64 MiB"));
  EXPECT_EQ(Echo(*transport)["method"], "GET");  // the transport still works
}

TEST_F(CurlTransportTest, InvalidServerUrl) {
  for (std::string server : {"ftp://example.com", "not a url", ""}) {
    ClusterConnection connection;
    connection.server = server;
    Result<std::unique_ptr<HttpTransport>> made = MakeCurlTransport(connection, {});
    ASSERT_FALSE(made.ok()) << server;
    EXPECT_EQ(made.error().code, ErrorCode::kInvalidInput);
  }
}

}  // namespace
}  // namespace powerctl::kube
