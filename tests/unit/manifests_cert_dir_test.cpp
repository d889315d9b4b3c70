// `generate --cert-dir DIR`: reusing, completing (a CA the user brought) and creating DIR, and
// refusing what cannot be completed.
#include "core/manifests/generate.h"
#include "core/manifests/render_context.h"
#include "core/manifests/tls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace powerctl::manifests {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

unsigned ModeOf(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 0777;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> FilesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A CA made elsewhere: its own name, not powerctl's.
KeyMaterial ForeignCa(int ca_days = 3650, int leaf_days = 825) {
  CertificateRequest request;
  request.ca_common_name = "corp-root";
  request.server_dns_names = {"elsewhere.example"};
  request.ca_validity_days = ca_days;
  request.leaf_validity_days = leaf_days;
  auto m = GenerateKeyMaterial(request);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return *m;
}

class CertDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("powerctl-cert-dir-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    dir_ = root_ / "tls";
  }
  void TearDown() override { fs::remove_all(root_); }

  void Put(std::string_view file, const std::string& text) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / file) << text;
  }

  Result<GenerateResult> Run(std::vector<std::string> components = {"secrets"}) {
    GenerateRequest request;
    request.version = KubeVersion{1, 30, -1};
    request.config.extender.image = "example.com/powerctl:1";
    request.components = std::move(components);
    request.cert_dir = dir_;
    return Generate(request);
  }

  CertificateRequest Request() { return ExtenderCertificateRequest(config::PowerctlConfig{}); }

  fs::path root_, dir_;
};

