#include "core/lb/service_weights.h"
#include "tests/unit/fake_api_server.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

class LbServiceWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "shop"}}}});
    // The built-in model with no temperatures: delta = (max - idle) * cpu / capacity.
    AddNode("node-a", "4", "100", "300", "1");  // +0.1 core: 200 * 0.1 / 4 = 5 W
    AddNode("node-b", "8", "100", "900", "1");  // 800 * 0.1 / 8 = 10 W
    AddNode("node-c", "8", "100", "300", "");   // no CPU metrics
    config_.telemetry.cpu_source = "metrics-api";
    config_.telemetry.temperature_source = "prometheus";
    config_.telemetry.prometheus_url = "http://prometheus.test:9090";
    deps_.kube = client_.get();
    deps_.http = &http_;
  }

  void AddNode(const std::string& name, const std::string& cpu, const std::string& idle,
               const std::string& max, const std::string& used) {
    server_.Put(
        {{"apiVersion", "v1"},
         {"kind", "Node"},
         {"metadata",
          {{"name", name},
           {"annotations", {{"powerctl.io/idle-watts", idle}, {"powerctl.io/max-watts", max}}}}},
         {"status", {{"capacity", {{"cpu", cpu}, {"memory", "16Gi"}}}}}});
    if (used.empty()) return;
    server_.PutAt("/apis/metrics.k8s.io/v1beta1/nodes/" + name,
                  {{"apiVersion", "metrics.k8s.io/v1beta1"},
                   {"kind", "NodeMetrics"},
                   {"metadata", {{"name", name}}},
                   {"timestamp", telemetry_test::NowRfc3339()},
                   {"window", "20s"},
                   {"usage", {{"cpu", used}, {"memory", "1Gi"}}}});
  }

  void AddService(const json& annotations = json::object()) {
    server_.Put(
        {{"apiVersion", "v1"},
         {"kind", "Service"},
         {"metadata", {{"name", "web"}, {"namespace", "shop"}, {"annotations", annotations}}},
         {"spec", {{"ports", {{{"port", 80}}}}}}});
    json endpoints = json::array();
    for (const auto& [address, node] :
         std::vector<std::pair<std::string, std::string>>{{"10.0.0.2", "node-b"},
                                                          {"10.0.0.1", "node-a"},
                                                          {"10.0.0.3", "node-c"},
                                                          {"10.0.0.4", "gone"}}) {
      endpoints.push_back({{"addresses", {address}},
                           {"conditions", {{"ready", true}}},
                           {"topology", {{"kubernetes.io/hostname", node}}}});
    }
    endpoints.push_back({{"addresses", {"10.0.0.5"}}, {"conditions", {{"ready", false}}}});
    server_.FailRequests("/apis/discovery.k8s.io/v1/", 404);  // a 1.20 server
    server_.PutAt("/apis/discovery.k8s.io/v1beta1/namespaces/shop/endpointslices/web-x",
                  {{"apiVersion", "discovery.k8s.io/v1beta1"},
                   {"kind", "EndpointSlice"},
                   {"metadata",
                    {{"name", "web-x"},
                     {"namespace", "shop"},
                     {"labels", {{"kubernetes.io/service-name", "web"}}}}},
                   {"addressType", "IPv4"},
                   {"endpoints", endpoints}});
  }

  kube::fake::FakeApiServer server_;
  std::unique_ptr<kube::Client> client_ = server_.MakeClient();
  // Prometheus knows no temperatures: the built-in model takes them as nominal.
  telemetry_test::FakeHttp http_{[](const HttpClientRequest&) -> Result<HttpClientResponse> {
    return telemetry_test::Reply(
        200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  }};
  config::PowerctlConfig config_;
  report::PredictDependencies deps_;
};

