// MetricsApiClient over kube::Client with a scripted transport; NodeMetrics/PodMetrics
// decoding and RFC 3339 times.

#include "core/telemetry/metrics_api.h"
#include "tests/unit/fake_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace powerctl::telemetry {
namespace {

using json = nlohmann::json;
using kube::fake::ApiReply;
using kube::fake::FakeTransport;
using kube::fake::StatusBody;
using std::chrono::system_clock;
using ::testing::HasSubstr;

json NodeMetricsJson(const std::string& name, const std::string& cpu, const std::string& memory,
                     const std::string& timestamp = "2024-05-01T10:00:00Z") {
  return {{"kind", "NodeMetrics"},        {"apiVersion", "metrics.k8s.io/v1beta1"},
          {"metadata", {{"name", name}}}, {"timestamp", timestamp},
          {"window", "20.001s"},          {"usage", {{"cpu", cpu}, {"memory", memory}}}};
}

json List(std::vector<json> items) {
  return {{"kind", "NodeMetricsList"},
          {"apiVersion", "metrics.k8s.io/v1beta1"},
          {"metadata", json::object()},
          {"items", items}};
}

class TelemetryMetricsApiTest : public ::testing::Test {
 protected:
  TelemetryMetricsApiTest() {
    auto transport = std::make_unique<FakeTransport>();
    fake_ = transport.get();
    kube::ClientOptions options;
    options.max_attempts = 1;
    options.sleep = [](std::chrono::milliseconds) {};
    kube_ = std::make_unique<kube::Client>(std::move(transport), options);
    client_ = std::make_unique<MetricsApiClient>(*kube_);
  }

  FakeTransport* fake_ = nullptr;
  std::unique_ptr<kube::Client> kube_;
  std::unique_ptr<MetricsApiClient> client_;
};

TEST_F(TelemetryMetricsApiTest, ListsNodeMetricsInCoresAndBytes) {
  fake_->responses.push_back(ApiReply(200, List({NodeMetricsJson("a", "137774469n", "1322244Ki"),
                                                 NodeMetricsJson("b", "1500m", "2Gi")})));
  auto nodes = client_->ListNodeMetrics();
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "a");
  EXPECT_EQ((*nodes)[0].usage.cpu_cores, 0.137774469);
  EXPECT_EQ((*nodes)[0].usage.memory_bytes, 1322244.0 * 1024);
  EXPECT_EQ((*nodes)[0].window, std::chrono::milliseconds(20001));
  EXPECT_EQ(system_clock::to_time_t((*nodes)[0].timestamp), 1714557600);
  EXPECT_EQ((*nodes)[1].usage.cpu_cores, 1.5);
  EXPECT_THAT(fake_->requests[0].path, HasSubstr("/apis/metrics.k8s.io/v1beta1/nodes"));
}

TEST_F(TelemetryMetricsApiTest, OneMalformedNodeDoesNotHideTheOthers) {
  fake_->responses.push_back(
      ApiReply(200, List({NodeMetricsJson("a", "lots", "1Ki"), NodeMetricsJson("b", "1", "1Ki")})));
  std::map<std::string, Error> invalid;
  auto nodes = client_->ListNodeMetrics("", &invalid);
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].name, "b");
  ASSERT_EQ(invalid.count("a"), 1u);
  EXPECT_THAT(invalid.at("a").message,
              HasSubstr("NodeMetrics a: usage.cpu: invalid quantity \"lots\""));
}

TEST_F(TelemetryMetricsApiTest, GetNodeMetricsAndMissingApi) {
  fake_->responses.push_back(ApiReply(200, NodeMetricsJson("a", "250m", "1Mi")));
  auto node = client_->GetNodeMetrics("a");
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(node->usage.cpu_cores, 0.25);
  EXPECT_EQ(fake_->requests[0].path, "/apis/metrics.k8s.io/v1beta1/nodes/a");

  fake_->responses.push_back(ApiReply(
      404, StatusBody(404, "NotFound", "the server could not find the requested resource")));
  auto missing = client_->ListNodeMetrics();
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(missing.error().message, HasSubstr("listing NodeMetrics"));
  EXPECT_THAT(missing.error().message, HasSubstr("telemetry.cpuSource: prometheus"));
}

TEST_F(TelemetryMetricsApiTest, PodMetricsSumContainers) {
  json pod = {{"metadata", {{"name", "web-1"}, {"namespace", "shop"}}},
              {"timestamp", "2024-05-01T10:00:00.5+02:00"},
              {"window", "30s"},
              {"containers",
               {{{"name", "app"}, {"usage", {{"cpu", "12345u"}, {"memory", "10Mi"}}}},
                {{"name", "sidecar"}, {"usage", {{"cpu", "1500000n"}, {"memory", "1Mi"}}}}}}};
  fake_->responses.push_back(ApiReply(200, {{"items", {pod}}}));
  auto pods = client_->ListPodMetrics("shop");
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 1u);
  const PodMetrics& p = (*pods)[0];
  EXPECT_EQ(p.namespace_, "shop");
  ASSERT_EQ(p.containers.size(), 2u);
  EXPECT_EQ(p.containers[1].name, "sidecar");
  EXPECT_DOUBLE_EQ(p.Total().cpu_cores, 0.012345 + 0.0015);
  EXPECT_EQ(p.Total().memory_bytes, 11.0 * 1024 * 1024);
  EXPECT_EQ(p.window, std::chrono::seconds(30));
  EXPECT_EQ(p.timestamp.time_since_epoch(),
            std::chrono::seconds(1714557600 - 7200) + std::chrono::milliseconds(500));
  EXPECT_THAT(fake_->requests[0].path,
              HasSubstr("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods"));

  fake_->responses.push_back(ApiReply(200, pod));
  auto one = client_->GetPodMetrics("shop", "web-1");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(fake_->requests[1].path, "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-1");

  fake_->responses.push_back(ApiReply(200, {{"items", json::array()}}));
  ASSERT_TRUE(client_->ListPodMetrics("").ok());
  EXPECT_THAT(fake_->requests[2].path, HasSubstr("/apis/metrics.k8s.io/v1beta1/pods"));
}

