// The parts of connection resolution kubeconfig_fuzzer drives, without files or processes:
// MergeFile + FromKubeconfig with a FileReader, and ParseExecCredential. Reading real files
// and running plugins is tested in connection_test.cpp.

#include "core/kube/connection_internal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

namespace powerctl::kube {
namespace {

using ::testing::HasSubstr;

ExecConfig V1() {
  ExecConfig exec;
  exec.api_version = "client.authentication.k8s.io/v1";
  exec.command = "get-token";
  return exec;
}

std::string WithExpiry(const std::string& timestamp) {
  return R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
             "status": {"token": "t", "expirationTimestamp": ")" +
         timestamp + R"("}})";
}

TEST(ExecCredentialTest, ReadsTokenAndExpiry) {
  auto cred = detail::ParseExecCredential(WithExpiry("2030-01-02T03:04:05.5+02:00"), V1(), "p");
  ASSERT_TRUE(cred.ok()) << cred.error().message;
  EXPECT_EQ(cred->token, "t");
  ASSERT_TRUE(cred->expires);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(cred->expires->time_since_epoch())
                .count(),
            1893546245500);  // 2030-01-02T01:04:05.5Z
}

// kubeconfig_fuzzer: year 1013 overflowed system_clock's 64-bit nanoseconds (UBSan: signed
// integer overflow); such times are now rejected like any other malformed timestamp.
TEST(ExecCredentialTest, TimesOutsideTheClockRangeAreRejected) {
  for (const char* timestamp :
       {"1013-11-25T12:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
        "1899-12-31T23:59:59-23:59", "2201-01-01T00:00:00Z"}) {
    auto cred = detail::ParseExecCredential(WithExpiry(timestamp), V1(), "p");
    ASSERT_FALSE(cred.ok()) << timestamp;
    EXPECT_EQ(cred.error().code, ErrorCode::kInvalidInput);
    EXPECT_THAT(cred.error().message, HasSubstr("expirationTimestamp is not an RFC 3339 time"));
  }
  EXPECT_TRUE(detail::ParseExecCredential(WithExpiry("1900-01-01T00:00:00Z"), V1(), "p").ok());
  EXPECT_TRUE(detail::ParseExecCredential(WithExpiry("2200-12-31T23:59:59Z"), V1(), "p").ok());
}

TEST(ExecCredentialTest, DeepNestingIsNotAnExecCredential) {
  const std::string deep = R"({"kind": "ExecCredential", "x": )" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  auto cred = detail::ParseExecCredential(deep, V1(), "p");
  ASSERT_FALSE(cred.ok());
  EXPECT_THAT(cred.error().message, HasSubstr("output is not an ExecCredential JSON object"));
}

// Files named by the kubeconfig go through the FileReader, relative to the kubeconfig.
TEST(FromKubeconfigTest, ReadsNamedFilesThroughTheReader) {
  static std::map<std::string, std::string> files;
  files = {{"/k/ca.crt", "CA"}, {"/k/tok", "T"}, {"/k/c.crt", "CERT"}, {"/k/c.key", "KEY"}};
  const detail::FileReader reader = [](const std::string& path,
                                       std::size_t) -> Result<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return MakeError(ErrorCode::kNotFound, "cannot read " + path);
    return it->second;
  };
  detail::Kubeconfig config;
  ASSERT_TRUE(detail::MergeFile("/k/config", R"(
clusters:
- {name: c, cluster: {server: "https://c:6443", certificate-authority: ca.crt}}
users:
- {name: u, user: {tokenFile: tok, client-certificate: c.crt, client-key: /k/c.key}}
- {name: v, user: {client-key: missing.key, client-certificate-data: Q0VSVA==}}
contexts:
- {name: x, context: {cluster: c, user: u, namespace: power}}
- {name: y, context: {cluster: c, user: v}}
current-context: x
)",
                                config)
                  .ok());
  ConnectionRequest request;
  auto c = detail::FromKubeconfig(request, config, reader);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://c:6443");
  EXPECT_EQ(c->ca_pem, "CA");
  EXPECT_EQ(c->namespace_, "power");
  EXPECT_EQ(c->credentials.token_file, "/k/tok");
  EXPECT_EQ(c->credentials.client_cert_pem, "CERT");
  EXPECT_EQ(c->credentials.client_key_pem, "KEY");

  request.context_flag = "y";
  auto y = detail::FromKubeconfig(request, config, reader);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(y.error().message,
              HasSubstr("user \"v\" in /k/config: client-key: cannot read /k/missing.key"));
}

}  // namespace
}  // namespace powerctl::kube
