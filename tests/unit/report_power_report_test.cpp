#include "core/explain/score.h"
#include "core/predict/node_power_json.h"
#include "core/report/power_report.h"
#include "tests/unit/calibrate_test_support.h"
#include "tests/unit/fake_api_server.h"
#include "tests/unit/telemetry_test_support.h"

#include <gtest/gtest.h>

namespace powerctl::report {
namespace {

TEST(PowerReportTest, ExtenderPathGoesThroughTheServiceProxyToTheOpsPort) {
  config::PowerctlConfig config;
  config.namespace_ = "power";
  EXPECT_EQ(ExtenderPredictionsPath(config, {"a", "b.example"}, "500m"),
            "/api/v1/namespaces/power/services/http:powerctl-extender:ops/proxy/v1/"
            "predictions?cpu=500m&node=a"
            "&node=b.example");
}

TEST(PowerReportTest, SourceIsAutoLocalOrExtender) {
  EXPECT_EQ(*ParsePredictSource("auto"), PredictSource::kAuto);
  EXPECT_EQ(*ParsePredictSource("local"), PredictSource::kLocal);
  EXPECT_EQ(*ParsePredictSource("extender"), PredictSource::kExtender);
  auto bad = ParsePredictSource("remote");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(bad.error().message.find("auto, local or extender"), std::string::npos);
}

// A node whose usage metrics do not show a pod bound to it yet: metrics-server measures 2 of
// its 8 cores, and a 6-core pod was just bound (Pending, not started).
class UnmeasuredPodTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  void SetUp() override {
    server_.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "shop"}}}});
    server_.Put(
        {{"apiVersion", "v1"},
         {"kind", "Node"},
         {"metadata",
          {{"name", "n1"},
           {"annotations", {{"powerctl.io/idle-watts", "100"}, {"powerctl.io/max-watts", "300"}}}}},
         {"status",
          {{"capacity", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}},
           {"allocatable", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}}}}});
    server_.PutAt("/apis/metrics.k8s.io/v1beta1/nodes/n1",
                  {{"apiVersion", "metrics.k8s.io/v1beta1"},
                   {"kind", "NodeMetrics"},
                   {"metadata", {{"name", "n1"}}},
                   {"timestamp", telemetry_test::NowRfc3339()},
                   {"window", "20s"},
                   {"usage", {{"cpu", "2"}, {"memory", "1Gi"}}}});
    server_.Put(
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata", {{"name", "batch-1"}, {"namespace", "shop"}}},
         {"spec",
          {{"nodeName", "n1"},
           {"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "6"}}}}}}}}}},
         {"status", {{"phase", "Pending"}}}});
    config_.telemetry.cpu_source = "metrics-api";
    config_.telemetry.temperature_source = "prometheus";
    config_.telemetry.prometheus_url = "http://prometheus.test:9090";
    config_.scoring.objective = config::kObjectiveMarginal;
    deps_.kube = client_.get();
    deps_.http = &http_;
  }

  kube::fake::FakeApiServer server_;
  std::unique_ptr<kube::Client> client_ = server_.MakeClient();
  // Prometheus knows no temperatures: the built-in model takes them as nominal.
  telemetry_test::FakeHttp http_{[](const HttpClientRequest&) -> Result<HttpClientResponse> {
    return telemetry_test::Reply(
        200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  }};
  config::PowerctlConfig config_;
  PredictDependencies deps_;
};

TEST_F(UnmeasuredPodTest, PredictCountsTheCpuTheScoreCounts) {
  PredictRequest request;
  request.cpu = "2";
  request.source = PredictSource::kLocal;
  auto predicted = ReportPower(request, config_, deps_);
  ASSERT_TRUE(predicted.ok()) << predicted.error().message;
  ASSERT_EQ(predicted->nodes.size(), 1u);
  const predict::NodePower& p = predicted->nodes[0];
  ASSERT_TRUE(p.error.empty()) << p.error;
  // 2 measured + 6 requested: full, so 2 more cores overcommit it.
  ASSERT_TRUE(p.cpu_fraction_now);
  EXPECT_DOUBLE_EQ(*p.cpu_fraction_now, 1.0);
  EXPECT_TRUE(p.overcommitted);
  EXPECT_DOUBLE_EQ(*p.reading.cpu_cores_used.value, 2.0);
  EXPECT_DOUBLE_EQ(p.unmeasured.cores, 6.0);
  EXPECT_EQ(p.unmeasured.pods, 1);
  EXPECT_DOUBLE_EQ(*p.cpu_cores_used(), 8.0);
  json document = predict::NodePowerToJson(p, predicted->now);
  EXPECT_EQ(document["cpu"]["usedCores"], 8.0);
  EXPECT_EQ(document["cpu"]["unmeasuredRequestCores"], 6.0);
  EXPECT_EQ(document["cpu"]["unmeasuredPods"], 1);

  // The score of a 2-core pod, computed locally from the same cluster, sees the same node.
  explain::ScoreRequest score_request;
  score_request.cpu = "2";
  score_request.source = PredictSource::kLocal;
  explain::LocalScoringDeps score_deps;
  score_deps.kube = client_.get();
  score_deps.http = &http_;
  auto scored = explain::ScorePod(score_request, config_, score_deps);
  ASSERT_TRUE(scored.ok()) << scored.error().message;
  ASSERT_EQ(scored->nodes.size(), 1u);
  ASSERT_TRUE(scored->nodes[0].scored) << "n1 was not scored";
  const scoring::NodeDecision& s = *scored->nodes[0].scored;
  ASSERT_TRUE(s.watts_now && p.watts_now);
  EXPECT_DOUBLE_EQ(*s.watts_now, *p.watts_now);
  EXPECT_DOUBLE_EQ(*s.watts_after, *p.watts_after);
  ASSERT_NE(scored->nodes[0].Power(), nullptr);
  EXPECT_NE(scored->nodes[0].Power()->reason.find("overcommit"), std::string::npos)
      << scored->nodes[0].Power()->reason;
}

TEST_F(UnmeasuredPodTest, WithoutTheRightToListPodsPredictSaysWhatItLeftOut) {
  server_.FailRequests("/api/v1/pods", 403);
  PredictRequest request;
  request.source = PredictSource::kLocal;
  auto predicted = ReportPower(request, config_, deps_);
  ASSERT_TRUE(predicted.ok()) << predicted.error().message;
  EXPECT_DOUBLE_EQ(predicted->nodes[0].unmeasured.cores, 0.0);
  ASSERT_EQ(predicted->warnings.size(), 1u);
  EXPECT_NE(predicted->warnings[0].find("pods could not be listed"), std::string::npos);
}

TEST_F(UnmeasuredPodTest, WideAlsoReadsEachNodesMeasuredPower) {
  // Prometheus has n1's DCMI gauge (instance n1:9290) and no temperatures.
  telemetry_test::FakeHttp http{[](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    if (r.body.find("ipmi_dcmi_power_consumption_watts") != std::string::npos) {
      return telemetry_test::Reply(
          200, R"({"status":"success","data":{"resultType":"vector","result":[)"
               R"({"metric":{"instance":"n1:9290"},"value":[1700000000,"187.5"]}]}})");
    }
    return telemetry_test::Reply(
        200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  }};
  deps_.http = &http;
  PredictRequest request;
  request.source = PredictSource::kLocal;
  auto plain = ReportPower(request, config_, deps_);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(plain->measured_power);

  request.measure_power = true;
  auto measured = ReportPower(request, config_, deps_);
  ASSERT_TRUE(measured.ok()) << measured.error().message;
  ASSERT_TRUE(measured->measured_power);
  EXPECT_EQ(measured->measured_source, "ipmi");
  EXPECT_EQ(measured->measured_power->at("n1").watts, 187.5);
  bool asked = false;
  for (const HttpClientRequest& r : http.requests()) {
    asked = asked || calibrate_test::Field(r, "query") ==
                         "avg by (instance, node, kubernetes_node, nodename) "
                         "(avg_over_time(ipmi_dcmi_power_consumption_watts[300s]))";
  }
  EXPECT_TRUE(asked) << "the gauge averaged over telemetry.powerRateWindow (5m)";

  // Prometheus failing costs the measurement, not the prediction.
  config_.telemetry.power_source = "rapl";
  config_.telemetry.prometheus_url = "http://127.0.0.1:1";
  telemetry_test::FakeHttp down{[](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    if (r.body.find("node_rapl") != std::string::npos) {
      return MakeError(ErrorCode::kNetwork, "connection refused");
    }
    return telemetry_test::Reply(
        200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  }};
  deps_.http = &down;
  auto failed = ReportPower(request, config_, deps_);
  ASSERT_TRUE(failed.ok()) << failed.error().message;
  EXPECT_FALSE(failed->measured_power);
  ASSERT_FALSE(failed->warnings.empty());
  EXPECT_NE(failed->warnings.back().find("measured power: "), std::string::npos)
      << failed->warnings.back();
  EXPECT_EQ(failed->nodes.size(), 1u);
}

}  // namespace
}  // namespace powerctl::report
