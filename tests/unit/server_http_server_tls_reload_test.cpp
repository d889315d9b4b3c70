// HttpServer picks up TLS files replaced on disk (a renewed certificate, a Secret volume the
// kubelet updated) for new connections, and keeps the old ones when the new files do not load.
#include "core/manifests/tls.h"
#include "core/server/http_server.h"
#include "tests/unit/server_http_server_test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace powerctl::server {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using testing::Get;
using testing::RawClient;

manifests::KeyMaterial NewKeyMaterial(const std::string& client_cn) {
  manifests::CertificateRequest request;
  request.server_dns_names = {"localhost"};
  request.server_ip_addresses = {"127.0.0.1"};
  request.client_common_name = client_cn;
  auto material = manifests::GenerateKeyMaterial(request);
  EXPECT_TRUE(material.ok()) << material.error().message;
  return *material;
}

// A directory with one generation of key material, removed at the end of the test.
struct KeyDir {
  explicit KeyDir(const std::string& name)
      : path(fs::path(::testing::TempDir()) / ("powerctl-reload-" + name)) {
    fs::remove_all(path);
  }
  ~KeyDir() { fs::remove_all(path); }
  std::string File(std::string_view name) const { return (path / name).string(); }
  fs::path path;
};

bool Answers(int port, const std::string& ca_file) {
  RawClient c;
  if (!c.ConnectTls(port, {ca_file})) return false;
  auto r = c.Exchange(Get("/ping"));
  return r && r->status == 200;
}

// Polls until `condition` holds (the server looks at the files every reload_interval).
template <typename Condition>
bool Eventually(Condition condition) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(HttpServerTlsReloadTest, NewConnectionsGetTheCertificateWrittenOnDisk) {
  KeyDir first("first"), second("second"), live("live");
  ASSERT_TRUE(manifests::WriteKeyMaterial(first.path, NewKeyMaterial("a")).ok());
  ASSERT_TRUE(manifests::WriteKeyMaterial(second.path, NewKeyMaterial("b")).ok());
  ASSERT_TRUE(manifests::WriteKeyMaterial(live.path, NewKeyMaterial("a")).ok());
  fs::copy_file(first.File("server.crt"), live.File("server.crt"),
                fs::copy_options::overwrite_existing);
  fs::copy_file(first.File("server.key"), live.File("server.key"),
                fs::copy_options::overwrite_existing);

  std::mutex mu;
  std::vector<std::pair<bool, std::string>> reloads;
  HttpServerOptions options;
  options.tls = TlsOptions{live.File("server.crt"), live.File("server.key"), "", 20ms};
  options.on_tls_reload = [&](bool ok, const std::string& message) {
    std::lock_guard lock(mu);
    reloads.emplace_back(ok, message);
  };
  auto server = testing::StartServer(options, [](HttpServer& s) {
    s.Route("GET", "/ping", [](const HttpRequest&) { return HttpResponse::Text(200, "pong"); });
  });
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(Answers(server->port(), first.File("ca.crt")));
  ASSERT_FALSE(Answers(server->port(), second.File("ca.crt")));

  // A connection open before the swap keeps working on its old session.
  RawClient before;
  ASSERT_TRUE(before.ConnectTls(server->port(), {first.File("ca.crt")}));

  // Key first, then certificate, as a naive renewal script would: in between the pair does
  // not match, and the server must keep serving the old one.
  fs::copy_file(second.File("server.key"), live.File("server.key"),
                fs::copy_options::overwrite_existing);
  // The files are looked at when a connection arrives (at most every reload_interval).
  EXPECT_TRUE(Eventually([&] {
    EXPECT_TRUE(Answers(server->port(), first.File("ca.crt")));
    std::lock_guard lock(mu);
    return !reloads.empty();
  }));
  {
    std::lock_guard lock(mu);
    ASSERT_FALSE(reloads.empty());
    EXPECT_FALSE(reloads.front().first);
    EXPECT_NE(reloads.front().second.find("keeping the previous ones"), std::string::npos);
    EXPECT_NE(reloads.front().second.find(live.File("server.key")), std::string::npos);
  }
  EXPECT_TRUE(Answers(server->port(), first.File("ca.crt")));

  fs::copy_file(second.File("server.crt"), live.File("server.crt"),
                fs::copy_options::overwrite_existing);
  EXPECT_TRUE(Eventually([&] { return Answers(server->port(), second.File("ca.crt")); }));
  EXPECT_FALSE(Answers(server->port(), first.File("ca.crt")));
  {
    std::lock_guard lock(mu);
    EXPECT_TRUE(reloads.back().first);
  }
  auto r = before.Exchange(Get("/ping"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(HttpServerTlsReloadTest, ZeroIntervalNeverLooksAtTheFilesAgain) {
  KeyDir first("zero-first"), second("zero-second");
  ASSERT_TRUE(manifests::WriteKeyMaterial(first.path, NewKeyMaterial("a")).ok());
  ASSERT_TRUE(manifests::WriteKeyMaterial(second.path, NewKeyMaterial("b")).ok());
  std::atomic<int> reloads = 0;
  HttpServerOptions options;
  options.tls = TlsOptions{first.File("server.crt"), first.File("server.key"), "", 0ms};
  options.on_tls_reload = [&](bool, const std::string&) { ++reloads; };
  auto server = testing::StartServer(options, [](HttpServer& s) {
    s.Route("GET", "/ping", [](const HttpRequest&) { return HttpResponse::Text(200, "pong"); });
  });
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(manifests::WriteKeyMaterial(first.path, NewKeyMaterial("c")).ok());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(Answers(server->port(), first.File("ca.crt")));
  EXPECT_EQ(reloads, 0);
}

}  // namespace
}  // namespace powerctl::server
