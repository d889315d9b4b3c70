#include "core/setup/service_account_kubeconfig.h"

#include "core/common/yaml.h"
#include "core/kube/connection.h"
#include "tests/unit/fake_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;
using kube::fake::ApiReply;
using kube::fake::FakeTransport;
using kube::fake::StatusBody;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

kube::ClusterConnection AdminConnection() {
  kube::ClusterConnection c;
  c.server = "https://10.0.0.1:6443";
  c.ca_pem = kCa;
  c.credentials.token = "admin-secret";
  c.credentials.client_key_pem = "admin-key";
  return c;
}

TEST(TokenRequest, BodyAsksForTheDurationInSeconds) {
  EXPECT_EQ(TokenRequestBody(24h), json::parse(R"({"apiVersion":"authentication.k8s.io/v1",
      "kind":"TokenRequest","spec":{"expirationSeconds":86400}})"));
  EXPECT_EQ(TokenRequestPath("powerctl", "powerctl-scheduler"),
            "/api/v1/namespaces/powerctl/serviceaccounts/powerctl-scheduler/token");
}

TEST(TokenRequest, DurationIsBoundedFromTenMinutesToAYear) {
  EXPECT_TRUE(CheckTokenDuration(600s).ok());
  EXPECT_TRUE(CheckTokenDuration(8760h).ok());
  auto short_one = CheckTokenDuration(599s);
  ASSERT_FALSE(short_one.ok());
  EXPECT_EQ(short_one.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(short_one.error().message, HasSubstr("from 10m to 8760h"));
  EXPECT_FALSE(CheckTokenDuration(8761h).ok());
}

class RequestTokenTest : public ::testing::Test {
 protected:
  RequestTokenTest() {
    auto transport = std::make_unique<FakeTransport>();
    fake_ = transport.get();
    kube::ClientOptions options;
    options.sleep = [](std::chrono::milliseconds) {};
    client_ = std::make_unique<kube::Client>(std::move(transport), options);
  }
  FakeTransport* fake_ = nullptr;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(RequestTokenTest, PostsTheTokenRequestAndReturnsTheToken) {
  fake_->responses.push_back(ApiReply(
      201, {{"kind", "TokenRequest"},
            {"status", {{"token", "sa-token"}, {"expirationTimestamp", "2030-01-02T03:04:05Z"}}}}));
  auto token = RequestServiceAccountToken(*client_, "powerctl", "powerctl-extender", 1h);
  ASSERT_TRUE(token.ok()) << token.error().message;
  EXPECT_EQ(token->token, "sa-token");
  EXPECT_EQ(token->expiration, "2030-01-02T03:04:05Z");
  ASSERT_EQ(fake_->requests.size(), 1u);
  EXPECT_EQ(fake_->requests[0].method, "POST");
  EXPECT_EQ(fake_->requests[0].path,
            "/api/v1/namespaces/powerctl/serviceaccounts/powerctl-extender/token");
  EXPECT_EQ(json::parse(fake_->requests[0].body), TokenRequestBody(1h));
}

TEST_F(RequestTokenTest, AMissingServiceAccountIsNamedWithWhatCreatesIt) {
  json details = {{"name", "nope"}, {"kind", "serviceaccounts"}};
  fake_->responses.push_back(
      ApiReply(404, StatusBody(404, "NotFound", "serviceaccounts \"nope\" not found", details)));
  auto token = RequestServiceAccountToken(*client_, "powerctl", "nope", 1h);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(token.error().message,
              HasSubstr("ServiceAccount \"nope\" not found in namespace \"powerctl\""));
  EXPECT_THAT(token.error().message, HasSubstr("powerctl apply rbac"));
}

TEST_F(RequestTokenTest, ForbiddenNamesTheRuleToGrant) {
  fake_->responses.push_back(ApiReply(403, StatusBody(403, "Forbidden", "user \"dev\" cannot")));
  auto token = RequestServiceAccountToken(*client_, "powerctl", "powerctl-extender", 1h);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().code, ErrorCode::kForbidden);
  EXPECT_THAT(token.error().message,
              HasSubstr("resources [\"serviceaccounts/token\"], verbs [\"create\"] in namespace "
                        "\"powerctl\""));
}

TEST_F(RequestTokenTest, BadNamesAndAnAnswerWithoutTokenAreRefused) {
  EXPECT_EQ(RequestServiceAccountToken(*client_, "powerctl", "../nodes", 1h).error().code,
            ErrorCode::kInvalidInput);
  EXPECT_EQ(RequestServiceAccountToken(*client_, "Bad_NS", "sa", 1h).error().code,
            ErrorCode::kInvalidInput);
  EXPECT_TRUE(fake_->requests.empty()) << "nothing is sent for invalid input";
  fake_->responses.push_back(ApiReply(201, {{"kind", "TokenRequest"}, {"status", json::object()}}));
  auto token = RequestServiceAccountToken(*client_, "powerctl", "sa", 1h);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().code, ErrorCode::kApi);
}

