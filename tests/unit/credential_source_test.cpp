#include "core/kube/credential_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

namespace powerctl::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Prints token "exec-N" on its N-th run, with $EXPIRES as expirationTimestamp if set and
// a client certificate if $CERT is set.
constexpr char kPlugin[] = R"sh(#!/bin/sh
n=$(cat "$STATE_DIR/count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$STATE_DIR/count"
extra=""
[ -n "$EXPIRES" ] && extra=",\"expirationTimestamp\":\"$EXPIRES\""
[ -n "$CERT" ] && extra="$extra,\"clientCertificateData\":\"cert-$n\",\"clientKeyData\":\"key-$n\""
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-%s"%s}}\n' "$n" "$extra"
)sh";

std::string Rfc3339(std::chrono::system_clock::time_point when) {
  std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

class CredentialSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "powerctl-creds-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::ofstream(dir_ / "plugin.sh") << kPlugin;
    ::chmod((dir_ / "plugin.sh").c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ClusterConnection ExecConnection(
      std::vector<std::pair<std::string, std::string>> env = {}) const {
    ClusterConnection connection;
    connection.server = "https://127.0.0.1:6443";
    connection.credentials.token = "static";
    ExecConfig exec;
    exec.api_version = "client.authentication.k8s.io/v1";
    exec.command = (dir_ / "plugin.sh").string();
    exec.interactive_mode = "Never";
    exec.env = std::move(env);
    connection.credentials.exec = exec;
    return connection;
  }
  std::map<std::string, std::string> Environment() const {
    return {{"PATH", "/usr/bin:/bin"}, {"STATE_DIR", dir_.string()}};
  }

  fs::path dir_;
};

TEST_F(CredentialSourceTest, StaticTokenAndCertificate) {
  ClusterConnection connection;
  connection.credentials.token = "t";
  connection.credentials.client_cert_pem = "cert";
  connection.credentials.client_key_pem = "key";
  CredentialSource source(connection, {});
  Result<CurrentCredential> credential = source.Get();
  ASSERT_TRUE(credential.ok());
  EXPECT_EQ(credential->token, "t");
  EXPECT_EQ(credential->cert_pem, "cert");
  EXPECT_FALSE(source.Invalidate("t"));  // nothing to refresh: do not retry
}

TEST_F(CredentialSourceTest, TokenFileFollowsRotationAndSurvivesTheSwap) {
  ClusterConnection connection;
  connection.credentials.token = "ignored";
  connection.credentials.token_file = (dir_ / "token").string();
  std::ofstream(dir_ / "token") << "  one\n";
  CredentialSource source(connection, {});
  EXPECT_EQ(source.Get()->token, "one");
  std::ofstream(dir_ / "token.new") << "two";
  fs::rename(dir_ / "token.new", dir_ / "token");  // a new inode, as kubelet's swap does
  EXPECT_EQ(source.Get()->token, "two");
  fs::remove(dir_ / "token");
  EXPECT_EQ(source.Get()->token, "two");  // briefly missing: keep the last token
  EXPECT_FALSE(source.Invalidate("two"));
}

TEST_F(CredentialSourceTest, TokenFileErrors) {
  ClusterConnection connection;
  connection.credentials.token_file = (dir_ / "missing").string();
  Result<CurrentCredential> missing = CredentialSource(connection, {}).Get();
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
  EXPECT_THAT(missing.error().message, HasSubstr((dir_ / "missing").string()));

  std::ofstream(dir_ / "empty") << "\n";
  connection.credentials.token_file = (dir_ / "empty").string();
  Result<CurrentCredential> empty = CredentialSource(connection, {}).Get();
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.error().message, HasSubstr("is empty"));
}

TEST_F(CredentialSourceTest, ExecCredentialsAreCachedUntilShortlyBeforeTheyExpire) {
  auto far = Rfc3339(std::chrono::system_clock::now() + std::chrono::hours(1));
  CredentialSource lasting(ExecConnection({{"EXPIRES", far}}), Environment());
  EXPECT_EQ(lasting.Get()->token, "exec-1");
  EXPECT_EQ(lasting.Get()->token, "exec-1");
  EXPECT_TRUE(lasting.Invalidate("exec-1"));
  EXPECT_EQ(lasting.Get()->token, "exec-2");

  auto soon = Rfc3339(std::chrono::system_clock::now() + std::chrono::seconds(10));
  CredentialSource expiring(ExecConnection({{"EXPIRES", soon}}), Environment());
  EXPECT_EQ(expiring.Get()->token, "exec-3");
  EXPECT_EQ(expiring.Get()->token, "exec-4");  // within the refresh margin: run again
}

TEST_F(CredentialSourceTest, ExecClientCertificateWinsOverTheKubeconfigs) {
  ClusterConnection connection = ExecConnection({{"CERT", "1"}});
  connection.credentials.client_cert_pem = "kubeconfig-cert";
  connection.credentials.client_key_pem = "kubeconfig-key";
  Result<CurrentCredential> credential = CredentialSource(connection, Environment()).Get();
  ASSERT_TRUE(credential.ok()) << credential.error().message;
  EXPECT_EQ(credential->cert_pem, "cert-1");
  EXPECT_EQ(credential->key_pem, "key-1");
  EXPECT_EQ(credential->token, "exec-1");
}

TEST_F(CredentialSourceTest, ExecFailuresAreReturned) {
  ClusterConnection connection = ExecConnection();
  connection.credentials.exec->command = (dir_ / "missing-plugin").string();
  Result<CurrentCredential> credential = CredentialSource(connection, Environment()).Get();
  ASSERT_FALSE(credential.ok());
  EXPECT_THAT(credential.error().message, HasSubstr("missing-plugin"));
}

}  // namespace
}  // namespace powerctl::kube
