// `powerctl calibrate`: fits from a scripted Prometheus, annotations on an in-memory API server.
#include "core/setup/calibrate_nodes.h"

#include "core/common/decimal.h"
#include "core/predict/builtin_model.h"
#include "tests/unit/calibrate_test_support.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;
using calibrate_test::FakePrometheus;
using calibrate_test::Field;
using calibrate_test::MatrixSeries;
using kube::fake::FakeApiServer;
using kube::fake::NodeObject;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr double kEnd = 1700000000;

// A node's utilisation and power series: `n` points 5 minutes apart, utilisation sweeping
// `lo`..`hi`, watts from the model.
std::pair<json, json> NodeSeries(const std::string& node, int n, double lo, double hi, double idle,
                                 double max, double curve) {
  std::vector<std::pair<double, double>> u, w;
  for (int i = 0; i < n; ++i) {
    double t = kEnd - 300.0 * (n - 1 - i);
    double util = lo + (hi - lo) * ((i * 7) % n) / (n - 1);
    u.emplace_back(t, util);
    w.emplace_back(t, idle + (max - idle) * std::pow(util, curve));
  }
  return {MatrixSeries({{"instance", node + ":9100"}}, u),
          MatrixSeries({{"instance", node + ":9290"}}, w)};
}

class CalibrateNodesTest : public ::testing::Test {
 protected:
  CalibrateNodesTest() : client_(server_.MakeClient()) {
    server_.Put(NodeObject("n1"));
    json n2 = NodeObject("n2");
    n2["metadata"]["annotations"] = {{"powerctl.io/idle-watts", "90"},
                                     {"powerctl.io/temperature-factor", "0.2"}};
    server_.Put(n2);
    server_.Put(NodeObject("n3"));
    auto [u1, w1] = NodeSeries("n1", 200, 0.05, 0.95, 110, 380, 0.9);
    auto [u2, w2] = NodeSeries("n2", 200, 0.1, 0.8, 95, 300, 1.3);
    auto [u3, w3] = NodeSeries("n3", 200, 0.30, 0.35, 100, 200, 1);  // never busy, never idle
    prom_.Matrix("node_cpu_seconds_total", {u1, u2, u3});
    prom_.Matrix("ipmi_dcmi_power_consumption_watts", {w1, w2, w3});
    request_.end = telemetry::WallTimeFromSeconds(kEnd);
  }