TEST_F(CertDirTest, ABroughtCaSignsTheNewCertificatesAndIsNotRewritten) {
  const KeyMaterial ca = ForeignCa();
  Put(kCaCertFile, ca.ca_cert);
  Put(kCaKeyFile, ca.ca_key);
  ::chmod((dir_ / kCaKeyFile).c_str(), 0400);
  struct stat before {};
  ASSERT_EQ(::stat((dir_ / kCaKeyFile).c_str(), &before), 0);

  auto result = Run();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_THAT(result->notes,
              ElementsAre(AllOf(HasSubstr("signed new extender server and scheduler client "
                                          "certificates with the CA in " +
                                          dir_.string()),
                                HasSubstr("server.crt, server.key, client.crt, client.key"))));
  EXPECT_EQ(FilesIn(dir_), (std::vector<std::string>{"ca.crt", "ca.key", "client.crt", "client.key",
                                                     "server.crt", "server.key"}));
  auto loaded = LoadKeyMaterial(dir_);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const CertificateRequest request = Request();
  EXPECT_EQ(loaded->ca_cert, ca.ca_cert);
  EXPECT_EQ(loaded->ca_key, ca.ca_key);
  EXPECT_NE(loaded->server_cert, ca.server_cert);
  Status valid = VerifyKeyMaterial(*loaded, &request);
  EXPECT_TRUE(valid.ok()) << valid.error().message;
  EXPECT_EQ(ModeOf(dir_ / kServerKeyFile), 0600u);
  EXPECT_EQ(ModeOf(dir_ / kClientKeyFile), 0600u);
  struct stat after {};
  ASSERT_EQ(::stat((dir_ / kCaKeyFile).c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // the CA key file itself, untouched
  EXPECT_EQ(after.st_mode & 0777, 0400u);

  // The next run reuses all six: the same Secrets.
  auto again = Run();
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_THAT(again->notes, ElementsAre(HasSubstr("using TLS material from")));
  EXPECT_EQ(again->components[0].objects, result->components[0].objects);
}

TEST_F(CertDirTest, AMissingDirectoryIsCreatedPrivateAndReusedNextRun) {
  auto first = Run();
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_THAT(first->notes, ElementsAre(HasSubstr("wrote new TLS material to " + dir_.string())));
  EXPECT_EQ(ModeOf(dir_), 0700u);
  for (std::string_view key : {kCaKeyFile, kServerKeyFile, kClientKeyFile})
    EXPECT_EQ(ModeOf(dir_ / key), 0600u) << key;

  auto second = Run();
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_THAT(second->notes, ElementsAre(HasSubstr("using TLS material from")));
  EXPECT_EQ(second->components[0].objects, first->components[0].objects);
}

TEST_F(CertDirTest, AnEmptyDirectoryGetsNewMaterial) {
  fs::create_directories(dir_);
  auto result = Run();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(FilesIn(dir_).size(), 6u);
}

TEST_F(CertDirTest, ACaKeyThatIsNotTheCertificatesIsRefusedAndNothingIsWritten) {
  Put(kCaCertFile, ForeignCa().ca_cert);
  Put(kCaKeyFile, ForeignCa().ca_key);
  auto result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(result.error().message,
              AllOf(HasSubstr("--cert-dir " + dir_.string()),
                    HasSubstr("ca.key (ca_key): is not the private key of ca.crt")));
  EXPECT_EQ(FilesIn(dir_), (std::vector<std::string>{"ca.crt", "ca.key"}));
}

TEST_F(CertDirTest, LeavesWithoutTheCaKeyCannotBeCompleted) {
  const KeyMaterial m = ForeignCa();
  Put(kCaCertFile, m.ca_cert);
  Put(kServerCertFile, m.server_cert);
  Put(kServerKeyFile, m.server_key);
  auto result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(result.error().message,
              AllOf(HasSubstr("holds ca.crt, server.crt, server.key but not ca.key, client.crt, "
                              "client.key"),
                    HasSubstr("only from ca.crt and ca.key")));
  EXPECT_EQ(FilesIn(dir_).size(), 3u);
}

TEST_F(CertDirTest, AHalfLeafPairIsRefusedRatherThanReplaced) {
  const KeyMaterial m = ForeignCa();
  Put(kCaCertFile, m.ca_cert);
  Put(kCaKeyFile, m.ca_key);
  Put(kClientCertFile, m.client_cert);  // no client.key
  auto result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(result.error().message, HasSubstr("but not server.crt, server.key, client.key"));
  EXPECT_EQ(Read(dir_ / kClientCertFile), m.client_cert);
}

TEST_F(CertDirTest, AWholeLeafPairIsKeptAndTheMissingOneIssued) {
  // The server pair must carry the extender's names, so it comes from a first complete run.
  ASSERT_TRUE(Run().ok());
  const std::string server_cert = Read(dir_ / kServerCertFile);
  fs::remove(dir_ / kClientCertFile);
  fs::remove(dir_ / kClientKeyFile);
  auto result = Run();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_THAT(result->notes, ElementsAre(HasSubstr("wrote client.crt, client.key there")));
  EXPECT_EQ(Read(dir_ / kServerCertFile), server_cert);
  auto loaded = LoadKeyMaterial(dir_);
  ASSERT_TRUE(loaded.ok());
  const CertificateRequest request = Request();
  EXPECT_TRUE(VerifyKeyMaterial(*loaded, &request).ok());
}

TEST_F(CertDirTest, ACompleteSetThatDoesNotVerifyIsAnInputError) {
  KeyMaterial m = ForeignCa();  // its server certificate lacks the extender's names
  ASSERT_TRUE(WriteKeyMaterial(dir_, m).ok());
  auto result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(result.error().message,
              AllOf(HasSubstr("--cert-dir " + dir_.string()), HasSubstr("does not cover")));
}

TEST(IssueWithCaTest, ALeafNeverOutlivesTheCa) {
  const KeyMaterial ca = ForeignCa(/*ca_days=*/30, /*leaf_days=*/20);
  CertificateRequest request = ExtenderCertificateRequest(config::PowerctlConfig{});
  auto issued = IssueWithCa(request, ca.ca_cert, ca.ca_key);
  ASSERT_TRUE(issued.ok()) << issued.error().message;
  auto ca_info = InspectCertificate(ca.ca_cert);
  auto server_info = InspectCertificate(issued->server_cert);
  ASSERT_TRUE(ca_info.ok() && server_info.ok());
  EXPECT_EQ(server_info->not_after_unix, ca_info->not_after_unix);
}

TEST(IssueWithCaTest, ALeafCertificateIsNotACa) {
  const KeyMaterial other = ForeignCa();
  auto issued = IssueWithCa(ExtenderCertificateRequest(config::PowerctlConfig{}), other.server_cert,
                            other.server_key);
  ASSERT_FALSE(issued.ok());
  EXPECT_EQ(issued.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(issued.error().message, HasSubstr("is not a CA certificate"));
}

}  // namespace
}  // namespace powerctl::manifests
