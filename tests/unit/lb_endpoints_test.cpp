#include "core/lb/endpoints.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

json Endpoint(const std::string& address, json extra = json::object()) {
  json e = {{"addresses", {address}}};
  e.update(extra);
  return e;
}

json Slice(const std::string& name, const std::string& service, json endpoints,
           const std::string& api_version = "discovery.k8s.io/v1") {
  return {{"apiVersion", api_version},
          {"kind", "EndpointSlice"},
          {"metadata",
           {{"name", name},
            {"namespace", "shop"},
            {"labels", {{"kubernetes.io/service-name", service}}}}},
          {"addressType", "IPv4"},
          {"endpoints", std::move(endpoints)}};
}

TEST(LbEndpointsTest, V1ReadyEndpointsWithTheirNodes) {
  json slice =
      Slice("web-abc", "web",
            {Endpoint("10.0.0.1", {{"nodeName", "node-a"},
                                   {"conditions", {{"ready", true}}},
                                   {"targetRef", {{"kind", "Pod"}, {"name", "web-1"}}}}),
             Endpoint("10.0.0.2", {{"nodeName", "node-b"}, {"conditions", {{"ready", false}}}}),
             // No ready condition: unknown, which consumers treat as ready.
             Endpoint("10.0.0.3", {{"deprecatedTopology", {{"kubernetes.io/hostname", "host-c"}}}}),
             {{"addresses", {"10.0.0.4", "10.0.0.40"}}}});
  auto parsed = ParseEndpointSlice(slice, "discovery.k8s.io/v1");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->ready.size(), 3u);
  EXPECT_EQ(parsed->not_ready, 1);
  EXPECT_EQ(parsed->ready[0].address, "10.0.0.1");
  EXPECT_EQ(parsed->ready[0].node, "node-a");
  EXPECT_FALSE(parsed->ready[0].node_is_hostname);
  EXPECT_EQ(parsed->ready[0].pod, "web-1");
  EXPECT_EQ(parsed->ready[0].slice, "web-abc");
  EXPECT_EQ(parsed->ready[1].node, "host-c");
  EXPECT_TRUE(parsed->ready[1].node_is_hostname);
  EXPECT_EQ(parsed->ready[2].address, "10.0.0.4");  // the first of fungible addresses
  EXPECT_EQ(parsed->ready[2].node, "");
}

TEST(LbEndpointsTest, V1beta1NodeFromTheHostnameTopology) {
  json slice = Slice(
      "web-1", "web",
      {Endpoint("10.0.0.1",
                {{"topology",
                  {{"kubernetes.io/hostname", "node-a"}, {"topology.kubernetes.io/zone", "z1"}}}}),
       // 1.20's alpha EndpointSliceNodeName gate adds nodeName; it wins when present.
       Endpoint("10.0.0.2",
                {{"nodeName", "node-b"}, {"topology", {{"kubernetes.io/hostname", "b.example"}}}}),
       // v1's field name means nothing in v1beta1.
       Endpoint("10.0.0.3", {{"deprecatedTopology", {{"kubernetes.io/hostname", "node-c"}}}})},
      "discovery.k8s.io/v1beta1");
  auto parsed = ParseEndpointSlice(slice, "discovery.k8s.io/v1beta1");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->ready.size(), 3u);
  EXPECT_EQ(parsed->ready[0].node, "node-a");
  EXPECT_TRUE(parsed->ready[0].node_is_hostname);
  EXPECT_EQ(parsed->ready[1].node, "node-b");
  EXPECT_FALSE(parsed->ready[1].node_is_hostname);
  EXPECT_EQ(parsed->ready[2].node, "");
}

TEST(LbEndpointsTest, MalformedSlices) {
  auto empty = ParseEndpointSlice(Slice("s", "web", nullptr), "discovery.k8s.io/v1");
  ASSERT_TRUE(empty.ok());
  EXPECT_THAT(empty->ready, IsEmpty());
  auto not_list = ParseEndpointSlice(Slice("s", "web", "x"), "discovery.k8s.io/v1");
  ASSERT_FALSE(not_list.ok());
  EXPECT_EQ(not_list.error().code, ErrorCode::kApi);
  EXPECT_EQ(not_list.error().message, "EndpointSlice \"s\": endpoints is not a list");
  auto no_address = ParseEndpointSlice(Slice("s", "web", {{{"addresses", json::array()}}}),
                                       "discovery.k8s.io/v1");
  ASSERT_FALSE(no_address.ok());
  EXPECT_THAT(no_address.error().message, HasSubstr("an endpoint has no addresses"));
}

class LbDiscoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "shop"}}}});
  }
  void PutSlice(const json& slice, const std::string& version = "v1") {
    server_.PutAt("/apis/discovery.k8s.io/" + version + "/namespaces/shop/endpointslices/" +
                      slice["metadata"]["name"].get<std::string>(),
                  slice);
  }

  kube::fake::FakeApiServer server_;
};

TEST_F(LbDiscoverTest, V1SlicesOfTheServiceOnly) {
  PutSlice(Slice("web-1", "web", {Endpoint("10.0.0.1", {{"nodeName", "a"}})}));
  // During an update an endpoint may sit in two slices: listed once.
  PutSlice(Slice("web-2", "web",
                 {Endpoint("10.0.0.1", {{"nodeName", "a"}}),
                  Endpoint("10.0.0.2", {{"nodeName", "b"}, {"conditions", {{"ready", false}}}})}));
  PutSlice(Slice("api-1", "api", {Endpoint("10.0.0.9", {{"nodeName", "a"}})}));
  auto client = server_.MakeClient();
  auto found = DiscoverEndpoints(*client, "shop", "web");
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found->api_version, "discovery.k8s.io/v1");
  ASSERT_EQ(found->ready.size(), 1u);
  EXPECT_EQ(found->ready[0].address, "10.0.0.1");
  EXPECT_EQ(found->not_ready, 1);
  auto lists =
      server_.RequestsTo("GET", "/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices");
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(lists[0].Query("labelSelector"), "kubernetes.io/service-name=web");
}

TEST_F(LbDiscoverTest, FallsBackToV1beta1WhereV1IsNotServed) {
  server_.FailRequests("/apis/discovery.k8s.io/v1/", 404);
  PutSlice(Slice("web-1", "web",
                 {Endpoint("10.0.0.1", {{"topology", {{"kubernetes.io/hostname", "a"}}}})},
                 "discovery.k8s.io/v1beta1"),
           "v1beta1");
  auto client = server_.MakeClient();
  auto found = DiscoverEndpoints(*client, "shop", "web");
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found->api_version, "discovery.k8s.io/v1beta1");
  ASSERT_EQ(found->ready.size(), 1u);
  EXPECT_EQ(found->ready[0].node, "a");
  EXPECT_TRUE(found->ready[0].node_is_hostname);
}

TEST_F(LbDiscoverTest, OtherErrorsAreNotAFallback) {
  server_.Deny("list", "endpointslices");
  auto client = server_.MakeClient();
  auto found = DiscoverEndpoints(*client, "shop", "web");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.error().code, ErrorCode::kForbidden);
  EXPECT_THAT(found.error().message, HasSubstr("EndpointSlices of service shop/web"));
  EXPECT_THAT(server_.RequestsTo("GET", "/apis/discovery.k8s.io/v1beta1/"), IsEmpty());
}

TEST(LbNodeResolverTest, ByNameOrHostnameLabel) {
  std::vector<json> nodes = {
      {{"metadata", {{"name", "node-a"}, {"labels", {{"kubernetes.io/hostname", "node-a"}}}}}},
      {{"metadata",
        {{"name", "ip-10-0-0-2.internal"}, {"labels", {{"kubernetes.io/hostname", "b"}}}}}}};
  NodeResolver resolver(nodes);
  ServiceEndpoint by_name{"10.0.0.1", "node-a", false, "", ""};
  ServiceEndpoint by_label{"10.0.0.2", "b", true, "", ""};
  ServiceEndpoint hostname_is_name{"10.0.0.3", "node-a", true, "", ""};
  ServiceEndpoint unknown{"10.0.0.4", "gone", false, "", ""};
  ServiceEndpoint none{"10.0.0.5", "", false, "", ""};
  EXPECT_EQ(resolver.Resolve(by_name), "node-a");
  EXPECT_EQ(resolver.Resolve(by_label), "ip-10-0-0-2.internal");
  EXPECT_EQ(resolver.Resolve(hostname_is_name), "node-a");
  EXPECT_EQ(resolver.Resolve(unknown), "");
  EXPECT_EQ(resolver.Resolve(none), "");
}

}  // namespace
}  // namespace powerctl::lb
