// LbAgent::Sync against the in-memory API server and a recording Balancer: what is written to
// the kernel, when, and what /status and /metrics say.
#include "core/lb/agent.h"
#include "tests/unit/fake_api_server.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

class RecordingBalancer final : public Balancer {
 public:
  const char* Mode() const override { return "nftables"; }
  Status Program(const std::vector<BalancedService>& services) override {
    programs.push_back(services);
    return fail.empty() ? OkStatus() : MakeError(ErrorCode::kApi, fail);
  }
  Status Remove() override {
    ++removes;
    return OkStatus();
  }
  bool MayDrift() const override { return drifts; }
  bool drifts = false;
  std::vector<std::vector<BalancedService>> programs;
  int removes = 0;
  std::string fail;  // non-empty: Program fails with this message
};

class LbAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "shop"}}}});
    // The built-in model without temperatures: delta = (max - idle) * 0.1 core / capacity.
    AddNode("node-a", "100", "300");  // 200 * 0.1 / 4 = 5 W per request
    AddNode("node-b", "100", "500");  // 400 * 0.1 / 4 = 10 W per request
    config_.telemetry.cpu_source = "metrics-api";
    config_.telemetry.temperature_source = "prometheus";
    config_.telemetry.prometheus_url = "http://prometheus.test:9090";
    deps_.predict.kube = client_.get();
    deps_.predict.http = &http_;
    deps_.balancer = &balancer_;
    services_.push_back(AddService("web", "10.96.0.10", kPowerAwareValue));
  }

  void AddNode(const std::string& name, const std::string& idle, const std::string& max) {
    server_.Put(
        {{"apiVersion", "v1"},
         {"kind", "Node"},
         {"metadata",
          {{"name", name},
           {"annotations", {{"powerctl.io/idle-watts", idle}, {"powerctl.io/max-watts", max}}}}},
         {"status", {{"capacity", {{"cpu", "4"}, {"memory", "16Gi"}}}}}});
    server_.PutAt("/apis/metrics.k8s.io/v1beta1/nodes/" + name,
                  {{"apiVersion", "metrics.k8s.io/v1beta1"},
                   {"kind", "NodeMetrics"},
                   {"metadata", {{"name", name}}},
                   {"timestamp", telemetry_test::NowRfc3339()},
                   {"window", "20s"},
                   {"usage", {{"cpu", "1"}, {"memory", "1Gi"}}}});
  }

  json AddService(const std::string& name, const std::string& ip, const std::string& value) {
    json service = {{"apiVersion", "v1"},
                    {"kind", "Service"},
                    {"metadata",
                     {{"name", name},
                      {"namespace", "shop"},
                      {"annotations", {{kLoadBalancingAnnotation, value}}}}},
                    {"spec", {{"clusterIP", ip}, {"ports", {{{"name", "http"}, {"port", 80}}}}}}};
    server_.Put(service);
    json endpoints = json::array();
    for (const auto& [address, node] : std::vector<std::pair<std::string, std::string>>{
             {"10.1.0.1", "node-a"}, {"10.1.0.2", "node-b"}}) {
      endpoints.push_back(
          {{"addresses", {address}}, {"conditions", {{"ready", true}}}, {"nodeName", node}});
    }
    server_.PutAt("/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices/" + name + "-x",
                  {{"apiVersion", "discovery.k8s.io/v1"},
                   {"kind", "EndpointSlice"},
                   {"metadata",
                    {{"name", name + "-x"},
                     {"namespace", "shop"},
                     {"labels", {{"kubernetes.io/service-name", name}}}}},
                   {"addressType", "IPv4"},
                   {"ports", {{{"name", "http"}, {"port", 8080}, {"protocol", "TCP"}}}},
                   {"endpoints", endpoints}});
    return service;
  }

  std::vector<BalancedService::Endpoint> LastEndpoints() const {
    return balancer_.programs.back().at(0).endpoints;
  }

  kube::fake::FakeApiServer server_;
  std::unique_ptr<kube::Client> client_ = server_.MakeClient();
  bool prometheus_up_ = true;
  telemetry_test::FakeHttp http_{[this](const HttpClientRequest&) -> Result<HttpClientResponse> {
    if (!prometheus_up_) return MakeError(ErrorCode::kNetwork, "connection refused");
    return telemetry_test::Reply(
        200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  }};
  config::PowerctlConfig config_;
  RecordingBalancer balancer_;
  AgentDependencies deps_;
  std::vector<json> services_;
};

