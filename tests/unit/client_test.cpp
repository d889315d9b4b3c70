#include "core/kube/client.h"

#include "tests/unit/fake_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace powerctl::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ms = std::chrono::milliseconds;
using fake::ApiReply;
using fake::FakeTransport;
using fake::NetworkError;
using fake::Pod;
using fake::PodList;
using fake::StatusBody;

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() {
    auto transport = std::make_unique<FakeTransport>();
    fake_ = transport.get();
    ClientOptions options;
    options.sleep = [this](ms duration) { sleeps_.push_back(duration); };
    options.connection_description = "context \"dev\" of /home/u/.kube/config";
    client_ = std::make_unique<Client>(std::move(transport), options);
  }

  const HttpRequest& Request(size_t i) const { return fake_->requests.at(i); }

  FakeTransport* fake_ = nullptr;
  std::vector<ms> sleeps_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, GetParsesJson) {
  fake_->responses.push_back(ApiReply(200, {{"kind", "Node"}}));
  Result<json> node = client_->Get("/api/v1/nodes/n1");
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ((*node)["kind"], "Node");
  EXPECT_EQ(Request(0).method, "GET");
  EXPECT_EQ(Request(0).path, "/api/v1/nodes/n1");
}

TEST_F(ClientTest, InvalidJsonIsAnErrorNotAnException) {
  fake_->responses.push_back(HttpResponse{200, "{not json", {}});
  Result<json> node = client_->Get("/api/v1/nodes/n1");
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.error().code, ErrorCode::kApi);
  EXPECT_THAT(node.error().message, HasSubstr("not valid JSON"));
}

TEST_F(ClientTest, DeeplyNestedJsonIsAnError) {
  const std::string deep =
      R"({"kind": "Node", "x": )" + std::string(129, '[') + std::string(129, ']') + "}";
  fake_->responses.push_back(HttpResponse{200, deep, {}});
  Result<json> node = client_->Get("/api/v1/nodes/n1");
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.error().code, ErrorCode::kApi);
  EXPECT_THAT(node.error().message,
              HasSubstr("GET /api/v1/nodes/n1 is nested deeper than 128 levels"));
}

TEST_F(ClientTest, RetriesServerErrorsWithJitteredExponentialBackoff) {
  fake_->responses.push_back(ApiReply(503, StatusBody(503, "ServiceUnavailable", "unavailable")));
  fake_->responses.push_back(ApiReply(500, StatusBody(500, "InternalError", "oops")));
  fake_->responses.push_back(ApiReply(200, json::object()));
  ASSERT_TRUE(client_->Get("/api/v1/nodes").ok());
  ASSERT_EQ(fake_->requests.size(), 3u);
  ASSERT_EQ(sleeps_.size(), 2u);
  EXPECT_GE(sleeps_[0], ms(100));  // 200ms base, half of it random
  EXPECT_LE(sleeps_[0], ms(200));
  EXPECT_GE(sleeps_[1], ms(200));
  EXPECT_LE(sleeps_[1], ms(400));
}

TEST_F(ClientTest, BackoffIsCappedAndAttemptsAreLimited) {
  for (int i = 0; i < 5; ++i) fake_->responses.push_back(ApiReply(502, json::object()));
  Result<json> result = client_->Get("/api/v1/nodes");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(fake_->requests.size(), 5u);  // max_attempts
  EXPECT_EQ(result.error().code, ErrorCode::kApi);
  EXPECT_THAT(result.error().message, HasSubstr("HTTP 502"));
  ASSERT_EQ(sleeps_.size(), 4u);
  for (ms slept : sleeps_) EXPECT_LE(slept, ms(5000));
}

TEST_F(ClientTest, HonoursRetryAfterCapped) {
  fake_->responses.push_back(
      ApiReply(429, StatusBody(429, "TooManyRequests", "slow down"), {{"retry-after", "3"}}));
  fake_->responses.push_back(ApiReply(429, json::object(), {{"retry-after", "3600"}}));
  fake_->responses.push_back(ApiReply(201, json::object()));
  // 429 means the request was not processed, so even a create is retried.
  ASSERT_TRUE(client_->Create("/api/v1/namespaces/ns/configmaps", json::object()).ok());
  EXPECT_THAT(sleeps_, ElementsAre(ms(3000), ms(30000)));
}