  json Annotations(const std::string& node) const {
    return server_.Object("/api/v1/nodes/" + node)["metadata"].value("annotations", json::object());
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  FakePrometheus prom_;
  CalibrateRequest request_;
};

TEST_F(CalibrateNodesTest, FitsAndWritesEachNodesParameters) {
  request_.nodes = {"n1", "n2"};
  auto report = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_THAT(report->not_written, IsEmpty());
  ASSERT_EQ(report->nodes.size(), 2u);
  const NodeCalibration& n1 = report->nodes[0];
  EXPECT_THAT(n1.fit.refused, IsEmpty());
  EXPECT_NEAR(n1.fit.params.idle_watts, 110, 1e-6);
  EXPECT_NEAR(n1.fit.params.max_watts, 380, 1e-6);
  EXPECT_NEAR(n1.fit.params.curve, 0.9, 1e-9);
  EXPECT_EQ(n1.fit.samples, 200u);
  EXPECT_TRUE(n1.changed);

  json a1 = Annotations("n1");
  EXPECT_EQ(a1["powerctl.io/idle-watts"], "110");
  EXPECT_EQ(a1["powerctl.io/max-watts"], "380");
  EXPECT_EQ(a1["powerctl.io/curve"], "0.9");
  json a2 = Annotations("n2");
  EXPECT_EQ(a2["powerctl.io/idle-watts"], "95");  // replaced: calibrate measures
  EXPECT_EQ(a2["powerctl.io/curve"], "1.3");
  EXPECT_EQ(a2["powerctl.io/temperature-factor"], "0.2");  // not fitted, left alone
  EXPECT_EQ(server_.MutatingRequests().size(), 2u);

  // The default form writes the measured curve beside them. n1 swept 5..95 %: its ends were
  // never measured and come from the exponent fit, its inside from the samples.
  EXPECT_EQ(n1.form, CalibrationForm::kCurve);
  EXPECT_THAT(n1.refused, IsEmpty());
  EXPECT_EQ(n1.curve.filled_from, "exponent fit");
  EXPECT_FALSE(n1.curve.bins[0].measured);
  EXPECT_FALSE(n1.curve.bins[10].measured);
  for (std::size_t k = 1; k <= 9; ++k) EXPECT_TRUE(n1.curve.bins[k].measured) << k;
  EXPECT_DOUBLE_EQ(n1.curve.points[0], 110);
  EXPECT_DOUBLE_EQ(n1.curve.points[10], 380);
  EXPECT_EQ(a1["powerctl.io/power-curve"], predict::FormatPowerCurve(n1.curve.points));
  EXPECT_EQ(n1.annotations.at("powerctl.io/power-curve"), a1["powerctl.io/power-curve"]);
}

TEST_F(CalibrateNodesTest, BothSeriesAreAveragedOverTheStepAcrossTheWindow) {
  request_.nodes = {"n1"};
  request_.window = std::chrono::hours(48);
  request_.step = std::chrono::minutes(10);
  ASSERT_TRUE(CalibrateNodes(*client_, prom_.client(), request_).ok());
  std::vector<HttpClientRequest> requests = prom_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_THAT(requests[0].url, HasSubstr("/api/v1/query_range"));
  EXPECT_EQ(Field(requests[0], "query"),
            "1 - avg by (instance, node, kubernetes_node, nodename) "
            "(rate(node_cpu_seconds_total{mode=\"idle\"}[600s]))");
  EXPECT_EQ(Field(requests[1], "query"),
            "avg by (instance, node, kubernetes_node, nodename) "
            "(avg_over_time(ipmi_dcmi_power_consumption_watts[600s]))");
  EXPECT_EQ(Field(requests[0], "start"), "1699827200.000");
  EXPECT_EQ(Field(requests[0], "end"), "1700000000.000");
  EXPECT_EQ(Field(requests[0], "step"), "600.000");
}

TEST_F(CalibrateNodesTest, ANodeThatCannotBeCalibratedStopsAllWrites) {
  request_.all = true;
  auto report = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_THAT(report->nodes[2].refused, HasSubstr("CPU utilisation only ranged 0.30..0.35"));
  EXPECT_THAT(report->not_written, HasSubstr("node/n3: CPU utilisation only ranged"));
  EXPECT_THAT(report->not_written, HasSubstr("no node was changed (--skip-unfit"));
  EXPECT_FALSE(report->nodes[0].changed);
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(CalibrateNodesTest, SkipUnfitWritesTheOthers) {
  request_.all = true;
  request_.skip_unfit = true;
  auto report = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->not_written, IsEmpty());
  EXPECT_EQ(Annotations("n1")["powerctl.io/max-watts"], "380");
  EXPECT_FALSE(Annotations("n3").contains("powerctl.io/max-watts"));
  EXPECT_EQ(server_.MutatingRequests().size(), 2u);
}

TEST_F(CalibrateNodesTest, ANodeWithoutSeriesSaysWhichAreMissing) {
  server_.Put(NodeObject("n4"));
  request_.nodes = {"n4"};
  auto report = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->nodes[0].refused, "no power or CPU history in Prometheus for this node");
}

TEST_F(CalibrateNodesTest, ACounterSourceIsRatedOverTheStepAndMappedByItsNodeLabel) {
  // Kepler's series name their node in node_name; their instance is Kepler's pod.
  FakePrometheus prom;
  auto [u1, w1] = NodeSeries("n1", 200, 0.05, 0.95, 60, 210, 1.2);
  prom.Matrix("node_cpu_seconds_total", {u1});
  w1["metric"] = {{"instance", "10.244.3.9:28282"}, {"node_name", "n1"}, {"job", "kepler"}};
  prom.Matrix("kepler_node_cpu_joules_total", {w1});
  request_.nodes = {"n1"};
  request_.power.source = telemetry::PowerSource::kKepler;
  auto report = CalibrateNodes(*client_, prom.client(), request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_THAT(prom.queries()[1], HasSubstr("rate(kepler_node_cpu_joules_total"));
  EXPECT_THAT(prom.queries()[1], HasSubstr("[300s]"));
  EXPECT_EQ(report->power_source, telemetry::PowerSource::kKepler);
  EXPECT_FALSE(report->whole_server);
  const NodeCalibration& n1 = report->nodes[0];
  EXPECT_THAT(n1.refused, IsEmpty());
  EXPECT_NEAR(n1.fit.params.idle_watts, 60, 1e-6);
  EXPECT_NEAR(n1.fit.params.max_watts, 210, 1e-6);
  // 5..95 % swept: 90 % of the load range, every step but 0 % and 100 % measured.
  EXPECT_NEAR(n1.load_range_covered, 0.9, 1e-9);
  EXPECT_EQ(n1.measured_steps, 9);

  // A node without that source's series says which source it lacks.
  server_.Put(NodeObject("n4"));
  request_.nodes = {"n4"};
  FakePrometheus cpu_only;
  cpu_only.Matrix("node_cpu_seconds_total", {NodeSeries("n4", 200, 0, 1, 1, 2, 1).first});
  auto silent = CalibrateNodes(*client_, cpu_only.client(), request_);
  ASSERT_TRUE(silent.ok());
  EXPECT_EQ(silent->nodes[0].refused, "no kepler power history in Prometheus for this node");
}

TEST_F(CalibrateNodesTest, DryRunModes) {
  request_.nodes = {"n1"};
  request_.dry_run = DryRunMode::kClient;
  auto client_run = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(client_run.ok());
  EXPECT_TRUE(client_run->nodes[0].changed);
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());

  request_.dry_run = DryRunMode::kServer;
  ASSERT_TRUE(CalibrateNodes(*client_, prom_.client(), request_).ok());
  ASSERT_EQ(server_.MutatingRequests().size(), 1u);
  EXPECT_TRUE(server_.MutatingRequests()[0].dry_run());
  EXPECT_FALSE(Annotations("n1").contains("powerctl.io/idle-watts"));
}

