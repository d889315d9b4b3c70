#include "core/kube/client.h"
#include "tests/unit/fake_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace powerctl::kube {
namespace {

using fake::ApiReply;
using fake::Event;
using fake::FakeTransport;
using fake::NetworkError;
using fake::Pod;
using fake::PodList;
using fake::StatusBody;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ms = std::chrono::milliseconds;

// The event the API server sends when a watch's resourceVersion is too old (410 Expired).
const std::string kExpiredEvent =
    R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)json"
    R"json("status":"Failure","message":"too old resource version: 100 (200)",)json"
    R"json("reason":"Expired","code":410}})json";

std::string Bookmark(const std::string& rv) {
  return Event("BOOKMARK",
               {{"kind", "Pod"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", rv}}}});
}

class WatchTest : public ::testing::Test {
 protected:
  WatchTest() {
    auto transport = std::make_unique<FakeTransport>();
    fake_ = transport.get();
    ClientOptions options;
    options.max_attempts = 3;
    options.sleep = [this](ms duration) { sleeps_.push_back(duration); };
    client_ = std::make_unique<Client>(std::move(transport), options);
  }

  // Runs ListAndWatch, recording "TYPE name" per event and stopping after `limit` events.
  Status Run(size_t limit, WatchOptions options = {}) {
    return client_->ListAndWatch(
        "/api/v1/namespaces/ns/pods", options, [&](const WatchEvent& event) {
          events_.push_back(event.type + " " + event.object["metadata"]["name"].get<std::string>());
          return events_.size() < limit;
        });
  }

  // The query parameter `name` of request i ("" if absent).
  std::string Param(size_t i, const std::string& name) const {
    const std::string& path = fake_->requests.at(i).path;
    size_t at =
        path.find((path.find('?' + name + '=') != std::string::npos ? '?' : '&') + name + '=');
    if (at == std::string::npos) return "";
    size_t start = at + name.size() + 2;
    return path.substr(start, path.find('&', start) - start);
  }

  FakeTransport* fake_ = nullptr;
  std::vector<ms> sleeps_;
  std::vector<std::string> events_;
  std::unique_ptr<Client> client_;
};

TEST_F(WatchTest, ListsThenWatchesFromTheListVersion) {
  fake_->responses.push_back(ApiReply(200, PodList({Pod("a", "5"), Pod("b", "6")}, "10")));
  fake_->streams.push_back(
      {200L, {Event("ADDED", Pod("c", "11")), Event("MODIFIED", Pod("a", "12"))}, ""});
  WatchOptions options;
  options.label_selector = "app=x";
  ASSERT_TRUE(Run(4, options).ok());
  EXPECT_THAT(events_, ElementsAre("ADDED a", "ADDED b", "ADDED c", "MODIFIED a"));
  EXPECT_EQ(fake_->requests[0].path, "/api/v1/namespaces/ns/pods?labelSelector=app%3Dx&limit=500");
  EXPECT_EQ(fake_->requests[1].path,
            "/api/v1/namespaces/ns/pods?watch=1&allowWatchBookmarks=true&resourceVersion=10"
            "&timeoutSeconds=300&labelSelector=app%3Dx");
  // The server ends the watch after timeoutSeconds; the client-side limit is only a backstop.
  EXPECT_EQ(fake_->requests[1].timeout, ms(330000));
}

TEST_F(WatchTest, ObjectsComeWithoutManagedFieldsFromTheListAndTheStream) {
  auto with_fields = [](const std::string& name, const std::string& rv) {
    json pod = Pod(name, rv);
    pod["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
    // Only metadata's: a label, or a spec field, of that name is the object's own.
    pod["metadata"]["labels"] = {{"managedFields", "mine"}};
    pod["spec"] = {{"managedFields", 1}};
    return pod;
  };
  fake_->responses.push_back(ApiReply(200, PodList({with_fields("a", "5")}, "10")));
  fake_->streams.push_back({200L, {Event("MODIFIED", with_fields("a", "11"))}, ""});
  std::vector<json> objects;
  ASSERT_TRUE(client_
                  ->ListAndWatch("/api/v1/namespaces/ns/pods", {},
                                 [&](const WatchEvent& event) {
                                   objects.push_back(event.object);
                                   return objects.size() < 2;
                                 })
                  .ok());
  ASSERT_EQ(objects.size(), 2u);
  for (const json& object : objects) {
    EXPECT_FALSE(object["metadata"].contains("managedFields")) << object.dump();
    EXPECT_EQ(object["metadata"]["labels"]["managedFields"], "mine");
    EXPECT_EQ(object["spec"]["managedFields"], 1);
  }
  EXPECT_EQ(objects[1]["metadata"]["resourceVersion"], "11");
}

TEST_F(WatchTest, RewatchesFromTheLastVersionAndBookmark) {
  fake_->responses.push_back(ApiReply(200, PodList({}, "10")));
  fake_->streams.push_back({200L, {Event("ADDED", Pod("a", "11")), Bookmark("15")}, ""});
  fake_->streams.push_back({200L, {Event("DELETED", Pod("a", "16"))}, ""});
  ASSERT_TRUE(Run(2).ok());
  EXPECT_THAT(events_, ElementsAre("ADDED a", "DELETED a"));
  ASSERT_EQ(fake_->requests.size(), 3u);
  EXPECT_EQ(Param(2, "resourceVersion"), "15");
  EXPECT_TRUE(sleeps_.empty());  // the first stream delivered events: re-watch at once
}

TEST_F(WatchTest, ExpiredVersionRelistsAndDeliversTheDifference) {
  fake_->responses.push_back(
      ApiReply(200, PodList({Pod("a", "5"), Pod("b", "6"), Pod("d", "7")}, "10")));
  fake_->streams.push_back({200L, {Event("ADDED", Pod("c", "11")), kExpiredEvent}, ""});
  // a changed, b vanished, c unchanged, d replaced (same name, new uid), e new.
  fake_->responses.push_back(ApiReply(
      200, PodList({Pod("a", "30"), Pod("c", "11"), Pod("d", "31", "d2"), Pod("e", "32")}, "40")));
  fake_->streams.push_back({200L, {Event("MODIFIED", Pod("e", "41"))}, ""});
  ASSERT_TRUE(Run(10).ok());
  // Page by page: a replaced object's DELETED comes just before its new ADDED, and what
  // vanished is DELETED once the list is complete, carrying its identity.
  EXPECT_THAT(events_, ElementsAre("ADDED a", "ADDED b", "ADDED d", "ADDED c", "MODIFIED a",
                                   "DELETED d", "ADDED d", "ADDED e", "DELETED b", "MODIFIED e"));
  EXPECT_EQ(Param(3, "resourceVersion"), "40");
}

TEST_F(WatchTest, GoneResponseToTheWatchRelists) {
  fake_->streams.push_back({410L, {}, StatusBody(410, "Gone", "too old").dump()});
  fake_->responses.push_back(ApiReply(200, PodList({Pod("a", "5")}, "50")));
  fake_->streams.push_back({200L, {Event("ADDED", Pod("b", "51"))}, ""});
  WatchOptions options;
  options.resource_version = "3";  // no initial list
  ASSERT_TRUE(Run(2, options).ok());
  EXPECT_THAT(events_, ElementsAre("ADDED a", "ADDED b"));
  EXPECT_EQ(Param(0, "resourceVersion"), "3");
  EXPECT_EQ(fake_->requests[1].path, "/api/v1/namespaces/ns/pods?limit=500");
  EXPECT_EQ(Param(2, "resourceVersion"), "50");
}

TEST_F(WatchTest, GivesUpWhenTheWatchKeepsExpiringWithoutProgress) {
  for (int i = 0; i < 3; ++i) {
    fake_->responses.push_back(ApiReply(200, PodList({Pod("a", "5")}, "10")));
    fake_->streams.push_back({200L, {kExpiredEvent}, ""});
  }
  Status status = Run(10);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("keeps expiring"));
  EXPECT_THAT(events_, ElementsAre("ADDED a"));  // relists found nothing new
  EXPECT_EQ(sleeps_.size(), 2u);
}

TEST_F(WatchTest, ForbiddenWatchFailsAtOnce) {
  fake_->responses.push_back(ApiReply(200, PodList({}, "10")));
  fake_->streams.push_back({403L, {}, StatusBody(403, "Forbidden", "pods is forbidden").dump()});
  Status status = Run(10);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kForbidden);
  EXPECT_THAT(status.error().message, HasSubstr(R"(verbs ["watch"] in namespace "ns")"));
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(WatchTest, DroppedConnectionsAreRetriedWithBackoffThenReported) {
  fake_->responses.push_back(ApiReply(200, PodList({}, "10")));
  fake_->streams.push_back({NetworkError("Connection reset by peer"), {}, ""});
  fake_->streams.push_back({503L, {}, StatusBody(503, "ServiceUnavailable", "busy").dump()});
  fake_->streams.push_back({NetworkError("Connection refused"), {}, ""});
  Status status = Run(10);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kNetwork);
  EXPECT_EQ(fake_->requests.size(), 4u);  // list + max_attempts (3) watches
  EXPECT_EQ(sleeps_.size(), 2u);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(Param(i, "resourceVersion"), "10");
}

TEST_F(WatchTest, ProgressResetsTheFailureCount) {
  fake_->responses.push_back(ApiReply(200, PodList({}, "10")));
  fake_->streams.push_back({NetworkError("Connection refused"), {}, ""});
  fake_->streams.push_back({NetworkError("Connection refused"), {}, ""});
  fake_->streams.push_back(
      {NetworkError("Connection reset by peer"), {Event("ADDED", Pod("a", "11"))}, ""});
  fake_->streams.push_back({NetworkError("Connection refused"), {}, ""});
  fake_->streams.push_back({200L, {Event("ADDED", Pod("b", "12"))}, ""});
  ASSERT_TRUE(Run(2).ok());
  EXPECT_THAT(events_, ElementsAre("ADDED a", "ADDED b"));
  EXPECT_EQ(Param(5, "resourceVersion"), "11");
}

TEST_F(WatchTest, MalformedAndErrorEventsCountAsFailures) {
  fake_->responses.push_back(ApiReply(200, PodList({}, "10")));
  fake_->streams.push_back({200L, {"{not json"}, ""});
  fake_->streams.push_back(
      {200L, {Event("ERROR", StatusBody(500, "InternalError", "etcd watch failed"))}, ""});
  fake_->streams.push_back({200L, {R"({"type":"ADDED"})"}, ""});
  Status status = Run(10);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("malformed watch event"));
  EXPECT_EQ(sleeps_.size(), 2u);
}

TEST_F(WatchTest, HandlerCanStopDuringTheInitialList) {
  fake_->responses.push_back(ApiReply(200, PodList({Pod("a", "5"), Pod("b", "6")}, "10")));
  ASSERT_TRUE(Run(1).ok());
  EXPECT_THAT(events_, ElementsAre("ADDED a"));
  EXPECT_EQ(fake_->requests.size(), 1u);
}

TEST_F(WatchTest, EmptyStreamsDoNotSpin) {
  fake_->responses.push_back(ApiReply(200, PodList({}, "10")));
  fake_->streams.push_back({200L, {}, ""});
  fake_->streams.push_back({200L, {Event("ADDED", Pod("a", "11"))}, ""});
  ASSERT_TRUE(Run(1).ok());
  EXPECT_EQ(sleeps_.size(), 1u);
}

TEST_F(WatchTest, ACancelledWatchEndsAtOnceWithoutRetries) {
  fake_->responses.push_back(ApiReply(200, PodList({}, "10")));
  fake_->streams.push_back({CancelledError("GET /api/v1/namespaces/ns/pods"), {}, ""});
  fake_->streams.push_back({200L, {Event("ADDED", Pod("a", "11"))}, ""});  // never asked for
  Status status = Run(10);
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(IsCancelled(status.error()));
  EXPECT_EQ(fake_->requests.size(), 2u);
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(WatchTest, JitteredTimeoutsStayWithinOneToTwiceTheTimeout) {
  fake_->responses.push_back(ApiReply(200, PodList({}, "10")));
  for (int i = 0; i < 20; ++i) fake_->streams.push_back({200L, {Bookmark("10")}, ""});
  fake_->streams.push_back({200L, {Event("ADDED", Pod("a", "11"))}, ""});
  WatchOptions options;
  options.timeout_seconds = 300;
  options.jitter_timeout = true;
  ASSERT_TRUE(Run(1, options).ok());
  std::set<int> seen;
  for (size_t i = 1; i < fake_->requests.size(); ++i) {
    int timeout = std::stoi(Param(i, "timeoutSeconds"));
    EXPECT_GE(timeout, 300);
    EXPECT_LT(timeout, 600);
    EXPECT_EQ(fake_->requests[i].timeout, std::chrono::seconds(timeout + 30));
    seen.insert(timeout);
  }
  EXPECT_GT(seen.size(), 1u);  // 21 draws from 300 values: equal only by a bug
}

TEST_F(WatchTest, ListErrorsAreReturned) {
  fake_->responses.push_back(ApiReply(403, StatusBody(403, "Forbidden", "pods is forbidden")));
  Status status = Run(10);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kForbidden);
  EXPECT_THAT(status.error().message, HasSubstr(R"(verbs ["list"] in namespace "ns")"));
}

}  // namespace
}  // namespace powerctl::kube