TEST_F(ClientTest, AProxiedGetIsNotRetriedOnServerErrorsAndCarriesItsTimeout) {
  fake_->responses.push_back(ApiReply(
      503, StatusBody(503, "ServiceUnavailable", "error trying to reach service: dial tcp")));
  Result<json> status =
      client_->GetProxied("/api/v1/namespaces/p/pods/a:9447/proxy/status", ms(10000));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(fake_->requests.size(), 1u);
  EXPECT_TRUE(sleeps_.empty());
  EXPECT_EQ(Request(0).timeout, ms(10000));
  EXPECT_THAT(status.error().message, HasSubstr("error trying to reach service"));

  fake_->responses.push_back(ApiReply(200, {{"kind", "LbAgentStatus"}}));
  status = client_->GetProxied("/api/v1/namespaces/p/pods/a:9447/proxy/status", ms(10000));
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ((*status)["kind"], "LbAgentStatus");
}

TEST_F(ClientTest, CreateIsNotRetriedOnServerErrors) {
  fake_->responses.push_back(ApiReply(503, StatusBody(503, "ServiceUnavailable", "etcd is down")));
  Result<json> created = client_->Create("/api/v1/namespaces/ns/configmaps", json::object());
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(fake_->requests.size(), 1u);
  EXPECT_THAT(created.error().message, HasSubstr("etcd is down"));
  EXPECT_THAT(created.error().message, HasSubstr("HTTP 503"));
}

TEST_F(ClientTest, CreateOnlyChecksTheStatusWithoutParsingTheEcho) {
  fake_->responses.push_back(HttpResponse{201, "{not json: never read", {}});
  fake_->responses.push_back(ApiReply(503, StatusBody(503, "ServiceUnavailable", "etcd is down")));
  fake_->responses.push_back(ApiReply(403, StatusBody(403, "Forbidden", "events is forbidden")));
  const json event = {{"kind", "Event"}, {"metadata", {{"name", "e1"}}}};
  Status written = client_->CreateOnly("/api/v1/namespaces/ns/events", event);
  EXPECT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(Request(0).method, "POST");
  EXPECT_EQ(Request(0).path, "/api/v1/namespaces/ns/events");
  EXPECT_EQ(json::parse(Request(0).body), event);
  Status unavailable = client_->CreateOnly("/api/v1/namespaces/ns/events", event);
  ASSERT_FALSE(unavailable.ok());
  EXPECT_EQ(fake_->requests.size(), 2u);  // not retried, as Create
  EXPECT_THAT(unavailable.error().message, HasSubstr("etcd is down"));
  Status forbidden = client_->CreateOnly("/api/v1/namespaces/ns/events", event);
  ASSERT_FALSE(forbidden.ok());
  EXPECT_THAT(forbidden.error().message, HasSubstr("events is forbidden"));
  // The same error Create gives for the same answer.
  fake_->responses.push_back(ApiReply(403, StatusBody(403, "Forbidden", "events is forbidden")));
  Result<json> created = client_->Create("/api/v1/namespaces/ns/events", event);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(forbidden.error().code, created.error().code);
  EXPECT_EQ(forbidden.error().message, created.error().message);
}

TEST_F(ClientTest, RetriesRefusedConnectionsForEveryMethod) {
  fake_->responses.push_back(NetworkError("Connection refused"));
  fake_->responses.push_back(ApiReply(201, json::object()));
  EXPECT_TRUE(client_->Create("/api/v1/namespaces", json::object()).ok());
  EXPECT_EQ(fake_->requests.size(), 2u);
}