TEST_F(CalibrateNodesTest, UnchangedNodesAreNotPatchedAndPermissionIsCheckedFirst) {
  request_.nodes = {"n1"};
  ASSERT_TRUE(CalibrateNodes(*client_, prom_.client(), request_).ok());
  auto again = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->nodes[0].changed);
  EXPECT_EQ(server_.MutatingRequests().size(), 1u);

  server_.Deny("patch", "nodes");
  request_.nodes = {"n2"};
  auto denied = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, ErrorCode::kForbidden);
  EXPECT_EQ(server_.MutatingRequests().size(), 1u);
}

// A node following a curve no exponent can: steep to 10 %, flat, a jump at the top.
constexpr predict::PowerCurve kSteep = {50, 120, 140, 160, 180, 200, 220, 240, 270, 320, 420};

// `n` points 5 minutes apart whose utilisation cycles through the 10 % steps, watts on kSteep.
std::pair<json, json> CurveSeries(const std::string& node, int n) {
  std::vector<std::pair<double, double>> u, w;
  for (int i = 0; i < n; ++i) {
    double t = kEnd - 300.0 * (n - 1 - i);
    int k = (i * 7) % 11;
    u.emplace_back(t, k / 10.0);
    w.emplace_back(t, kSteep[k]);
  }
  return {MatrixSeries({{"instance", node + ":9100"}}, u),
          MatrixSeries({{"instance", node + ":9290"}}, w)};
}

class CalibrateFormsTest : public ::testing::Test {
 protected:
  CalibrateFormsTest() : client_(server_.MakeClient()) {
    server_.Put(NodeObject("c1"));
    auto [u, w] = CurveSeries("c1", 220);
    prom_.Matrix("node_cpu_seconds_total", {u});
    prom_.Matrix("ipmi_dcmi_power_consumption_watts", {w});
    request_.end = telemetry::WallTimeFromSeconds(kEnd);
    request_.nodes = {"c1"};
  }

  json Annotations() const {
    return server_.Object("/api/v1/nodes/c1")["metadata"].value("annotations", json::object());
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  FakePrometheus prom_;
  CalibrateRequest request_;
};

TEST_F(CalibrateFormsTest, TheCurveFormWritesTheCurveAndTheExponentFitBesideIt) {
  auto report = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_THAT(report->not_written, IsEmpty());
  const NodeCalibration& c = report->nodes[0];
  EXPECT_EQ(c.curve.points, kSteep);
  EXPECT_THAT(c.curve.filled_from, IsEmpty());
  EXPECT_TRUE(c.removed.empty());
  json a = Annotations();
  EXPECT_EQ(a["powerctl.io/power-curve"], "50,120,140,160,180,200,220,240,270,320,420");
  // The exponent form's annotations, for tools that read only those: the exponent fit's.
  EXPECT_EQ(a["powerctl.io/idle-watts"], FormatDecimal(c.fit.params.idle_watts, 1));
  EXPECT_EQ(a["powerctl.io/max-watts"], FormatDecimal(c.fit.params.max_watts, 1));
  EXPECT_EQ(a["powerctl.io/curve"], FormatDecimal(c.fit.params.curve, 2));
  EXPECT_EQ(c.annotations.size(), 4u);

  // Again: nothing differs, nothing is patched.
  auto again = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->nodes[0].changed);
  EXPECT_EQ(server_.MutatingRequests().size(), 1u);
}

