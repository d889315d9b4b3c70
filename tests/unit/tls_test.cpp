#include "core/manifests/tls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace powerctl::manifests {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr std::int64_t kDay = 24 * 60 * 60;

CertificateRequest ExtenderRequest() {
  CertificateRequest request;
  request.server_common_name = "powerctl-extender.powerctl.svc";
  request.server_dns_names = {"powerctl-extender", "powerctl-extender.powerctl",
                              "powerctl-extender.powerctl.svc.cluster.local"};
  request.server_ip_addresses = {"127.0.0.1", "::1"};
  return request;
}

// Key generation is the slow part, so tests share one set and copy it to mutate.
const KeyMaterial& SharedMaterial() {
  static const KeyMaterial* material = [] {
    Result<KeyMaterial> generated = GenerateKeyMaterial(ExtenderRequest());
    EXPECT_TRUE(generated.ok()) << generated.error().message;
    return new KeyMaterial(generated.ok() ? *generated : KeyMaterial{});
  }();
  return *material;
}

std::int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

mode_t ModeOf(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class TlsFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::path(::testing::TempDir()) /
            ("powerctl_tls_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Runs a shell command, returning its exit status and capturing its output for messages.
  int Run(const std::string& command, std::string* output) {
    const fs::path log = root_ / "command.log";
    const int status = std::system((command + " >'" + log.string() + "' 2>&1").c_str());
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    *output = text.str();
    return status;
  }

  fs::path root_;
};

TEST(TlsTest, GeneratedMaterialVerifies) {
  const KeyMaterial& material = SharedMaterial();
  EXPECT_THAT(material.ca_cert, StartsWith("-----BEGIN CERTIFICATE-----"));
  EXPECT_THAT(material.server_cert, StartsWith("-----BEGIN CERTIFICATE-----"));
  EXPECT_THAT(material.client_cert, StartsWith("-----BEGIN CERTIFICATE-----"));
  for (const std::string* key : {&material.ca_key, &material.server_key, &material.client_key}) {
    EXPECT_THAT(*key, StartsWith("-----BEGIN PRIVATE KEY-----"));  // PKCS#8
  }
  const CertificateRequest request = ExtenderRequest();
  Status with_request = VerifyKeyMaterial(material, &request);
  EXPECT_TRUE(with_request.ok()) << with_request.error().message;
  Status without_request = VerifyKeyMaterial(material);
  EXPECT_TRUE(without_request.ok()) << without_request.error().message;
}

TEST(TlsTest, InspectShowsNamesValidityAndCaFlag) {
  const KeyMaterial& material = SharedMaterial();
  Result<CertificateInfo> server = InspectCertificate(material.server_cert);
  ASSERT_TRUE(server.ok()) << server.error().message;
  EXPECT_EQ(server->subject_cn, "powerctl-extender.powerctl.svc");
  for (const char* dns : {"powerctl-extender", "powerctl-extender.powerctl",
                          "powerctl-extender.powerctl.svc.cluster.local",
                          "powerctl-extender.powerctl.svc"}) {  // the CN is added as a SAN
    EXPECT_THAT(server->dns_names, Contains(dns));
  }
  EXPECT_THAT(server->ip_addresses, Contains("127.0.0.1"));
  EXPECT_THAT(server->ip_addresses, Contains("::1"));
  EXPECT_FALSE(server->is_ca);
  EXPECT_NEAR(server->not_after_unix, NowUnix() + 825 * kDay, 120);

  Result<CertificateInfo> ca = InspectCertificate(material.ca_cert);
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  EXPECT_EQ(ca->subject_cn, "powerctl-ca");
  EXPECT_TRUE(ca->is_ca);
  EXPECT_TRUE(ca->dns_names.empty());
  EXPECT_NEAR(ca->not_after_unix, NowUnix() + 3650 * kDay, 120);

  Result<CertificateInfo> client = InspectCertificate(material.client_cert);
  ASSERT_TRUE(client.ok()) << client.error().message;
  EXPECT_EQ(client->subject_cn, "powerctl-scheduler");
  EXPECT_FALSE(client->is_ca);
}

TEST(TlsTest, IpSansOnlyAndIpv6Canonicalized) {
  CertificateRequest request;
  request.server_ip_addresses = {"127.0.0.1", "0:0:0:0:0:0:0:1", "fd00::10"};
  request.leaf_validity_days = 30;
  Result<KeyMaterial> material = GenerateKeyMaterial(request);
  ASSERT_TRUE(material.ok()) << material.error().message;
  Status verified = VerifyKeyMaterial(*material, &request);
  EXPECT_TRUE(verified.ok()) << verified.error().message;
  Result<CertificateInfo> info = InspectCertificate(material->server_cert);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->subject_cn, "127.0.0.1");  // no CN given: the first name is used
  EXPECT_EQ(info->ip_addresses, (std::vector<std::string>{"127.0.0.1", "::1", "fd00::10"}));
  EXPECT_TRUE(info->dns_names.empty());
  EXPECT_NEAR(info->not_after_unix, NowUnix() + 30 * kDay, 120);
}

