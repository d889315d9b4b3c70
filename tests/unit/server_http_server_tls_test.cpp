// HttpServer over TLS and mutual TLS, with the fixed test keys in tests/fixtures/tls and a
// second CA generated in the test (a client certificate the server must not trust).
#include "core/manifests/tls.h"
#include "core/server/http_server.h"
#include "tests/unit/server_http_server_test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>

namespace powerctl::server {
namespace {

using namespace std::chrono_literals;
using testing::FixturePath;
using testing::Get;
using testing::RawClient;
using testing::TlsClientOptions;

HttpServerOptions TlsServerOptions(bool mutual) {
  HttpServerOptions o;
  o.limits.read_timeout = 2s;
  o.limits.idle_timeout = 2s;
  o.tls = TlsOptions{FixturePath("server.crt"), FixturePath("server.key"),
                     mutual ? FixturePath("ca.crt") : ""};
  return o;
}

void WhoAmI(HttpServer& s) {
  s.Route("GET", "/whoami",
          [](const HttpRequest& r) { return HttpResponse::Text(200, "cn=" + r.client_cn); });
}

TlsClientOptions TrustedClient() {
  return {FixturePath("ca.crt"), FixturePath("client.crt"), FixturePath("client.key")};
}

TEST(HttpServerTlsTest, ServesTlsAndVerifiesAgainstTheFixtureCa) {
  auto server = testing::StartServer(TlsServerOptions(false), WhoAmI);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->url(), "https://127.0.0.1:" + std::to_string(server->port()));
  RawClient c;
  ASSERT_TRUE(c.ConnectTls(server->port(), {FixturePath("ca.crt")}));
  auto r = c.Exchange(Get("/whoami"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "cn=");                // no client certificate asked for
  auto again = c.Exchange(Get("/whoami"));  // keep-alive over TLS
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}

TEST(HttpServerTlsTest, PlainHttpToTheTlsPortGetsNoAnswer) {
  auto server = testing::StartServer(TlsServerOptions(false), WhoAmI);
  RawClient c;
  ASSERT_TRUE(c.Connect(server->port()));
  EXPECT_FALSE(c.Exchange(Get("/whoami")));
}

TEST(HttpServerTlsTest, MutualTlsPassesTheClientCommonNameToHandlers) {
  auto server = testing::StartServer(TlsServerOptions(true), WhoAmI);
  RawClient c;
  ASSERT_TRUE(c.ConnectTls(server->port(), TrustedClient()));
  auto r = c.Exchange(Get("/whoami"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "cn=powerctl-scheduler");
}

TEST(HttpServerTlsTest, MutualTlsRejectsAClientWithoutCertificate) {
  auto server = testing::StartServer(TlsServerOptions(true), WhoAmI);
  RawClient c;
  // TLS 1.3: the handshake may complete on the client before the server's alert arrives;
  // either way no request is answered.
  if (c.ConnectTls(server->port(), {FixturePath("ca.crt")})) {
    EXPECT_FALSE(c.Exchange(Get("/whoami")));
  }
}

TEST(HttpServerTlsTest, MutualTlsRejectsACertificateFromAnotherCa) {
  manifests::CertificateRequest request;
  request.server_dns_names = {"localhost"};
  request.client_common_name = "intruder";
  auto other = manifests::GenerateKeyMaterial(request);
  ASSERT_TRUE(other.ok()) << other.error().message;
  auto dir = std::filesystem::path(::testing::TempDir()) / "powerctl-other-ca";
  ASSERT_TRUE(manifests::WriteKeyMaterial(dir, *other).ok());

  std::promise<std::string> failure;
  std::atomic<bool> reported = false;
  HttpServerOptions options = TlsServerOptions(true);
  options.on_tls_error = [&](const std::string& remote, const std::string& reason) {
    if (!reported.exchange(true)) failure.set_value(remote + " " + reason);
  };
  auto server = testing::StartServer(options, WhoAmI);
  RawClient c;
  TlsClientOptions intruder{FixturePath("ca.crt"), (dir / "client.crt").string(),
                            (dir / "client.key").string()};
  if (c.ConnectTls(server->port(), intruder)) {
    EXPECT_FALSE(c.Exchange(Get("/whoami")));
  }
  auto reported_failure = failure.get_future();
  ASSERT_EQ(reported_failure.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_NE(reported_failure.get().find("127.0.0.1:"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(HttpServerTlsTest, RefusesTls11) {
  auto server = testing::StartServer(TlsServerOptions(false), WhoAmI);
  RawClient old;
  EXPECT_FALSE(old.ConnectTls(server->port(), {"", "", "", TLS1_1_VERSION}));
  RawClient tls12;  // the minimum is accepted
  ASSERT_TRUE(tls12.ConnectTls(server->port(),
                               {FixturePath("ca.crt"), "", "", TLS1_2_VERSION, TLS1_2_VERSION}));
  auto r = tls12.Exchange(Get("/whoami"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(HttpServerTlsTest, TlsLimitsApplyInsideTheEncryptedStream) {
  HttpServerOptions options = TlsServerOptions(true);
  options.limits.body_bytes = 100;
  auto server = testing::StartServer(options, WhoAmI);
  RawClient c;
  ASSERT_TRUE(c.ConnectTls(server->port(), TrustedClient()));
  auto r = c.Exchange(testing::Post("/whoami", std::string(200, 'x')));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
}

TEST(HttpServerTlsTest, CreateNamesTheBadTlsFile) {
  HttpServerOptions missing = TlsServerOptions(false);
  missing.tls->cert_file = "/nonexistent/tls.crt";
  auto r = HttpServer::Create(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("/nonexistent/tls.crt"), std::string::npos);

  HttpServerOptions swapped = TlsServerOptions(false);
  swapped.tls->key_file = FixturePath("client.key");  // a key of another certificate
  auto s = HttpServer::Create(swapped);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(s.error().message.find("does not match"), std::string::npos);

  HttpServerOptions not_pem = TlsServerOptions(true);
  not_pem.tls->client_ca_file = FixturePath("make.sh");
  auto t = HttpServer::Create(not_pem);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("make.sh"), std::string::npos);
}

}  // namespace
}  // namespace powerctl::server