TEST_F(LbServiceWeightsTest, WeightsPerEndpointWithReasons) {
  AddService();
  auto w = ComputeServiceWeights("shop", "web", config_, deps_);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->slice_api, "discovery.k8s.io/v1beta1");
  EXPECT_EQ(w->cpu_per_request, "100m");
  EXPECT_EQ(w->cpu_source, "lb.cpuPerRequest");
  EXPECT_EQ(w->not_ready, 1);
  EXPECT_FALSE(w->complete());
  ASSERT_EQ(w->endpoints.size(), 4u);
  const EndpointRow& b = w->endpoints[0];
  const EndpointRow& a = w->endpoints[1];
  EXPECT_EQ(b.node, "node-b");
  ASSERT_TRUE(a.power && a.power->delta());
  EXPECT_NEAR(*a.power->delta(), 5, 0.01);
  EXPECT_NEAR(*b.power->delta(), 10, 0.01);
  EXPECT_EQ(a.weight.weight, 100);
  EXPECT_EQ(b.weight.weight, 50);  // 5.1 / 10.1
  EXPECT_EQ(w->endpoints[2].weight.weight, 50);
  EXPECT_EQ(w->endpoints[2].weight.basis, WeightBasis::kUnknown);
  EXPECT_THAT(w->endpoints[2].weight.reason, HasSubstr("no prediction ("));
  EXPECT_EQ(w->endpoints[3].node, "");
  EXPECT_EQ(w->endpoints[3].weight.reason,
            "no prediction (node \"gone\" not found); default weight");

  json doc = ServiceWeightsToJson(*w);
  EXPECT_EQ(doc["kind"], "ServiceWeights");
  EXPECT_EQ(doc["endpointSliceApi"], "discovery.k8s.io/v1beta1");
  EXPECT_EQ(doc["cpuPerRequest"]["cores"], 0.1);
  EXPECT_EQ(doc["notReadyEndpoints"], 1);
  EXPECT_EQ(doc["endpoints"][1]["address"], "10.0.0.1");
  EXPECT_EQ(doc["endpoints"][1]["weight"], 100);
  EXPECT_EQ(doc["endpoints"][1]["basis"], "predicted");
  EXPECT_EQ(doc["endpoints"][1]["prediction"]["node"], "node-a");
  EXPECT_EQ(doc["endpoints"][3]["node"], nullptr);
  EXPECT_EQ(doc["endpoints"][3]["prediction"], nullptr);
  EXPECT_FALSE(doc.contains("predictionError"));
}

TEST_F(LbServiceWeightsTest, CpuPerRequestFromTheAnnotation) {
  AddService({{"powerctl.io/cpu-per-request", "400m"}});
  auto w = ComputeServiceWeights("shop", "web", config_, deps_);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->cpu_source, "annotation powerctl.io/cpu-per-request");
  EXPECT_NEAR(*w->endpoints[1].power->delta(), 20, 0.05);
  EXPECT_EQ(w->endpoints[0].weight.weight, 50);  // 20.1 / 40.1
}

TEST_F(LbServiceWeightsTest, BadInput) {
  auto missing = ComputeServiceWeights("shop", "web", config_, deps_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().message, "service \"shop/web\" not found");

  AddService({{"powerctl.io/cpu-per-request", "lots"}});
  auto bad = ComputeServiceWeights("shop", "web", config_, deps_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(bad.error().message,
              HasSubstr("service \"shop/web\": annotation powerctl.io/cpu-per-request \"lots\""));

  auto name = ComputeServiceWeights("shop", "Web_1", config_, deps_);
  ASSERT_FALSE(name.ok());
  EXPECT_EQ(name.error().code, ErrorCode::kInvalidInput);
}

TEST_F(LbServiceWeightsTest, NoTelemetryMeansDefaultWeightsNotAFailure) {
  AddService();
  server_.FailRequests("/apis/metrics.k8s.io/", 503);
  config_.lb.unknown_weight = 20;
  auto w = ComputeServiceWeights("shop", "web", config_, deps_);
  ASSERT_TRUE(w.ok()) << w.error().message;
  for (const EndpointRow& row : w->endpoints) {
    EXPECT_EQ(row.weight.weight, 20) << row.endpoint.address;
    EXPECT_EQ(row.weight.basis, WeightBasis::kUnknown);
  }
  EXPECT_THAT(w->endpoints[0].weight.reason, HasSubstr("metrics.k8s.io"));
}

}  // namespace
}  // namespace powerctl::lb