TEST_F(CalibrateFormsTest, TheExponentFormRemovesAStaleCurve) {
  ASSERT_TRUE(CalibrateNodes(*client_, prom_.client(), request_).ok());
  ASSERT_TRUE(Annotations().contains("powerctl.io/power-curve"));

  request_.form = CalibrationForm::kExponent;
  request_.dry_run = DryRunMode::kClient;  // shows the removal, changes nothing
  auto dry = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(dry.ok());
  EXPECT_TRUE(dry->nodes[0].changed);  // the exponent annotations are the same: only the removal
  EXPECT_EQ(dry->nodes[0].removed, std::vector<std::string>{"powerctl.io/power-curve"});
  EXPECT_TRUE(Annotations().contains("powerctl.io/power-curve"));
  EXPECT_EQ(server_.MutatingRequests().size(), 1u);

  request_.dry_run = DryRunMode::kNone;
  auto report = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->nodes[0].form, CalibrationForm::kExponent);
  EXPECT_FALSE(report->nodes[0].curve.fitted);
  EXPECT_FALSE(Annotations().contains("powerctl.io/power-curve"));
  EXPECT_TRUE(Annotations().contains("powerctl.io/idle-watts"));
  ASSERT_EQ(server_.MutatingRequests().size(), 2u);
  json patch = json::parse(server_.MutatingRequests()[1].body);
  EXPECT_TRUE(patch["metadata"]["annotations"]["powerctl.io/power-curve"].is_null());

  // Without a curve to remove, the same fit is unchanged.
  auto again = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->nodes[0].changed);
  EXPECT_TRUE(again->nodes[0].removed.empty());
  EXPECT_EQ(server_.MutatingRequests().size(), 2u);
}

TEST_F(CalibrateFormsTest, ARefusedCurveWritesNothingEvenWhenTheExponentFits) {
  // Every load step needs 30 samples: with 20 each, the curve has no measured step; the
  // exponent fit is good, but the curve form was asked for.
  request_.fit.min_bin_samples = 30;
  auto report = CalibrateNodes(*client_, prom_.client(), request_);
  ASSERT_TRUE(report.ok());
  const NodeCalibration& c = report->nodes[0];
  EXPECT_THAT(c.fit.refused, IsEmpty());
  EXPECT_THAT(c.refused, HasSubstr("only 0 of the 11 load steps"));
  EXPECT_THAT(report->not_written, HasSubstr("node/c1: only 0 of the 11 load steps"));
  EXPECT_TRUE(c.annotations.empty());
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(CalibrateFormsTest, MeasuredPowerCurvesAreTheFittedCurvesWrittenNowhere) {
  server_.Put(NodeObject("no-history"));
  auto curves = MeasuredPowerCurves(*client_, prom_.client(), request_.power);
  ASSERT_TRUE(curves.ok()) << curves.error().message;
  ASSERT_EQ(curves->size(), 1u);  // the node without history is left out
  EXPECT_EQ(curves->at("c1"), std::vector<double>(kSteep.begin(), kSteep.end()));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST(ParseCalibrationFormTest, AcceptsTheTwoFormsOnly) {
  EXPECT_EQ(*ParseCalibrationForm("curve"), CalibrationForm::kCurve);
  EXPECT_EQ(*ParseCalibrationForm("exponent"), CalibrationForm::kExponent);
  auto bad = ParseCalibrationForm("spline");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(bad.error().message, "--form \"spline\": must be curve or exponent");
  EXPECT_EQ(CalibrationFormName(CalibrationForm::kExponent), "exponent");
}

TEST(ValidateCalibrateRequestTest, RefusesBadFlagsWithoutContactingAnything) {
  CalibrateRequest r;
  EXPECT_THAT(ValidateCalibrateRequest(r).error().message, HasSubstr("exactly one of them"));
  r.all = true;
  EXPECT_TRUE(ValidateCalibrateRequest(r).ok());
  r.step = std::chrono::seconds(30);  // 7d / 30s = 20160 points
  EXPECT_THAT(ValidateCalibrateRequest(r).error().message,
              HasSubstr("20160 points per node; Prometheus answers at most 11000"));
  r.step = std::chrono::hours(200);
  EXPECT_THAT(ValidateCalibrateRequest(r).error().message, HasSubstr("longer than --step"));
  r.step = std::chrono::minutes(5);
  r.fit.min_r2 = 1.5;
  EXPECT_EQ(ValidateCalibrateRequest(r).error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(ValidateCalibrateRequest(r).error().message, Not(HasSubstr("step")));
  r.fit.min_r2 = 0.8;
  r.fit.min_bin_samples = 0;
  EXPECT_EQ(ValidateCalibrateRequest(r).error().message, "--min-bin-samples: must be at least 1");
}

}  // namespace
}  // namespace powerctl::setup
