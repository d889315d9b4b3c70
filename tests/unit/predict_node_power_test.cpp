// PredictNodePower: telemetry and node metadata to model rows and back, and its JSON form.
#include "core/predict/builtin_model.h"
#include "core/predict/node_params.h"
#include "core/predict/node_power.h"
#include "core/predict/node_power_json.h"
#include "core/predict/predictor_factory.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <limits>
#include <memory>

namespace powerctl::predict {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using telemetry::NodeReading;
using telemetry::SteadyTime;

const SteadyTime kNow = SteadyTime{} + std::chrono::hours(1);

// Records every call and answers each row with a fixed function of its inputs.
class RecordingPredictor : public Predictor {
 public:
  std::vector<std::vector<PredictionRow>> calls;
  std::string fail_node;  // rows of this node get an error
  std::vector<Prediction> Predict(PredictionRows rows, milliseconds) override {
    calls.emplace_back(rows.begin(), rows.end());
    std::vector<Prediction> out;
    for (const auto& row : rows) {
      Prediction p;
      if (row.node == fail_node) {
        p.error = "model server unreachable";
      } else {
        p.watts = 100 + 200 * double{row.inputs.cpu_fraction} + 10 * double{row.inputs.ambient};
      }
      out.push_back(p);
    }
    return out;
  }
};

NodeFacts Node(const std::string& name, bool ranges = true) {
  NodeFacts n;
  n.name = name;
  if (ranges) {
    n.labels = {{"ambient/min", "10"}, {"ambient/max", "40"}, {"cpu1/min", "20"},
                {"cpu1/max", "90"},    {"cpu2/min", "20"},    {"cpu2/max", "90"}};
  }
  return n;
}

NodeReading Reading(const std::string& name, double cores, double capacity, SteadyTime at) {
  NodeReading r;
  r.node = name;
  r.cpu_cores_used = telemetry::CpuReading(cores, at, "test");
  r.cpu_capacity = capacity;
  r.ambient = telemetry::TemperatureReading(25, at, "Ambient");
  r.cpu1 = telemetry::TemperatureReading(55, at, "CPU1");
  r.cpu2 = telemetry::TemperatureReading(200 - 100, at, "CPU2");  // above its range: clamped
  return r;
}

PowerQuery Query(double cores = 1.0) {
  PowerQuery q;
  q.extra_cpu_cores = cores;
  q.now = kNow;
  return q;
}

TEST(NodePowerTest, BuiltinModelNowAndAfterInOneBatchedCall) {
  config::PowerctlConfig config;
  NodeFacts node = Node("a");
  node.annotations = {{"powerctl.io/idle-watts", "100"}, {"powerctl.io/max-watts", "300"}};
  std::map<std::string, NodeReading> readings = {{"a", Reading("a", 1, 4, kNow - seconds(5))}};
  BuiltinPredictor builtin;
  auto result = PredictNodePower({node}, readings, config, builtin, Query(1));
  ASSERT_EQ(result.size(), 1u);
  const NodePower& p = result[0];
  EXPECT_EQ(p.error, "");
  EXPECT_DOUBLE_EQ(*p.cpu_fraction_now, 0.25);
  EXPECT_DOUBLE_EQ(*p.cpu_fraction_after, 0.5);
  EXPECT_DOUBLE_EQ(*p.ambient.normalized, 0.5);
  EXPECT_DOUBLE_EQ(*p.cpu1.normalized, 0.5);
  EXPECT_DOUBLE_EQ(*p.cpu2.normalized, 1.0);
  double t = (0.5 + 0.5 + 1.0) / 3;
  EXPECT_NEAR(*p.watts_now, 100 + 200 * 0.25 * (1 + 0.1 * t), 1e-3);
  EXPECT_NEAR(*p.watts_after, 100 + 200 * 0.5 * (1 + 0.1 * t), 1e-3);
  EXPECT_NEAR(*p.delta(), 200 * 0.25 * (1 + 0.1 * t), 1e-3);
  EXPECT_EQ(p.telemetry_age, milliseconds(5000));
  EXPECT_FALSE(p.overcommitted);
}

TEST(NodePowerTest, EveryNodeIsInOneCallWithTwoRowsEach) {
  config::PowerctlConfig config;
  config.predictor.backend = "tfserving-grpc";
  std::vector<NodeFacts> nodes;
  std::map<std::string, NodeReading> readings;
  for (int i = 0; i < 1000; ++i) {
    std::string name = "n" + std::to_string(i);
    nodes.push_back(Node(name));
    readings[name] = Reading(name, i % 4, 4, kNow);
  }
  RecordingPredictor predictor;
  auto result = PredictNodePower(nodes, readings, config, predictor, Query());
  ASSERT_EQ(predictor.calls.size(), 1u);
  ASSERT_EQ(predictor.calls[0].size(), 2000u);
  EXPECT_EQ(predictor.calls[0][0].endpoint().host, "powerctl-model.powerctl.svc");
  EXPECT_EQ(predictor.calls[0][0].endpoint().port, 8500);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(result[i].node, "n" + std::to_string(i));
    EXPECT_NEAR(*result[i].delta(), 200.0 / 4, 1e-3) << i;
  }
}

