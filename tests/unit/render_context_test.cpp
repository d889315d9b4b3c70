#include "core/manifests/render_context.h"

#include "core/common/yaml.h"
#include "core/manifests/components.h"
#include "core/manifests/generate.h"
#include "core/manifests/template.h"

#include <gtest/gtest.h>

namespace powerctl::manifests {
namespace {

KubeVersion V(int minor) {
  return KubeVersion{1, minor, -1};
}

TEST(RenderContextTest, SchedulerConfigApiVersions) {
  EXPECT_EQ(SchedulerConfigApiVersion(V(20)), "kubescheduler.config.k8s.io/v1beta1");
  EXPECT_EQ(SchedulerConfigApiVersion(V(21)), "kubescheduler.config.k8s.io/v1beta1");
  EXPECT_EQ(SchedulerConfigApiVersion(V(22)), "kubescheduler.config.k8s.io/v1beta2");
  EXPECT_EQ(SchedulerConfigApiVersion(V(23)), "kubescheduler.config.k8s.io/v1beta3");
  EXPECT_EQ(SchedulerConfigApiVersion(V(24)), "kubescheduler.config.k8s.io/v1beta3");
  EXPECT_EQ(SchedulerConfigApiVersion(V(25)), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(SchedulerConfigApiVersion(V(34)), "kubescheduler.config.k8s.io/v1");
}

// The scheduler configuration as kube-scheduler reads it: the embedded template rendered.
nlohmann::ordered_json SchedulerProfile(const std::string& resource_scoring, int minor) {
  config::PowerctlConfig config;
  config.scheduler.resource_scoring = resource_scoring;
  auto text = LoadTemplate("scheduler-config.yaml", std::nullopt);
  EXPECT_TRUE(text.ok());
  auto rendered = RenderTemplate("scheduler-config.yaml", *text,
                                 BuildRenderContext(config, RenderOptions{V(minor)}));
  EXPECT_TRUE(rendered.ok()) << rendered.error().message;
  auto docs = ParseYamlDocuments(*rendered, "scheduler-config.yaml");
  EXPECT_TRUE(docs.ok() && docs->size() == 1u);
  return (*docs)[0]["profiles"][0];
}

std::vector<std::string> Names(const nlohmann::ordered_json& list) {
  std::vector<std::string> out;
  for (const auto& item : list) out.push_back(item["name"].get<std::string>());
  return out;
}

using Strings = std::vector<std::string>;

TEST(RenderContextTest, DefaultResourceScoringIsSpread) {
  EXPECT_EQ(config::PowerctlConfig{}.scheduler.resource_scoring, config::kResourceScoringSpread);
}

TEST(RenderContextTest, PackUsesTheMostAllocatedPluginUpTo121) {
  for (int minor : {20, 21}) {
    auto profile = SchedulerProfile(config::kResourceScoringPack, minor);
    EXPECT_EQ(Names(profile["plugins"]["score"]["disabled"]),
              (Strings{"NodeResourcesLeastAllocated", "NodeResourcesBalancedAllocation"}));
    const auto& enabled = profile["plugins"]["score"]["enabled"];
    EXPECT_EQ(Names(enabled), (Strings{"NodeResourcesMostAllocated"}));
    EXPECT_EQ(enabled[0]["weight"], 1);
    EXPECT_FALSE(profile.contains("pluginConfig")) << minor;
  }
}

TEST(RenderContextTest, PackUsesNodeResourcesFitsStrategyFrom122) {
  for (int minor : {22, 23, 25, 27, 34}) {
    auto profile = SchedulerProfile(config::kResourceScoringPack, minor);
    EXPECT_EQ(Names(profile["plugins"]["score"]["disabled"]),
              (Strings{"NodeResourcesBalancedAllocation"}))
        << minor;
    EXPECT_FALSE(profile["plugins"]["score"].contains("enabled")) << minor;
    ASSERT_EQ(profile["pluginConfig"].size(), 1u) << minor;
    const auto& fit = profile["pluginConfig"][0];
    EXPECT_EQ(fit["name"], "NodeResourcesFit");
    EXPECT_EQ(fit["args"]["scoringStrategy"]["type"], "MostAllocated");
    EXPECT_EQ(Names(fit["args"]["scoringStrategy"]["resources"]), (Strings{"cpu", "memory"}));
  }
}

TEST(RenderContextTest, NoneDisablesBothResourceScores) {
  EXPECT_EQ(
      Names(SchedulerProfile(config::kResourceScoringNone, 21)["plugins"]["score"]["disabled"]),
      (Strings{"NodeResourcesLeastAllocated", "NodeResourcesBalancedAllocation"}));
  for (int minor : {22, 30}) {
    auto profile = SchedulerProfile(config::kResourceScoringNone, minor);
    EXPECT_EQ(Names(profile["plugins"]["score"]["disabled"]),
              (Strings{"NodeResourcesFit", "NodeResourcesBalancedAllocation"}));
    EXPECT_FALSE(profile.contains("pluginConfig"));
  }
}

TEST(RenderContextTest, SpreadKeepsKubeSchedulersDefaults) {
  for (int minor : {20, 22, 34}) {
    auto profile = SchedulerProfile(config::kResourceScoringSpread, minor);
    EXPECT_FALSE(profile.contains("plugins")) << minor;
    EXPECT_FALSE(profile.contains("pluginConfig")) << minor;
    EXPECT_EQ(profile["schedulerName"], "powerctl-scheduler");
  }
}

TEST(RenderContextTest, ClientRateScalesWithClusterSize) {
  config::PowerctlConfig config;
  RenderOptions options{V(30)};
  EXPECT_EQ(BuildRenderContext(config, options)["scheduler"]["qps"], 50);
  config.scheduler.expected_nodes = 2000;
  auto ctx = BuildRenderContext(config, options);
  EXPECT_EQ(ctx["scheduler"]["qps"], 200);
  EXPECT_EQ(ctx["scheduler"]["burst"], 400);
  config.scheduler.client_qps = 75;
  EXPECT_EQ(BuildRenderContext(config, options)["scheduler"]["qps"], 75);
}

TEST(RenderContextTest, UrlAndTlsFollowMode) {
  config::PowerctlConfig config;
  config.namespace_ = "energy";
  RenderOptions options{V(20)};
  auto ctx = BuildRenderContext(config, options);
  EXPECT_EQ(ctx["extender"]["urlPrefix"], "https://powerctl-extender.energy.svc:8443/scheduler");
  EXPECT_EQ(ctx["extender"]["tls"]["mutual"], true);
  EXPECT_EQ(ctx["extender"]["tls"]["serverName"], false);
  config.extender.tls_mode = "insecure";
  ctx = BuildRenderContext(config, options);
  EXPECT_EQ(ctx["extender"]["urlPrefix"], "http://powerctl-extender.energy.svc:8443/scheduler");
  EXPECT_EQ(ctx["extender"]["tls"]["enabled"], false);
}

TEST(RenderContextTest, CertificateCoversServiceNames) {
  config::PowerctlConfig config;
  config.namespace_ = "energy";
  CertificateRequest request = ExtenderCertificateRequest(config);
  for (const char* name :
       {"powerctl-extender.energy.svc", "powerctl-extender.energy.svc.cluster.local",
        "powerctl-extender.energy", "powerctl-extender"}) {
    EXPECT_NE(std::find(request.server_dns_names.begin(), request.server_dns_names.end(), name),
              request.server_dns_names.end())
        << name;
  }
}

TEST(ComponentsTest, AllExpandsInDependencyOrder) {
  config::PowerctlConfig config;
  auto all = ResolveComponents({"all"}, config);
  ASSERT_TRUE(all.ok());
  std::vector<std::string_view> names;
  for (Component c : *all) names.push_back(ComponentName(c));
  EXPECT_EQ(names, (std::vector<std::string_view>{"namespace", "rbac", "secrets", "policies",
                                                  "extender", "scheduler"}));
  config.predictor.backend = "tfserving-rest";
  EXPECT_EQ(ResolveComponents({}, config)->size(), 7u);
  auto picked = ResolveComponents({"scheduler", "namespace", "scheduler"}, config);
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(*picked, (std::vector<Component>{Component::kNamespace, Component::kScheduler}));
  EXPECT_FALSE(ResolveComponents({"nope"}, config).ok());
}

}  // namespace
}  // namespace powerctl::manifests