TEST_F(ClientTest, RetriesResetConnectionsExceptForCreate) {
  fake_->responses.push_back(NetworkError("Recv failure: Connection reset by peer"));
  fake_->responses.push_back(ApiReply(200, json::object()));
  EXPECT_TRUE(client_->Get("/api/v1/nodes").ok());
  EXPECT_EQ(fake_->requests.size(), 2u);

  fake_->responses.push_back(NetworkError("Recv failure: Connection reset by peer"));
  Result<json> created = client_->Create("/api/v1/namespaces", json::object());
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code, ErrorCode::kNetwork);
  EXPECT_EQ(fake_->requests.size(), 3u);
}

TEST_F(ClientTest, DoesNotRetryTlsErrors) {
  fake_->responses.push_back(
      MakeError(ErrorCode::kNetwork, "the TLS certificate of https://x is not trusted"));
  Result<json> result = client_->Get("/api/v1/nodes");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kNetwork);
  EXPECT_EQ(fake_->requests.size(), 1u);
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(ClientTest, ListFollowsContinueAndFillsKind) {
  fake_->responses.push_back(
      ApiReply(200, PodList({Pod("a", "1"), Pod("b", "2")}, "9", "token/1")));
  fake_->responses.push_back(ApiReply(200, PodList({Pod("c", "3")}, "9")));
  ListOptions options;
  options.label_selector = "app=web,tier in (a,b)";
  options.limit = 2;
  Result<std::vector<json>> pods = client_->List("/api/v1/namespaces/ns/pods", options);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[2]["metadata"]["name"], "c");
  EXPECT_EQ((*pods)[0]["kind"], "Pod");
  EXPECT_EQ((*pods)[0]["apiVersion"], "v1");
  EXPECT_EQ(Request(0).path,
            "/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb%2Ctier%20in%20%28a%2Cb%29&limit=2");
  EXPECT_EQ(Request(1).path,
            "/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb%2Ctier%20in%20%28a%2Cb%29&limit=2"
            "&continue=token%2F1");
}

TEST_F(ClientTest, ListRestartsOnceWhenTheContinueTokenExpired) {
  json expired = StatusBody(410, "Expired", "The provided continue parameter is too old");
  fake_->responses.push_back(ApiReply(200, PodList({Pod("a", "1")}, "9", "c1")));
  fake_->responses.push_back(ApiReply(410, expired));
  fake_->responses.push_back(ApiReply(200, PodList({Pod("a", "1")}, "20", "c2")));
  fake_->responses.push_back(ApiReply(200, PodList({Pod("b", "2")}, "20")));
  Result<std::vector<json>> pods = client_->List("/api/v1/pods");
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 2u);  // nothing from the abandoned first pass
  EXPECT_EQ(Request(2).path, "/api/v1/pods?limit=500");

  fake_->responses.push_back(ApiReply(200, PodList({Pod("a", "1")}, "9", "c1")));
  fake_->responses.push_back(ApiReply(410, expired));
  fake_->responses.push_back(ApiReply(200, PodList({Pod("a", "1")}, "9", "c1")));
  fake_->responses.push_back(ApiReply(410, expired));
  Result<std::vector<json>> again = client_->List("/api/v1/pods");
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.error().message, HasSubstr("too old"));
}

TEST_F(ClientTest, ApplySendsFieldManagerForceAndDryRun) {
  fake_->responses.push_back(ApiReply(200, json::object()));
  json object = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata", {{"name", "c"}, {"managedFields", json::array({json::object()})}}}};
  ApplyOptions options;
  options.force = true;
  options.dry_run = true;
  ASSERT_TRUE(client_->Apply("/api/v1/namespaces/ns/configmaps/c", object, options).ok());
  EXPECT_EQ(Request(0).method, "PATCH");
  EXPECT_EQ(Request(0).path,
            "/api/v1/namespaces/ns/configmaps/c?fieldManager=powerctl&force=true&dryRun=All");
  EXPECT_EQ(Request(0).content_type, "application/apply-patch+yaml");
  json sent = json::parse(Request(0).body);
  EXPECT_FALSE(sent["metadata"].contains("managedFields"));
  EXPECT_EQ(sent["kind"], "ConfigMap");

  fake_->responses.push_back(ApiReply(200, json::object()));
  ASSERT_TRUE(client_->Apply("/api/v1/nodes/n1", object, ApplyOptions{}).ok());
  EXPECT_EQ(Request(1).path, "/api/v1/nodes/n1?fieldManager=powerctl");
}

