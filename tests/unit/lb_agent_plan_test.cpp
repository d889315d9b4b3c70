#include "core/lb/agent_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

json Service(json spec, std::string annotation = kPowerAwareValue) {
  json service = {{"metadata",
                   {{"namespace", "shop"},
                    {"name", "web"},
                    {"annotations", {{kLoadBalancingAnnotation, annotation}}}}},
                  {"spec", std::move(spec)}};
  return service;
}

json ClusterIpSpec() {
  return {{"clusterIP", "10.96.0.10"},
          {"ports",
           {{{"name", "http"}, {"port", 80}, {"protocol", "TCP"}},
            {{"name", "dns"}, {"port", 53}, {"protocol", "UDP"}},
            {{"name", "sig"}, {"port", 99}, {"protocol", "SCTP"}}}}};
}

EndpointRow Row(std::string address, std::string node, int weight,
                std::vector<EndpointPort> ports) {
  EndpointRow row;
  row.endpoint.address = std::move(address);
  row.endpoint.ports = std::move(ports);
  row.node = std::move(node);
  row.weight.weight = weight;
  row.weight.basis = WeightBasis::kPredicted;
  return row;
}

TEST(LbAgentPlanTest, AnnotationIsFoundWhateverItsValue) {
  EXPECT_TRUE(HasLoadBalancingAnnotation(Service(ClusterIpSpec())));
  EXPECT_TRUE(HasLoadBalancingAnnotation(Service(ClusterIpSpec(), "power_aware")));
  EXPECT_FALSE(HasLoadBalancingAnnotation({{"metadata", {{"name", "x"}}}}));
}

TEST(LbAgentPlanTest, ServicesWhoseSemanticsTheAgentCannotKeepAreLeftToKubeProxy) {
  EXPECT_EQ(LeftToKubeProxy(Service(ClusterIpSpec())), "");
  EXPECT_THAT(LeftToKubeProxy(Service(ClusterIpSpec(), "yes")),
              HasSubstr("\"yes\" is not \"power-aware\""));
  json spec = ClusterIpSpec();
  spec["clusterIP"] = "None";
  EXPECT_THAT(LeftToKubeProxy(Service(spec)), HasSubstr("headless"));
  spec["clusterIP"] = "fd00::10";
  EXPECT_THAT(LeftToKubeProxy(Service(spec)), HasSubstr("not IPv4"));
  EXPECT_THAT(LeftToKubeProxy(Service({{"type", "ExternalName"}})), HasSubstr("ExternalName"));
  spec = ClusterIpSpec();
  spec["sessionAffinity"] = "ClientIP";
  EXPECT_THAT(LeftToKubeProxy(Service(spec)), HasSubstr("sessionAffinity ClientIP"));
  spec = ClusterIpSpec();
  spec["internalTrafficPolicy"] = "Local";
  EXPECT_THAT(LeftToKubeProxy(Service(spec)), HasSubstr("internalTrafficPolicy Local"));
  // externalTrafficPolicy governs node ports and load balancers, which the rules never match.
  spec = ClusterIpSpec();
  spec["externalTrafficPolicy"] = "Local";
  spec["type"] = "NodePort";
  EXPECT_EQ(LeftToKubeProxy(Service(spec)), "");
}

TEST(LbAgentPlanTest, PortsMapToTheSlicePortOfTheSameNameAndProtocol) {
  ServiceWeights weights;
  weights.endpoints = {
      Row("10.1.0.1", "node-a", 100, {{"http", 8080, "TCP"}, {"dns", 5353, "UDP"}}),
      Row("10.1.0.2", "node-b", 25, {{"http", 8081, "TCP"}}),  // serves no dns
      Row("fd00::1", "node-c", 50, {{"http", 8080, "TCP"}}),   // IPv6: not in an ip table
  };
  PlannedService plan = PlanService(Service(ClusterIpSpec()), weights);
  EXPECT_EQ(plan.state, ServiceState::kBalanced);
  EXPECT_EQ(plan.reason, "");
  ASSERT_EQ(plan.ports.size(), 2u);
  const BalancedService& http = plan.ports[0];
  EXPECT_EQ(http.cluster_ip, "10.96.0.10");
  EXPECT_EQ(http.port, 80);
  EXPECT_EQ(http.protocol, "TCP");
  EXPECT_EQ(http.endpoints, (std::vector<BalancedService::Endpoint>{{"10.1.0.1", 8080, 100},
                                                                    {"10.1.0.2", 8081, 25}}));
  const BalancedService& dns = plan.ports[1];
  EXPECT_EQ(dns.protocol, "UDP");
  EXPECT_EQ(dns.endpoints, (std::vector<BalancedService::Endpoint>{{"10.1.0.1", 5353, 100}}));
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_THAT(plan.notes[0], HasSubstr("99/SCTP: only TCP and UDP"));
}

TEST(LbAgentPlanTest, UnnamedSinglePortAndMissingPredictionsAreSaid) {
  json spec = {{"clusterIP", "10.96.0.11"}, {"ports", {{{"port", 80}}}}};  // protocol defaults
  ServiceWeights weights;
  weights.prediction_error = "Prometheus at http://p:9090: connection refused";
  weights.endpoints = {Row("10.1.0.1", "node-a", 50, {{"", 8080, "TCP"}}),
                       Row("10.1.0.2", "node-b", 50, {{"", 8080, "TCP"}})};
  for (auto& row : weights.endpoints) row.weight.basis = WeightBasis::kUnknown;
  PlannedService plan = PlanService(Service(spec), weights);
  ASSERT_EQ(plan.ports.size(), 1u);
  EXPECT_EQ(plan.ports[0].endpoints.size(), 2u);
  EXPECT_THAT(plan.reason, HasSubstr("no predictions"));
  EXPECT_THAT(plan.reason, HasSubstr("equal weights"));
}

TEST(LbAgentPlanTest, NoReadyEndpointsMeansNoRules) {
  PlannedService plan = PlanService(Service(ClusterIpSpec()), ServiceWeights{});
  EXPECT_EQ(plan.state, ServiceState::kSkipped);
  EXPECT_EQ(plan.reason, "no ready endpoints");
  EXPECT_TRUE(plan.ports.empty());
}

}  // namespace
}  // namespace powerctl::lb