TEST_F(LbAgentTest, ProgramsWeightsOnceAndOnlyAgainWhenTheyChange) {
  LbAgent agent("node-a", config_, deps_);
  EXPECT_FALSE(agent.synced());
  EXPECT_EQ(agent.Sync(services_), SyncResult::kProgrammed);
  ASSERT_EQ(balancer_.programs.size(), 1u);
  const BalancedService& port = balancer_.programs[0].at(0);
  EXPECT_EQ(port.cluster_ip, "10.96.0.10");
  EXPECT_EQ(port.port, 80);
  // Node b adds twice the watts of node a per request: about half the weight.
  EXPECT_EQ(port.endpoints, (std::vector<BalancedService::Endpoint>{{"10.1.0.1", 8080, 100},
                                                                    {"10.1.0.2", 8080, 50}}));

  EXPECT_EQ(agent.Sync(services_), SyncResult::kUnchanged);
  EXPECT_EQ(balancer_.programs.size(), 1u);  // nothing written

  // The prediction for node b changes (its model annotations are re-read at every sync).
  AddNode("node-b", "100", "300");
  EXPECT_EQ(agent.Sync(services_), SyncResult::kProgrammed);
  ASSERT_EQ(balancer_.programs.size(), 2u);
  EXPECT_EQ(LastEndpoints()[1].weight, 100);
}

TEST_F(LbAgentTest, NoPredictionsGiveEqualWeights) {
  prometheus_up_ = false;
  server_.FailRequests("/apis/metrics.k8s.io/", 503);
  LbAgent agent("node-a", config_, deps_);
  EXPECT_EQ(agent.Sync(services_), SyncResult::kProgrammed);
  auto endpoints = LastEndpoints();
  ASSERT_EQ(endpoints.size(), 2u);
  EXPECT_EQ(endpoints[0].weight, endpoints[1].weight);
  json status = agent.StatusJson();
  EXPECT_EQ(status["services"][0]["state"], "balanced");
  EXPECT_THAT(status["services"][0]["reason"].get<std::string>(), HasSubstr("equal weights"));
}