TEST_F(ClientTest, PatchCreateAndDeleteRequests) {
  for (int i = 0; i < 5; ++i) fake_->responses.push_back(ApiReply(200, json::object()));
  ASSERT_TRUE(
      client_->MergePatch("/api/v1/nodes/n1", {{"metadata", {{"labels", {{"a", nullptr}}}}}}, true)
          .ok());
  ASSERT_TRUE(client_->JsonPatch("/api/v1/nodes/n1", json::array(), false).ok());
  ASSERT_TRUE(client_->Create("/api/v1/namespaces/ns/configmaps", json::object(), true).ok());
  ASSERT_TRUE(client_->Delete("/api/v1/namespaces/ns/configmaps/c", true, "Foreground").ok());
  ASSERT_TRUE(client_->Delete("/api/v1/namespaces/ns/configmaps/d").ok());

  EXPECT_EQ(Request(0).path, "/api/v1/nodes/n1?dryRun=All");
  EXPECT_EQ(Request(0).content_type, "application/merge-patch+json");
  EXPECT_EQ(Request(0).body, R"({"metadata":{"labels":{"a":null}}})");
  EXPECT_EQ(Request(1).path, "/api/v1/nodes/n1");
  EXPECT_EQ(Request(1).content_type, "application/json-patch+json");
  EXPECT_EQ(Request(2).method, "POST");
  EXPECT_EQ(Request(2).path, "/api/v1/namespaces/ns/configmaps?dryRun=All");
  EXPECT_EQ(Request(2).content_type, "application/json");
  EXPECT_EQ(Request(3).method, "DELETE");
  EXPECT_EQ(json::parse(Request(3).body), json({{"kind", "DeleteOptions"},
                                                {"apiVersion", "v1"},
                                                {"propagationPolicy", "Foreground"},
                                                {"dryRun", {"All"}}}));
  EXPECT_EQ(
      json::parse(Request(4).body),
      json({{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}}));
}

TEST_F(ClientTest, DeleteOfAMissingObjectIsNotFound) {
  fake_->responses.push_back(ApiReply(404, StatusBody(404, "NotFound", "configmaps \"c\" not found",
                                                      {{"name", "c"}, {"kind", "configmaps"}})));
  Result<json> deleted = client_->Delete("/api/v1/namespaces/ns/configmaps/c");
  ASSERT_FALSE(deleted.ok());
  EXPECT_EQ(deleted.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(deleted.error().message, "configmaps \"c\" not found");
}

TEST_F(ClientTest, Version) {
  fake_->responses.push_back(
      ApiReply(200, {{"major", "1"}, {"minor", "20+"}, {"gitVersion", "v1.20.2-eks-1"}}));
  Result<ServerVersion> version = client_->Version();
  ASSERT_TRUE(version.ok()) << version.error().message;
  EXPECT_EQ(version->git_version, "v1.20.2-eks-1");
  EXPECT_EQ(version->major, 1);
  EXPECT_EQ(version->minor, 20);
  EXPECT_EQ(Request(0).path, "/version");
}

TEST_F(ClientTest, ErrorMessagesNeverQuoteTheRequestBody) {
  fake_->responses.push_back(ApiReply(422, StatusBody(422, "Invalid", "Secret \"s\" is invalid")));
  json secret = {{"kind", "Secret"}, {"stringData", {{"password", "hunter2"}}}};
  Result<json> created = client_->Create("/api/v1/namespaces/ns/secrets", secret);
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.error().message, Not(HasSubstr("hunter2")));
}

}  // namespace
}  // namespace powerctl::kube