TEST(TelemetryMetricsParseTest, RejectsMalformedObjects) {
  auto message = [](const json& object) {
    auto r = ParseNodeMetrics(object);
    return r.ok() ? std::string("(ok)") : r.error().message;
  };
  EXPECT_THAT(message(json::array()), HasSubstr("has no metadata.name"));
  json no_usage = NodeMetricsJson("a", "1", "1");
  no_usage.erase("usage");
  EXPECT_EQ(message(no_usage), "NodeMetrics a: has no usage");
  json no_cpu = NodeMetricsJson("a", "1", "1");
  no_cpu["usage"].erase("cpu");
  EXPECT_EQ(message(no_cpu), "NodeMetrics a: has no usage.cpu");
  EXPECT_THAT(message(NodeMetricsJson("a", "1", "x")), HasSubstr("usage.memory"));
  EXPECT_THAT(message(NodeMetricsJson("a", "1", "1", "yesterday")),
              HasSubstr("timestamp \"yesterday\" is not RFC 3339"));
  json bad_window = NodeMetricsJson("a", "1", "1");
  bad_window["window"] = 5;
  EXPECT_EQ(message(bad_window), "(ok)");  // the window is informational
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "n"}}},
              {"timestamp", "2024-05-01T10:00:00Z"},
              {"containers", {{{"name", "c"}, {"usage", {{"cpu", "?"}}}}}}};
  auto parsed = ParsePodMetrics(pod);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message, HasSubstr("PodMetrics n/p container \"c\": usage.cpu"));
}

// A timestamp (or quantity) cut at byte 40 (64) inside a character made the message invalid
// UTF-8, and a strict dump() of it throw.
TEST(TelemetryMetricsParseTest, UntrustedTextInErrorsIsCutBetweenCharacters) {
  std::string accents;
  for (int i = 0; i < 40; ++i) accents += "\xc3\xa9";
  auto parsed = ParseNodeMetrics(NodeMetricsJson("a", "1", "1", "a" + accents));
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message, HasSubstr("timestamp \"a\xc3\xa9"));
  EXPECT_THAT(parsed.error().message, HasSubstr("...\" is not RFC 3339"));
  EXPECT_NO_THROW((void)json(parsed.error().message).dump()) << parsed.error().message;

  parsed = ParseNodeMetrics(NodeMetricsJson("a", "1" + accents, "1"));
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message, HasSubstr("usage.cpu: invalid quantity"));
  EXPECT_NO_THROW((void)json(parsed.error().message).dump()) << parsed.error().message;
}

TEST(TelemetryMetricsParseTest, Rfc3339) {
  auto seconds = [](const char* text) -> long long {
    auto t = ParseRfc3339(text);
    if (!t) return -1;
    return std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
  };
  EXPECT_EQ(seconds("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(seconds("2024-05-01T10:00:00Z"), 1714557600000);
  EXPECT_EQ(seconds("2024-05-01T10:00:00.123456789Z"), 1714557600123);
  EXPECT_EQ(seconds("2024-05-01T12:30:00+02:30"), 1714557600000);
  EXPECT_EQ(seconds("2024-05-01T07:00:00-03:00"), 1714557600000);
  for (const char* bad : {"", "2024-05-01", "2024-05-01T10:00:00", "2024-13-01T10:00:00Z",
                          "2024-05-01T10:00:00.Z", "2024-05-01T10:00:00+0200",
                          "2024-05-01 10:00:00Z", "2024-05-01T25:00:00Z", "x024-05-01T10:00:00Z"}) {
    EXPECT_FALSE(ParseRfc3339(bad)) << bad;
  }
}

// prometheus_response_fuzzer: year 2424 overflowed system_clock's 64-bit nanoseconds (UBSan:
// signed integer overflow in from_time_t); years outside 1900-2200 are rejected instead.
TEST(TelemetryMetricsParseTest, Rfc3339YearsOutsideTheClockRange) {
  for (const char* bad : {"2424-05-01T10:00:00Z", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z",
                          "1677-01-01T00:00:00Z", "2201-01-01T00:00:00Z"}) {
    EXPECT_FALSE(ParseRfc3339(bad)) << bad;
  }
  EXPECT_TRUE(ParseRfc3339("1900-01-01T00:00:00Z"));
  EXPECT_TRUE(ParseRfc3339("2200-12-31T23:59:59-23:59"));
  const nlohmann::json node = {{"kind", "NodeMetrics"},
                               {"metadata", {{"name", "node-a"}}},
                               {"timestamp", "2424-05-01T10:00:00Z"},
                               {"window", "20s"},
                               {"usage", {{"cpu", "1"}, {"memory", "1Ki"}}}};
  auto parsed = ParseNodeMetrics(node);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message, HasSubstr("is not RFC 3339"));
}

}  // namespace
}  // namespace powerctl::telemetry
