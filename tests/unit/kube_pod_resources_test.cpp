#include "core/kube/pod_resources.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace powerctl::kube {
namespace {

using nlohmann::json;

json C(const std::string& name, const std::string& cpu_req, const std::string& cpu_lim = "",
       const std::string& mem_req = "", bool sidecar = false) {
  json c = {{"name", name}, {"resources", json::object()}};
  if (!cpu_req.empty()) c["resources"]["requests"]["cpu"] = cpu_req;
  if (!mem_req.empty()) c["resources"]["requests"]["memory"] = mem_req;
  if (!cpu_lim.empty()) c["resources"]["limits"]["cpu"] = cpu_lim;
  if (sidecar) c["restartPolicy"] = "Always";
  return c;
}

json Pod(json containers, json init = json::array()) {
  return {{"metadata", {{"name", "p"}}},
          {"spec", {{"containers", std::move(containers)}, {"initContainers", std::move(init)}}}};
}

PodResources Get(const json& pod) {
  auto r = EffectivePodResources(pod);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : PodResources{};
}

TEST(EffectivePodResourcesTest, ProtocolsDerivedVector) {
  // docs/reference/extender-protocol.md ("The pod's effective request"): containers 500m+250m;
  // init [A 1, S 100m sidecar, B 2]; overhead 10m.
  json pod = Pod({C("a", "500m"), C("b", "250m")},
                 {C("A", "1"), C("S", "100m", "", "", true), C("B", "2")});
  pod["spec"]["overhead"] = {{"cpu", "10m"}};
  EXPECT_EQ(Get(pod).cpu_request_millis, 2110);
}

// Cases in the shape of component-helpers' PodRequests tests (restartable init containers).
TEST(EffectivePodResourcesTest, SidecarCases) {
  // one sidecar + one container: both run for the pod's lifetime.
  EXPECT_EQ(Get(Pod({C("c", "1")}, {C("r1", "1", "", "", true)})).cpu_request_millis, 2000);
  // three sidecars + one container: 1+2+3+1.
  EXPECT_EQ(Get(Pod({C("c", "1")}, {C("r1", "1", "", "", true), C("r2", "2", "", "", true),
                                    C("r3", "3", "", "", true)}))
                .cpu_request_millis,
            7000);
  // init-1 5, r1 1, r2 2, init-2 5 (runs beside r1+r2 = 8), r3 3: sum 7, init max 8.
  EXPECT_EQ(
      Get(Pod({C("c", "1")}, {C("i1", "5"), C("r1", "1", "", "", true), C("r2", "2", "", "", true),
                              C("i2", "5"), C("r3", "3", "", "", true)}))
          .cpu_request_millis,
      8000);
  // a sidecar then a regular init container: 1 + 5 = 6 > 1 + 1.
  EXPECT_EQ(Get(Pod({C("c", "1")}, {C("r1", "1", "", "", true), C("i1", "5")})).cpu_request_millis,
            6000);
  // a regular init container before the sidecar does not run beside it: max(2, 5) = 5.
  EXPECT_EQ(Get(Pod({C("c", "1")}, {C("i1", "5"), C("r1", "1", "", "", true)})).cpu_request_millis,
            5000);
}

TEST(EffectivePodResourcesTest, ClassicInitContainersTakeTheMax) {
  // init 2 and 1 CPU, app 1 + 0.5: the effective request is max(1.5, 2) = 2.
  PodResources r = Get(Pod({C("a", "1", "", "64Mi"), C("b", "500m", "", "64Mi")},
                           {C("i1", "2", "", "256Mi"), C("i2", "1")}));
  EXPECT_EQ(r.cpu_request_millis, 2000);
  EXPECT_EQ(r.memory_request_bytes, 256 * 1024 * 1024);
}

TEST(EffectivePodResourcesTest, LimitWithoutRequestDefaultsTheRequest) {
  PodResources r = Get(Pod({C("a", "", "750m"), C("b", "250m", "1")}));
  EXPECT_EQ(r.cpu_request_millis, 1000);
  EXPECT_EQ(r.cpu_limit_millis, 1750);
  EXPECT_FALSE(r.cpu_unspecified);
}

TEST(EffectivePodResourcesTest, LimitIsUnboundedWhenAContainerHasNone) {
  PodResources r = Get(Pod({C("a", "500m", "1"), C("b", "250m")}));
  EXPECT_EQ(r.cpu_limit_millis, std::nullopt);
  json pod = Pod({C("a", "500m", "1"), C("b", "250m")});
  pod["spec"]["resources"] = {{"limits", {{"cpu", "3"}}}};
  EXPECT_EQ(Get(pod).cpu_limit_millis, 3000);
}

TEST(EffectivePodResourcesTest, PodLevelResourcesAndOverhead) {
  json pod = Pod({C("a", "500m", "", "1Gi")});
  pod["spec"]["resources"] = {{"requests", {{"cpu", "2"}}}};
  pod["spec"]["overhead"] = {{"cpu", "250m"}, {"memory", "120Mi"}};
  PodResources r = Get(pod);
  EXPECT_EQ(r.cpu_request_millis, 2250);
  EXPECT_EQ(r.memory_request_bytes, (1024 + 120) * 1024 * 1024);
}

TEST(EffectivePodResourcesTest, NoRequestsUseTheSchedulerScoringDefaults) {
  PodResources r = Get(Pod({C("a", ""), C("b", "")}));
  EXPECT_TRUE(r.cpu_unspecified);
  EXPECT_EQ(r.cpu_request_millis, 0);
  EXPECT_EQ(r.cpu_request_nonzero_millis, 200);
  EXPECT_EQ(r.memory_request_nonzero_bytes, 2 * kDefaultMemoryRequest);
  PodResources mixed = Get(Pod({C("a", "300m"), C("b", "")}));
  EXPECT_EQ(mixed.cpu_request_nonzero_millis, 400);
  EXPECT_FALSE(mixed.cpu_unspecified);
}

TEST(EffectivePodResourcesTest, ExactQuantitiesRoundUpToMillicores) {
  EXPECT_EQ(Get(Pod({C("a", "1500000n"), C("b", "1500000n")})).cpu_request_millis, 3);
  EXPECT_EQ(Get(Pod({C("a", "1500000n")})).cpu_request_millis, 2);
  json numeric = Pod(json::array({{{"name", "a"}, {"resources", {{"requests", {{"cpu", 1}}}}}}}));
  EXPECT_EQ(Get(numeric).cpu_request_millis, 1000);
  json half = Pod(json::array({{{"name", "a"}, {"resources", {{"requests", {{"cpu", 0.5}}}}}}}));
  EXPECT_EQ(Get(half).cpu_request_millis, 500);
}

TEST(EffectivePodResourcesTest, EphemeralContainersAreNotCounted) {
  json pod = Pod({C("a", "100m")});
  pod["spec"]["ephemeralContainers"] = json::array({C("debug", "4")});
  EXPECT_EQ(Get(pod).cpu_request_millis, 100);
}

TEST(EffectivePodResourcesTest, BadInputNamesTheField) {
  const std::pair<json, std::string> cases[] = {
      {json::array(), "pod: not an object"},
      {json::object(), "pod: has no spec"},
      {Pod({C("web", "lots")}), "containers \"web\".resources.requests.cpu"},
      {Pod({C("web", "-1")}), "negative quantity"},
      {json{{"spec", {{"containers", "x"}}}}, "spec.containers: not a list"},
      {json{{"spec", {{"containers", {1}}}}}, "spec.containers[0]: not an object"},
  };
  for (const auto& [pod, reason] : cases) {
    auto r = EffectivePodResources(pod);
    ASSERT_FALSE(r.ok()) << pod.dump();
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message.find(reason), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace powerctl::kube