TEST(NodePowerTest, TheFillCostAsksAModelServerForFullLoadAndReadsACurveDirectly) {
  config::PowerctlConfig config;
  config.predictor.backend = "tfserving-grpc";
  PreparedNode served = PrepareNode(Node("a"), Reading("a", 1, 4, kNow), config, kNow);
  RecordingPredictor predictor;
  auto estimates = EstimatePower({&served}, {}, 1.0, predictor, milliseconds(1000), nullptr, true);
  ASSERT_EQ(predictor.calls.size(), 1u);
  ASSERT_EQ(predictor.calls[0].size(), 3u);  // now, after, full load
  EXPECT_FLOAT_EQ(predictor.calls[0][2].inputs.cpu_fraction, 1.0F);
  ASSERT_TRUE(estimates[0].fill_watts_per_core);
  EXPECT_NEAR(*estimates[0].fill_watts_per_core, 200.0 / 4, 1e-3);  // a straight line

  config::PowerctlConfig builtin_config;
  NodeFacts curved = Node("b");
  curved.annotations = {{"powerctl.io/power-curve", "50,120,140,160,180,200,220,240,270,320,420"},
                        {"powerctl.io/temperature-factor", "0"}};
  PreparedNode b = PrepareNode(curved, Reading("b", 0, 10, kNow), builtin_config, kNow);
  BuiltinPredictor builtin;
  auto curve = EstimatePower({&b}, {}, 1.0, builtin, milliseconds(1000), nullptr, true);
  ASSERT_TRUE(curve[0].fill_watts_per_core) << curve[0].error;
  // From idle the cheapest chord runs to 70 %: (240 - 50) W over 7 cores.
  EXPECT_NEAR(*curve[0].fill_watts_per_core, 190.0 / 7, 1e-3);
  auto without = EstimatePower({&b}, {}, 1.0, builtin, milliseconds(1000));
  EXPECT_FALSE(without[0].fill_watts_per_core);
}

