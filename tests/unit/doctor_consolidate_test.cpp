// doctor's drained-nodes check with telemetry: a drained node still drawing power is drift,
// read in one Prometheus query for all drained nodes, and only when telemetry.modelAccuracy is
// on.
#include "core/setup/doctor_consolidate.h"

#include "core/consolidate/node_marks.h"
#include "core/telemetry/metrics_api.h"
#include "tests/unit/calibrate_test_support.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

const auto kNow = *telemetry::ParseRfc3339("2026-11-27T12:00:00Z");

json Node(const std::string& name, const std::string& ip, const char* state,
          const std::string& since = "2026-11-27T10:00:00Z") {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels", {{consolidate::kPowerStateLabel, state}}},
            {"annotations",
             {{consolidate::kConsolidationAnnotation,
               json{{"state", state}, {"since", since}, {"expectedWattsSaved", 200}}.dump()}}}}},
          {"spec", {{"unschedulable", true}}},
          {"status", {{"addresses", {{{"type", "InternalIP"}, {"address", ip}}}}}}};
}

class DoctorDrainedNodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.Put(Node("on-still", "10.0.0.5", consolidate::kPowerStateDrained));
    api_.Put(Node("off", "10.0.0.6", consolidate::kPowerStateDrained));
    // Draining for 10 minutes: an apply is at work, no drift.
    api_.Put(Node("half", "10.0.0.7", consolidate::kPowerStateDraining, "2026-11-27T11:50:00Z"));
    client_ = api_.MakeClient();
    config_.telemetry.model_accuracy = true;
    config_.telemetry.power_source = "rapl";
    config_.telemetry.prometheus_url = "http://prom.test:9090";
  }

  // Prometheus answering the power query with `body`; the queries it saw are kept.
  telemetry_test::FakeHttp Prometheus(std::string body) {
    return telemetry_test::FakeHttp([this, body](const HttpClientRequest& r) {
      queries_.push_back(calibrate_test::Field(r, "query"));
      return Result<HttpClientResponse>(telemetry_test::Reply(200, body));
    });
  }

  kube::fake::FakeApiServer api_;
  std::unique_ptr<kube::Client> client_;
  config::PowerctlConfig config_;
  std::vector<std::string> queries_;
};

TEST_F(DoctorDrainedNodesTest, ADrainedNodeStillDrawingPowerIsDriftNamingItsWatts) {
  // off has no series (nothing left to scrape); half is draining, so it is not asked about.
  auto http = Prometheus(calibrate_test::Envelope(
      "vector", json::array({calibrate_test::VectorSample({{"instance", "10.0.0.5:9100"}}, 143),
                             calibrate_test::VectorSample({{"instance", "10.0.0.7:9100"}}, 300)})));
  CheckResult r = CheckDrainedNodes(*client_, kNow, config_, &http);
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_THAT(r.message, HasSubstr("2 drained"));
  EXPECT_THAT(r.message, HasSubstr("1 drifted: on-still: still draws 143 W 2 h after it was "
                                   "drained (measured; more than 20 W means on)"));
  EXPECT_THAT(r.message, Not(HasSubstr("off:")));
  EXPECT_THAT(r.message, Not(HasSubstr("half:")));
  EXPECT_EQ(queries_.size(), 1u);
}

TEST_F(DoctorDrainedNodesTest, WithoutModelAccuracyNoTelemetryIsRead) {
  config_.telemetry.model_accuracy = false;
  auto http = Prometheus(calibrate_test::Envelope(
      "vector", json::array({calibrate_test::VectorSample({{"instance", "10.0.0.5:9100"}}, 143)})));
  CheckResult r = CheckDrainedNodes(*client_, kNow, config_, &http);
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.message;
  EXPECT_TRUE(queries_.empty());
}

TEST_F(DoctorDrainedNodesTest, PrometheusFailingLeavesTheHeartbeatToJudgeAndSaysSo) {
  auto http = Prometheus(R"({"status":"error","errorType":"bad_data","error":"boom"})");
  CheckResult r = CheckDrainedNodes(*client_, kNow, config_, &http);
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.message;
  EXPECT_THAT(r.message, HasSubstr("measured power not read"));
  EXPECT_THAT(r.message, HasSubstr("boom"));
}

}  // namespace
}  // namespace powerctl::setup
