// `label nodes --from-prometheus`: ranges derived from a scripted Prometheus, written to an
// in-memory API server.
#include "core/setup/label_nodes.h"
#include "tests/unit/calibrate_test_support.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;
using calibrate_test::FakePrometheus;
using calibrate_test::VectorSample;
using kube::fake::FakeApiServer;
using kube::fake::NodeObject;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

json Series(const std::string& node, const std::string& name, double value) {
  return VectorSample({{"instance", node + ":9290"}, {"name", name}}, value);
}

class LabelNodesFromPrometheusTest : public ::testing::Test {
 protected:
  LabelNodesFromPrometheusTest() : client_(server_.MakeClient()) {
    server_.Put(NodeObject("n1"));
    server_.Put(NodeObject("n2", {{"ambient/min", "15"}, {"ambient/max", "30"}}));
    server_.Put(NodeObject("n3"));
    // n1 and n2 have all three sensors; n3 has no CPU2 history.
    json mins = json::array(), maxs = json::array(), counts = json::array();
    for (const char* node : {"n1", "n2", "n3"}) {
      mins.push_back(Series(node, "Ambient", 18.4));
      maxs.push_back(Series(node, "Ambient", 34.2));
      counts.push_back(Series(node, "Ambient", 2016));
      mins.push_back(Series(node, "CPU1", 30));
      maxs.push_back(Series(node, "CPU1", 88.5));
      counts.push_back(Series(node, "CPU1", 2016));
      if (std::string(node) == "n3") continue;
      mins.push_back(Series(node, "CPU2 Temp", 29.9));
      maxs.push_back(Series(node, "CPU2 Temp", 81.1));
      counts.push_back(Series(node, "CPU2 Temp", 2010));
    }
    prom_.Vector("min_over_time", mins);
    prom_.Vector("max_over_time", maxs);
    prom_.Vector("count_over_time", counts);
  }

  json Labels(const std::string& node) const {
    return server_.Object("/api/v1/nodes/" + node)["metadata"]["labels"];
  }

  LabelNodesRequest Request(std::vector<std::string> nodes) const {
    LabelNodesRequest request;
    request.nodes = std::move(nodes);
    request.from_prometheus = true;
    return request;
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  FakePrometheus prom_;
};

TEST_F(LabelNodesFromPrometheusTest, EachNodeGetsTheWholeDegreesAroundItsHistory) {
  auto results = LabelNodes(*client_, Request({"n1"}), &prom_.client());
  ASSERT_TRUE(results.ok()) << results.error().message;

  json labels = Labels("n1");
  EXPECT_EQ(labels["ambient/min"], "18");
  EXPECT_EQ(labels["ambient/max"], "35");
  EXPECT_EQ(labels["cpu1/min"], "30");
  EXPECT_EQ(labels["cpu1/max"], "89");
  EXPECT_EQ(labels["cpu2/min"], "29");
  EXPECT_EQ(labels["cpu2/max"], "82");
  ASSERT_EQ(results->size(), 1u);
  const auto& derived = (*results)[0].derived;
  ASSERT_EQ(derived.size(), 3u);
  EXPECT_EQ(derived[2].role, "cpu2");
  EXPECT_EQ(derived[2].sensor, "CPU2 Temp");
  EXPECT_EQ(derived[2].samples, 2010);
  EXPECT_EQ(derived[2].observed_min, 29.9);
  EXPECT_EQ(derived[2].range, "29:82");
}

TEST_F(LabelNodesFromPrometheusTest, ANodeWithoutHistoryFailsTheCommandBeforeAnyPatch) {
  auto results = LabelNodes(*client_, Request({"n1", "n3"}), &prom_.client());
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(results.error().message,
              HasSubstr("no usable temperature history in Prometheus at http://prom.test:9090 "
                        "over the last 7d for node/n3: no cpu2 history (sensor name CPU2 or CPU2 "
                        "Temp); no node was changed (--skip-missing labels the other nodes)"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(LabelNodesFromPrometheusTest, SkipMissingLabelsTheOthers) {
  LabelNodesRequest request = Request({"n1", "n3"});
  request.skip_missing = true;
  auto results = LabelNodes(*client_, request, &prom_.client());
  ASSERT_TRUE(results.ok()) << results.error().message;
  ASSERT_EQ(results->size(), 2u);
  EXPECT_TRUE((*results)[0].changed);
  EXPECT_FALSE((*results)[1].changed);
  EXPECT_THAT((*results)[1].skipped, HasSubstr("no cpu2 history"));
  EXPECT_EQ(Labels("n1")["cpu2/max"], "82");
  EXPECT_FALSE(Labels("n3").contains("ambient/min"));
  ASSERT_EQ(server_.MutatingRequests().size(), 1u);
}

TEST_F(LabelNodesFromPrometheusTest, DerivedRangesNeedOverwriteLikeGivenOnes) {
  auto results = LabelNodes(*client_, Request({"n2"}), &prom_.client());
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.error().code, ErrorCode::kConflict);
  EXPECT_THAT(results.error().message, HasSubstr("node/n2: ambient/max is 30 (want 35)"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(LabelNodesFromPrometheusTest, TheWindowAndSensorNamesGoIntoTheQueries) {
  LabelNodesRequest request = Request({"n1"});
  request.window = std::chrono::hours(24);
  request.sensors.ambient = {"Inlet"};
  ASSERT_FALSE(LabelNodes(*client_, request, &prom_.client()).ok());  // n1 has no "Inlet"
  ASSERT_FALSE(prom_.queries().empty());
  EXPECT_THAT(prom_.queries()[0],
              HasSubstr("{name=~\"Inlet|CPU1|CPU1 Temp|CPU2|CPU2 Temp\"}[86400s]"));
}

TEST_F(LabelNodesFromPrometheusTest, APrometheusFailureChangesNothing) {
  FakePrometheus failing;
  failing.Fail("min_over_time");
  auto results = LabelNodes(*client_, Request({"n1"}), &failing.client());
  ASSERT_FALSE(results.ok());
  EXPECT_THAT(results.error().message, HasSubstr("boom"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(LabelNodesFromPrometheusTest, ModelLabelsCanComeAlong) {
  LabelNodesRequest request = Request({"n1"});
  request.model_host = "tfs.power.svc";
  request.curve = "1.2";
  auto results = LabelNodes(*client_, request, &prom_.client());
  ASSERT_TRUE(results.ok()) << results.error().message;
  EXPECT_EQ(Labels("n1")["tensorflow/host"], "tfs.power.svc");
  EXPECT_EQ(Labels("n1")["ambient/max"], "35");
  EXPECT_EQ(server_.Object("/api/v1/nodes/n1")["metadata"]["annotations"]["powerctl.io/curve"],
            "1.2");
  EXPECT_THAT((*results)[0].keys_changed,
              ElementsAre("ambient/max", "ambient/min", "cpu1/max", "cpu1/min", "cpu2/max",
                          "cpu2/min", "tensorflow/host", "powerctl.io/curve"));
}

}  // namespace
}  // namespace powerctl::setup