TEST(NodePowerTest, TheFillCostStopsAtTheCpuTheNodeCanStillTake) {
  config::PowerctlConfig config;
  NodeFacts curved = Node("b");
  curved.annotations = {{"powerctl.io/power-curve", "50,120,140,160,180,200,220,240,270,320,420"},
                        {"powerctl.io/temperature-factor", "0"}};
  PreparedNode b = PrepareNode(curved, Reading("b", 0, 10, kNow), config, kNow);
  BuiltinPredictor builtin;
  // 4 more cores at most (say 4 free pod slots for 1-core pods): the chord to 40 %.
  auto capped = EstimatePower({&b}, {}, 1.0, builtin, milliseconds(1000), nullptr, true, {4.0});
  ASSERT_TRUE(capped[0].fill_watts_per_core) << capped[0].error;
  EXPECT_NEAR(*capped[0].fill_watts_per_core, 130.0 / 4, 1e-3);
  // Unbounded: to 70 %, as without a cap.
  auto open = EstimatePower({&b}, {}, 1.0, builtin, milliseconds(1000), nullptr, true,
                            {std::numeric_limits<double>::infinity()});
  EXPECT_NEAR(*open[0].fill_watts_per_core, 190.0 / 7, 1e-3);

  // A model server is asked for the highest load the node can reach, not for full load.
  config::PowerctlConfig served_config;
  served_config.predictor.backend = "tfserving-grpc";
  PreparedNode served = PrepareNode(Node("a"), Reading("a", 1, 4, kNow), served_config, kNow);
  RecordingPredictor predictor;
  EstimatePower({&served}, {}, 1.0, predictor, milliseconds(1000), nullptr, true, {2.0});
  ASSERT_EQ(predictor.calls.size(), 1u);
  ASSERT_EQ(predictor.calls[0].size(), 3u);
  EXPECT_FLOAT_EQ(predictor.calls[0][2].inputs.cpu_fraction, 0.75F);  // (1 + 2) of 4 cores
}

TEST(NodePowerTest, MissingInputsGiveReasonsNotNumbers) {
  config::PowerctlConfig config;
  NodeReading no_cpu = Reading("a", 1, 4, kNow);
  no_cpu.cpu_cores_used = telemetry::MissingReading("stale: measured 5m ago");
  NodeReading no_capacity = Reading("b", 1, 4, kNow);
  no_capacity.cpu_capacity.reset();
  NodeFacts bad_annotation = Node("c");
  bad_annotation.annotations = {{"powerctl.io/idle-watts", "0x10"}};
  NodeReading nan_cpu = Reading("e", std::nan(""), 4, kNow);
  std::map<std::string, NodeReading> readings = {
      {"a", no_cpu}, {"b", no_capacity}, {"c", Reading("c", 1, 4, kNow)}, {"e", nan_cpu}};
  RecordingPredictor predictor;
  auto result = PredictNodePower({Node("a"), Node("b"), bad_annotation, Node("d"), Node("e")},
                                 readings, config, predictor, Query());
  EXPECT_EQ(result[0].error, "no CPU usage: stale: measured 5m ago");
  EXPECT_EQ(result[1].error, "node has no CPU capacity in its status");
  EXPECT_NE(result[2].error.find("powerctl.io/idle-watts"), std::string::npos) << result[2].error;
  EXPECT_EQ(result[3].error, "no CPU usage: no telemetry for this node");
  EXPECT_NE(result[4].error.find("no CPU usage"), std::string::npos) << result[4].error;
  for (const auto& p : result) EXPECT_FALSE(p.watts_now.has_value()) << p.node;
  EXPECT_TRUE(predictor.calls.empty());
}

TEST(NodePowerTest, BuiltinTakesMissingTemperaturesAsNominalModelServersRefuse) {
  NodeReading r = Reading("a", 2, 4, kNow);
  r.cpu1 = telemetry::MissingReading("sensor CPU1 reads NaN");
  std::map<std::string, NodeReading> readings = {{"a", r}, {"b", Reading("b", 2, 4, kNow)}};
  config::PowerctlConfig config;
  BuiltinPredictor builtin;
  auto result = PredictNodePower({Node("a"), Node("b", false)}, readings, config, builtin, Query());
  ASSERT_TRUE(result[0].watts_now.has_value());
  ASSERT_EQ(result[0].notes.size(), 1u);
  EXPECT_EQ(result[0].notes[0], "no cpu1 temperature: sensor CPU1 reads NaN (taken as nominal)");
  EXPECT_EQ(result[1].notes.size(), 3u);  // no range labels at all

  config.predictor.backend = "v2";
  RecordingPredictor predictor;
  result = PredictNodePower({Node("a"), Node("b", false)}, readings, config, predictor, Query());
  EXPECT_EQ(result[0].error, "model input missing: no cpu1 temperature: sensor CPU1 reads NaN");
  EXPECT_EQ(result[1].error, "model input missing: no ambient/min and ambient/max labels");
}