TEST(TlsTest, SwappedServerKeyFailsNamingServerCert) {
  KeyMaterial material = SharedMaterial();
  material.server_key = material.client_key;
  Status status = VerifyKeyMaterial(material);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kCheckFailed);
  EXPECT_THAT(status.error().message, HasSubstr("server.crt (server_cert): public key does not"));
  EXPECT_THAT(status.error().message, Not(HasSubstr("client.crt")));
  EXPECT_THAT(status.error().message, Not(HasSubstr("PRIVATE KEY")));
}

TEST(TlsTest, CertificateFromAnotherCaFails) {
  Result<KeyMaterial> other = GenerateKeyMaterial(ExtenderRequest());
  ASSERT_TRUE(other.ok()) << other.error().message;
  KeyMaterial material = SharedMaterial();
  material.server_cert = other->server_cert;
  material.server_key = other->server_key;
  Status status = VerifyKeyMaterial(material);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("server.crt (server_cert): not signed by the CA"));

  material = SharedMaterial();  // a whole foreign CA: both leaves fail
  material.ca_cert = other->ca_cert;
  material.ca_key = other->ca_key;
  status = VerifyKeyMaterial(material);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("server.crt"));
  EXPECT_THAT(status.error().message, HasSubstr("client.crt"));
}

TEST(TlsTest, RolesAreChecked) {
  KeyMaterial material = SharedMaterial();
  std::swap(material.server_cert, material.client_cert);
  std::swap(material.server_key, material.client_key);
  Status status = VerifyKeyMaterial(material);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message,
              HasSubstr("server.crt (server_cert): extendedKeyUsage lacks serverAuth"));
  EXPECT_THAT(status.error().message,
              HasSubstr("client.crt (client_cert): extendedKeyUsage lacks clientAuth"));

  material = SharedMaterial();  // a leaf posing as the CA
  material.ca_cert = material.client_cert;
  material.ca_key = material.client_key;
  status = VerifyKeyMaterial(material);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("ca.crt (ca_cert): basicConstraints CA:TRUE"));
}

TEST(TlsTest, RequestNotCoveredBySansFails) {
  CertificateRequest request = ExtenderRequest();
  request.server_dns_names.push_back("other.example.com");
  request.server_ip_addresses.push_back("10.96.0.10");
  Status status = VerifyKeyMaterial(SharedMaterial(), &request);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kCheckFailed);
  EXPECT_THAT(status.error().message, HasSubstr("server.crt (server_cert): subjectAltName does "
                                                "not cover DNS name \"other.example.com\""));
  EXPECT_THAT(status.error().message, HasSubstr("does not cover IP address 10.96.0.10"));
}

TEST(TlsTest, WildcardSanCoversSubdomain) {
  CertificateRequest request;
  request.server_common_name = "powerctl-extender";
  request.server_dns_names = {"*.powerctl.svc"};
  Result<KeyMaterial> material = GenerateKeyMaterial(request);
  ASSERT_TRUE(material.ok()) << material.error().message;
  request.server_dns_names = {"powerctl-extender.powerctl.svc"};
  Status status = VerifyKeyMaterial(*material, &request);
  EXPECT_TRUE(status.ok()) << status.error().message;
}

TEST(TlsTest, GarbagePemIsAnErrorNotACrash) {
  for (const std::string& garbage : std::vector<std::string>{
           "", "garbage", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
           std::string(1 << 16, '\xff')}) {
    Result<CertificateInfo> info = InspectCertificate(garbage);
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.error().code, ErrorCode::kInvalidInput);
  }
  KeyMaterial material = SharedMaterial();
  material.ca_cert = "not a certificate";
  Status status = VerifyKeyMaterial(material);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(status.error().message, HasSubstr("ca.crt (ca_cert): not a PEM certificate"));

  material = SharedMaterial();
  material.client_key = material.client_cert;  // a certificate where a key belongs
  status = VerifyKeyMaterial(material);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("client.key (client_key): not a PEM private key"));
}

