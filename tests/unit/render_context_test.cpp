#include "core/manifests/render_context.h"

#include "core/manifests/components.h"

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

TEST(RenderContextTest, ClientRateScalesWithClusterSize) {
  PowerctlConfig config;
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
  PowerctlConfig config;
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
  PowerctlConfig config;
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
  PowerctlConfig config;
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