TEST(NodePowerTest, BadRangeLabelsAreNamed) {
  NodeFacts node = Node("a");
  node.labels["cpu2/min"] = "0x10";
  std::string error;
  EXPECT_FALSE(TemperatureRangeFromLabels(node.labels, "cpu2", &error).has_value());
  EXPECT_NE(error.find("cpu2/min=0x10"), std::string::npos) << error;
  node.labels["cpu2/min"] = "95";
  EXPECT_FALSE(TemperatureRangeFromLabels(node.labels, "cpu2", &error).has_value());
  auto ok = TemperatureRangeFromLabels(node.labels, "ambient", &error);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->min, 10);
  EXPECT_EQ(ok->max, 40);
}

TEST(NodePowerTest, OvercommitIsFlaggedAndTheFractionCapped) {
  config::PowerctlConfig config;
  std::map<std::string, NodeReading> readings = {{"a", Reading("a", 3.5, 4, kNow)}};
  BuiltinPredictor builtin;
  auto result = PredictNodePower({Node("a")}, readings, config, builtin, Query(2));
  EXPECT_TRUE(result[0].overcommitted);
  EXPECT_DOUBLE_EQ(*result[0].cpu_fraction_after, 1.0);
}

TEST(NodePowerTest, AFailingModelFailsOnlyItsNodes) {
  config::PowerctlConfig config;
  config.predictor.backend = "tfserving-rest";
  std::map<std::string, NodeReading> readings = {{"a", Reading("a", 1, 4, kNow)},
                                                 {"b", Reading("b", 1, 4, kNow)}};
  RecordingPredictor predictor;
  predictor.fail_node = "a";
  auto result = PredictNodePower({Node("a"), Node("b")}, readings, config, predictor, Query());
  EXPECT_EQ(result[0].error, "model server unreachable");
  EXPECT_TRUE(result[1].watts_now.has_value());
}

// Nodes that resolve to the configuration's default model share one endpoint object; a node
// labelled with its own model server gets its own.
TEST(NodePowerTest, PreparedNodesShareTheUsualModelEndpoint) {
  config::PowerctlConfig config;
  config.predictor.backend = "tfserving-grpc";
  config.predictor.model.host = "model.power.svc";
  auto usual = ModelEndpointForNode({}, config);
  ASSERT_TRUE(usual.ok()) << usual.error().message;
  auto shared = std::make_shared<const ModelEndpoint>(*usual);

  PreparedNode a = PrepareNode(Node("a"), Reading("a", 1, 4, kNow), config, kNow, shared);
  PreparedNode b = PrepareNode(Node("b"), Reading("b", 1, 4, kNow), config, kNow, shared);
  EXPECT_EQ(a.model, shared);
  EXPECT_EQ(b.model, shared);

  NodeFacts labelled = Node("c");
  labelled.labels[kModelHostLabel] = "10.0.0.9";
  labelled.labels[kModelPortLabel] = "9000";
  labelled.labels[kModelNameLabel] = "rack7";
  PreparedNode c = PrepareNode(labelled, Reading("c", 1, 4, kNow), config, kNow, shared);
  ASSERT_NE(c.model, nullptr);
  EXPECT_NE(c.model, shared);
  EXPECT_EQ(c.model->host, "10.0.0.9");
  EXPECT_EQ(c.model->name, "rack7");

  PreparedNode alone = PrepareNode(Node("d"), Reading("d", 1, 4, kNow), config, kNow);
  ASSERT_NE(alone.model, nullptr);  // without a usual endpoint: a copy of its own
  EXPECT_NE(alone.model, shared);
  EXPECT_EQ(*alone.model, *shared);
}