TEST(TlsTest, InvalidRequestsAreRejected) {
  auto expect_invalid = [](CertificateRequest request, const std::string& field) {
    Result<KeyMaterial> material = GenerateKeyMaterial(request);
    ASSERT_FALSE(material.ok()) << field;
    EXPECT_EQ(material.error().code, ErrorCode::kInvalidInput);
    EXPECT_THAT(material.error().message, HasSubstr(field));
  };
  CertificateRequest request = ExtenderRequest();
  request.server_ip_addresses = {"300.1.2.3"};
  expect_invalid(request, "server_ip_addresses");
  request = ExtenderRequest();
  request.server_dns_names = {"bad name,DNS:evil.example"};
  expect_invalid(request, "server_dns_names");
  expect_invalid(CertificateRequest{}, "server_common_name");
  request = ExtenderRequest();
  request.leaf_validity_days = request.ca_validity_days + 1;
  expect_invalid(request, "leaf_validity_days");
  request = ExtenderRequest();
  request.client_common_name = std::string(65, 'x');
  expect_invalid(request, "client_common_name");
}

TEST_F(TlsFilesTest, WriteLoadRoundTripWithPrivateModes) {
  const fs::path dir = root_ / "nested" / "tls";
  Status written = WriteKeyMaterial(dir, SharedMaterial());
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(ModeOf(dir), 0700u);
  for (const char* key : {"ca.key", "server.key", "client.key"})
    EXPECT_EQ(ModeOf(dir / key), 0600u);
  for (const char* cert : {"ca.crt", "server.crt", "client.crt"}) {
    EXPECT_EQ(ModeOf(dir / cert), 0644u);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 6);  // no temps
  Result<KeyMaterial> loaded = LoadKeyMaterial(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(*loaded, SharedMaterial());
}

TEST_F(TlsFilesTest, OverwriteReplacesLooseKeyFile) {
  fs::create_directories(root_);
  const fs::path stale = root_ / "server.key";
  std::ofstream(stale) << "old";
  fs::permissions(stale, fs::perms(0666));
  Status written = WriteKeyMaterial(root_, SharedMaterial());
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(ModeOf(stale), 0600u);
  Result<KeyMaterial> loaded = LoadKeyMaterial(root_);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->server_key, SharedMaterial().server_key);
}

TEST_F(TlsFilesTest, LoadMissingFileIsNotFound) {
  fs::create_directories(root_);
  std::ofstream(root_ / "ca.crt") << SharedMaterial().ca_cert;
  Result<KeyMaterial> loaded = LoadKeyMaterial(root_);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(loaded.error().message, HasSubstr("ca.key"));
}

// Interoperability: the OpenSSL CLI, an independent verifier, accepts the written files for
// their TLS roles (strict RFC 5280 checks on) and rejects them for the opposite role.
TEST_F(TlsFilesTest, OpensslCliAcceptsWrittenFiles) {
  if (::access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "/usr/bin/openssl not installed";
  ASSERT_TRUE(WriteKeyMaterial(root_, SharedMaterial()).ok());
  const std::string ca = "'" + (root_ / "ca.crt").string() + "'";
  const std::string verify = "/usr/bin/openssl verify -x509_strict -CAfile " + ca + " -purpose ";
  const std::string server = "'" + (root_ / "server.crt").string() + "'";
  const std::string client = "'" + (root_ / "client.crt").string() + "'";
  std::string output;
  EXPECT_EQ(Run(verify + "sslserver " + server, &output), 0) << output;
  EXPECT_EQ(Run(verify + "sslclient " + client, &output), 0) << output;
  EXPECT_NE(Run(verify + "sslclient " + server, &output), 0) << output;
  EXPECT_NE(Run(verify + "sslserver " + client, &output), 0) << output;
  for (const char* key : {"ca.key", "server.key", "client.key"}) {
    const std::string path = "'" + (root_ / key).string() + "'";
    EXPECT_EQ(Run("/usr/bin/openssl pkey -noout -check -in " + path, &output), 0) << output;
  }
}

// A passphrase-protected key must be reported, not make OpenSSL prompt on the terminal.
TEST_F(TlsFilesTest, EncryptedKeyIsAnErrorWithoutPrompting) {
  if (::access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "/usr/bin/openssl not installed";
  ASSERT_TRUE(WriteKeyMaterial(root_, SharedMaterial()).ok());
  const fs::path encrypted = root_ / "encrypted.key";
  std::string output;
  ASSERT_EQ(Run("/usr/bin/openssl pkcs8 -topk8 -passout pass:secret -in '" +
                    (root_ / "server.key").string() + "' -out '" + encrypted.string() + "'",
                &output),
            0)
      << output;
  KeyMaterial material = SharedMaterial();
  std::ifstream in(encrypted);
  material.server_key.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  Status status = VerifyKeyMaterial(material);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("server.key (server_key)"));
}

}  // namespace
}  // namespace powerctl::manifests