TEST(ServiceAccountKubeconfig, HoldsTheServerCaAndTokenButNotTheCallersCredentials) {
  std::string text = RenderServiceAccountKubeconfig(AdminConnection(), "powerctl",
                                                    "powerctl-scheduler", "sa-token");
  EXPECT_EQ(text.find("admin"), std::string::npos) << text;
  auto docs = ParseYamlDocuments(text, "kubeconfig");
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  ASSERT_EQ(docs->size(), 1u);
  const auto& config = (*docs)[0];
  EXPECT_EQ(config["kind"], "Config");
  EXPECT_EQ(config["current-context"], "powerctl-scheduler");
  ASSERT_EQ(config["clusters"].size(), 1u);
  ASSERT_EQ(config["users"].size(), 1u);
  ASSERT_EQ(config["contexts"].size(), 1u);
  EXPECT_EQ(config["users"][0]["user"], nlohmann::ordered_json({{"token", "sa-token"}}));
  EXPECT_FALSE(config["clusters"][0]["cluster"].contains("insecure-skip-tls-verify"));
}

// The real test of a kubeconfig: powerctl's (kubectl-compatible) loader reads it back.
TEST(ServiceAccountKubeconfig, LoadsBackAsTheServiceAccountsConnection) {
  kube::ClusterConnection admin = AdminConnection();
  admin.tls_server_name = "kubernetes.default";
  std::string text =
      RenderServiceAccountKubeconfig(admin, "powerctl", "powerctl-scheduler", "sa-token");
  auto path = std::filesystem::path(::testing::TempDir()) / "sa-kubeconfig-test.yaml";
  std::ofstream(path) << text;
  kube::ConnectionRequest request;
  request.kubeconfig_flag = path.string();
  auto loaded = kube::ResolveConnection(request);
  std::filesystem::remove(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message << "\n" << text;
  EXPECT_EQ(loaded->server, "https://10.0.0.1:6443");
  EXPECT_EQ(loaded->ca_pem, kCa);
  EXPECT_EQ(loaded->tls_server_name, "kubernetes.default");
  EXPECT_EQ(loaded->credentials.token, "sa-token");
  EXPECT_TRUE(loaded->credentials.client_key_pem.empty());
  EXPECT_EQ(loaded->namespace_, "powerctl");
  EXPECT_EQ(loaded->context_name, "powerctl-scheduler");
}

TEST(ServiceAccountKubeconfig, WithoutCaItSaysInsecureOnlyWhenTheConnectionWas) {
  kube::ClusterConnection admin = AdminConnection();
  admin.ca_pem.clear();
  admin.insecure_skip_tls_verify = true;
  auto docs = ParseYamlDocuments(RenderServiceAccountKubeconfig(admin, "ns", "sa", "t"), "k");
  ASSERT_TRUE(docs.ok());
  const auto& cluster = (*docs)[0]["clusters"][0]["cluster"];
  EXPECT_FALSE(cluster.contains("certificate-authority-data"));
  EXPECT_EQ(cluster["insecure-skip-tls-verify"], true);
}

}  // namespace
}  // namespace powerctl::setup
