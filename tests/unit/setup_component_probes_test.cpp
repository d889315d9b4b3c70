#include "core/setup/component_probes.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace powerctl::setup {
namespace {

using telemetry_test::FakeHttp;
using telemetry_test::Reply;
using ::testing::HasSubstr;

// What `powerctl generate scheduler --out-of-cluster` writes for Kubernetes 1.20.
constexpr char kSchedulerConfig[] = R"(apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
healthzBindAddress: 127.0.0.1:10251
metricsBindAddress: 127.0.0.1:10251
percentageOfNodesToScore: 100
clientConnection:
  kubeconfig: sched.kubeconfig
leaderElection:
  leaderElect: true
  resourceLock: leases
  resourceNamespace: ooc
  resourceName: ooc-scheduler
profiles:
- schedulerName: ooc-scheduler
extenders:
- urlPrefix: https://127.0.0.1:8443/scheduler
  filterVerb: filter
  enableHTTPS: true
)";

TEST(ProcessTargetsTest, TheGeneratedSchedulerConfigurationSaysWhereEverythingIs) {
  config::PowerctlConfig config;
  config.extender.ops_port = 9090;
  auto targets =
      ProcessTargetsFromSchedulerConfig(kSchedulerConfig, "out/scheduler-config.yaml", config);
  ASSERT_TRUE(targets.ok()) << targets.error().message;
  EXPECT_EQ(targets->extender_ops_url, "http://127.0.0.1:9090");
  EXPECT_EQ(targets->scheduler_healthz_url, "http://127.0.0.1:10251/healthz");
  EXPECT_EQ(targets->lease_namespace, "ooc");
  EXPECT_EQ(targets->lease_name, "ooc-scheduler");
  EXPECT_EQ(targets->scheduler_config, "out/scheduler-config.yaml");
  EXPECT_TRUE(targets->any());
}

TEST(ProcessTargetsTest, AnExtenderOnEveryInterfaceIsReachedOnLoopbackAndIPv6KeepsBrackets) {
  std::string text = kSchedulerConfig;
  text.replace(text.find("https://127.0.0.1:8443"), 22, "https://[::1]:8443");
  text.replace(text.find("healthzBindAddress: 127.0.0.1"), 29, "healthzBindAddress: 0.0.0.0");
  auto targets = ProcessTargetsFromSchedulerConfig(text, "f", config::PowerctlConfig{});
  ASSERT_TRUE(targets.ok()) << targets.error().message;
  EXPECT_EQ(targets->extender_ops_url, "http://[::1]:8080");
  EXPECT_EQ(targets->scheduler_healthz_url, "http://127.0.0.1:10251/healthz");
}

TEST(ProcessTargetsTest, LaterVersionsHaveNoPlainHealthEndpoint) {
  std::string text = kSchedulerConfig;
  text.erase(text.find("healthzBindAddress"),
             text.find("percentageOfNodesToScore") - text.find("healthzBindAddress"));
  auto targets = ProcessTargetsFromSchedulerConfig(text, "f", config::PowerctlConfig{});
  ASSERT_TRUE(targets.ok()) << targets.error().message;
  EXPECT_EQ(targets->scheduler_healthz_url, "");
}

TEST(ProcessTargetsTest, OtherFilesAreRefusedNamingThem) {
  auto manifest = ProcessTargetsFromSchedulerConfig("kind: Deployment\n", "setup.yaml",
                                                    config::PowerctlConfig{});
  ASSERT_FALSE(manifest.ok());
  EXPECT_EQ(manifest.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(manifest.error().message, HasSubstr("setup.yaml: not a KubeSchedulerConfiguration"));
  auto no_extender = ProcessTargetsFromSchedulerConfig("kind: KubeSchedulerConfiguration\n", "f",
                                                       config::PowerctlConfig{});
  ASSERT_FALSE(no_extender.ok());
  EXPECT_THAT(no_extender.error().message, HasSubstr("no extender"));
}

TEST(NormalizeOpsUrlTest, AcceptsThePlainOpsPortOnly) {
  EXPECT_EQ(*NormalizeOpsUrl("http://127.0.0.1:8080/"), "http://127.0.0.1:8080");
  // The scheduler's TLS port and a verb path are not the ops port.
  EXPECT_FALSE(NormalizeOpsUrl("https://127.0.0.1:8443").ok());
  EXPECT_FALSE(NormalizeOpsUrl("http://127.0.0.1:8080/readyz").ok());
  EXPECT_FALSE(NormalizeOpsUrl("127.0.0.1:8080").ok());
}

TEST(ProbeExtenderTest, ReadsReadinessAndTelemetryAges) {
  std::map<std::string, HttpClientResponse> answers = {
      {"http://e:8080/healthz", Reply(200, "ok\n")},
      {"http://e:8080/readyz",
       Reply(200,
             R"({"degraded":[{"name":"telemetry/temperature","reason":"down"}],"ready":true})")},
      {"http://e:8080/metrics",
       Reply(200,
             "# TYPE powerctl_telemetry_refresh_failing gauge\n"
             "powerctl_telemetry_refresh_failing{source=\"cpu\"} 0\n"
             "powerctl_telemetry_refresh_failing{source=\"temperature\"} 1\n"
             "powerctl_telemetry_snapshot_age_seconds{source=\"cpu\"} 2.5\n")}};
  FakeHttp http([&answers](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    return answers.at(r.url);
  });
  ExtenderProbe probe = ProbeExtender(http, "http://e:8080");
  EXPECT_TRUE(probe.reachable);
  EXPECT_TRUE(probe.live);
  EXPECT_TRUE(probe.ready);
  ASSERT_EQ(probe.degraded.size(), 1u);
  EXPECT_EQ(probe.degraded[0].name, "telemetry/temperature");
  ASSERT_EQ(probe.telemetry.size(), 2u);
  EXPECT_EQ(probe.telemetry[0].source, "cpu");
  EXPECT_EQ(probe.telemetry[0].age_seconds, 2.5);
  EXPECT_FALSE(probe.telemetry[0].failing);
  EXPECT_EQ(probe.telemetry[1].source, "temperature");
  EXPECT_FALSE(probe.telemetry[1].age_seconds.has_value());  // no snapshot yet
  EXPECT_TRUE(probe.telemetry[1].failing);
  for (const HttpClientRequest& r : http.requests()) EXPECT_LE(r.timeout.count(), 5000) << r.url;
}

TEST(ProbeExtenderTest, NothingListeningIsUnreachableWithTheError) {
  FakeHttp http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    return MakeError(ErrorCode::kNetwork, "cannot connect to " + r.url);
  });
  ExtenderProbe probe = ProbeExtender(http, "http://e:8080");
  EXPECT_FALSE(probe.reachable);
  EXPECT_FALSE(probe.ready);
  EXPECT_EQ(probe.error, "cannot connect to http://e:8080/healthz");
  EXPECT_EQ(http.requests().size(), 1u);
}

}  // namespace
}  // namespace powerctl::setup
