// `powerctl calibrate`: fits from a scripted Prometheus, annotations on an in-memory API server.
#include "core/setup/calibrate_nodes.h"

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
  EXPECT_THAT(report->nodes[2].fit.refused, HasSubstr("CPU utilisation only ranged 0.30..0.35"));
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
  EXPECT_EQ(report->nodes[0].fit.refused, "no power or CPU history in Prometheus for this node");
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
}

}  // namespace
}  // namespace powerctl::setup