TEST_F(LbAgentTest, AFailureIsReportedAndRetriedAtTheNextSync) {
  LbAgent agent("node-a", config_, deps_);
  balancer_.fail = "nft: Could not process rule: No such file or directory";
  EXPECT_EQ(agent.Sync(services_), SyncResult::kFailed);
  EXPECT_THAT(agent.last_error(), HasSubstr("Could not process rule"));
  json status = agent.StatusJson();
  EXPECT_THAT(status["lastError"].get<std::string>(), HasSubstr("Could not process rule"));
  EXPECT_EQ(status["rulesInEffect"], false);
  std::string metrics = agent.metrics().Render();
  EXPECT_THAT(metrics, HasSubstr("powerctl_lb_syncs_total{result=\"failed\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("powerctl_lb_rules_in_effect 0"));

  // Same weights, but the last attempt failed: written again, not "unchanged".
  balancer_.fail.clear();
  EXPECT_EQ(agent.Sync(services_), SyncResult::kProgrammed);
  EXPECT_EQ(balancer_.programs.size(), 2u);
  EXPECT_EQ(agent.last_error(), "");
  metrics = agent.metrics().Render();
  EXPECT_THAT(metrics, HasSubstr("powerctl_lb_rules_in_effect 1"));
  EXPECT_THAT(metrics, HasSubstr("powerctl_lb_endpoint_weight{namespace=\"shop\",service=\"web\","
                                 "port=\"80/TCP\",endpoint=\"10.1.0.2:8080\"} 50"));
}

TEST_F(LbAgentTest, ARemovedAnnotationRemovesTheRulesAndShutdownUndoesEverything) {
  LbAgent agent("node-a", config_, deps_);
  EXPECT_EQ(agent.Sync(services_), SyncResult::kProgrammed);
  EXPECT_EQ(agent.Sync({}), SyncResult::kProgrammed);
  EXPECT_TRUE(balancer_.programs.back().empty());
  EXPECT_EQ(agent.Sync({}), SyncResult::kUnchanged);
  EXPECT_TRUE(agent.Shutdown().ok());
  EXPECT_EQ(balancer_.removes, 1);
}

TEST_F(LbAgentTest, SkippedAndFailedServicesAreInTheStatusAndLeftOut) {
  services_.push_back(AddService("sticky", "10.96.0.11", kPowerAwareValue));
  services_.back()["spec"]["sessionAffinity"] = "ClientIP";
  services_.push_back(AddService("typo", "10.96.0.12", "power_aware"));
  json missing = services_[0];  // a Service whose slices cannot be read
  missing["metadata"]["name"] = "broken";
  missing["metadata"]["namespace"] = "other";
  services_.push_back(missing);
  server_.FailRequests("/apis/discovery.k8s.io/v1/namespaces/other/", 500);
  json plain = services_[0];  // no annotation: not the agent's
  plain["metadata"]["name"] = "plain";
  plain["metadata"].erase("annotations");
  services_.push_back(plain);

  LbAgent agent("node-a", config_, deps_);
  EXPECT_EQ(agent.Sync(services_), SyncResult::kProgrammed);
  ASSERT_EQ(balancer_.programs.back().size(), 1u);
  EXPECT_EQ(balancer_.programs.back()[0].name, "web");

  json status = agent.StatusJson();
  EXPECT_EQ(status["kind"], "LbAgentStatus");
  EXPECT_EQ(status["node"], "node-a");
  EXPECT_EQ(status["synced"], true);
  EXPECT_TRUE(status["lastSync"].is_string());
  std::map<std::string, json> by_name;
  for (const json& s : status["services"]) by_name[s["name"].get<std::string>()] = s;
  ASSERT_EQ(by_name.size(), 4u);  // "plain" is not listed
  EXPECT_EQ(by_name["web"]["state"], "balanced");
  EXPECT_EQ(by_name["web"]["ports"][0]["endpoints"][1]["node"], "node-b");
  EXPECT_EQ(by_name["web"]["ports"][0]["endpoints"][1]["basis"], "predicted");
  EXPECT_EQ(by_name["sticky"]["state"], "skipped");
  EXPECT_THAT(by_name["sticky"]["reason"].get<std::string>(), HasSubstr("ClientIP"));
  EXPECT_EQ(by_name["typo"]["state"], "skipped");
  EXPECT_EQ(by_name["broken"]["state"], "failed");
  EXPECT_THAT(agent.metrics().Render(), HasSubstr("powerctl_lb_services{state=\"skipped\"} 2"));
}

TEST_F(LbAgentTest, AKernelThatMayDriftIsCheckedAtEverySync) {
  // ipvs mode: kube-proxy's restart sets weights back to 1, so the balancer is asked every
  // time (it writes only what differs); the wanted weights did not change: "unchanged".
  balancer_.drifts = true;
  LbAgent agent("node-a", config_, deps_);
  EXPECT_EQ(agent.Sync(services_), SyncResult::kProgrammed);
  EXPECT_EQ(agent.Sync(services_), SyncResult::kUnchanged);
  EXPECT_EQ(balancer_.programs.size(), 2u);
  balancer_.fail = "ipvsadm: Memory allocation problem";
  EXPECT_EQ(agent.Sync(services_), SyncResult::kFailed);
  EXPECT_THAT(agent.last_error(), HasSubstr("Memory allocation problem"));
}

}  // namespace
}  // namespace powerctl::lb