TEST(NodePowerJsonTest, RoundTripKeepsWhatTheCliShows) {
  config::PowerctlConfig config;
  std::map<std::string, NodeReading> readings = {{"a", Reading("a", 1, 4, kNow - seconds(3))}};
  BuiltinPredictor builtin;
  auto result = PredictNodePower({Node("a"), Node("b")}, readings, config, builtin, Query(0.5));
  nlohmann::json doc = PredictionDocument(result, 0.5, kNow);
  // Through text, as it travels from the extender.
  auto parsed = ParsePredictionDocument(nlohmann::json::parse(doc.dump()), kNow + seconds(10));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->cpu_added, 0.5);
  ASSERT_EQ(parsed->nodes.size(), 2u);
  const NodePower& a = parsed->nodes[0];
  EXPECT_EQ(a.node, "a");
  EXPECT_DOUBLE_EQ(*a.watts_now, *result[0].watts_now);
  EXPECT_DOUBLE_EQ(*a.watts_after, *result[0].watts_after);
  EXPECT_DOUBLE_EQ(*a.reading.cpu_cores_used.value, 1);
  EXPECT_DOUBLE_EQ(*a.reading.cpu_capacity, 4);
  EXPECT_DOUBLE_EQ(*a.ambient.reading.value, 25);
  EXPECT_DOUBLE_EQ(*a.cpu2.normalized, 1.0);
  EXPECT_EQ(a.ambient.range->max, 40);
  EXPECT_EQ(a.telemetry_age, milliseconds(3000));
  EXPECT_EQ(telemetry::Age(a.ambient.reading, kNow + seconds(10)), milliseconds(3000));
  EXPECT_EQ(parsed->nodes[1].error, "no CPU usage: no telemetry for this node");
}

TEST(NodePowerJsonTest, MalformedDocumentsAreRefusedWithTheField) {
  auto now = kNow;
  EXPECT_FALSE(ParsePredictionDocument(nlohmann::json::array(), now).ok());
  EXPECT_FALSE(ParsePredictionDocument(
                   {{"kind", "PowerPrediction"}, {"nodes", nlohmann::json::array()}}, now)
                   .ok());
  nlohmann::json doc = {{"kind", "PowerPrediction"},
                        {"cpuAdded", 1},
                        {"nodes", {{{"node", "a"}, {"wattsNow", "many"}}}}};
  auto bad = ParsePredictionDocument(doc, now);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kApi);
  EXPECT_NE(bad.error().message.find("node a.wattsNow: not a number"), std::string::npos)
      << bad.error().message;
  doc["nodes"] = {{{"wattsNow", 1}}};
  EXPECT_FALSE(ParsePredictionDocument(doc, now).ok());
  doc["nodes"] = {{{"node", "a"}, {"notes", {1, 2}}}};
  EXPECT_FALSE(ParsePredictionDocument(doc, now).ok());
  doc["nodes"] = {{{"node", "a"}, {"temperatures", {{"cpu1", {{"normalized", true}}}}}}};
  EXPECT_FALSE(ParsePredictionDocument(doc, now).ok());
}

TEST(PredictorFactoryTest, RefusesBadSettingsNamingTheKey) {
  class NoHttp : public HttpClient {
    Result<HttpClientResponse> Do(const HttpClientRequest&) override {
      return MakeError(ErrorCode::kNetwork, "unused");
    }
  } http;
  config::PredictorSettings settings;
  settings.timeout = "soon";
  auto bad = MakeConfiguredPredictor(settings, http);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("predictor.timeout"), std::string::npos);
  settings.timeout = "250ms";
  settings.backend = "tfserving-rest";
  settings.rest.request_form = "columns";
  bad = MakeConfiguredPredictor(settings, http);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("predictor.rest.requestForm"), std::string::npos);
  settings.rest.request_form = "instances";
  auto good = MakeConfiguredPredictor(settings, http);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->deadline, milliseconds(250));
  settings.backend = "onnx";
  EXPECT_FALSE(MakeConfiguredPredictor(settings, http).ok());
}

}  // namespace
}  // namespace powerctl::predict
