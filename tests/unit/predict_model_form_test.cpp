// PredictNodePowerWithFill and the JSON that carries its result from the extender: each node's
// model form (curve or exponent), its numbers and the fill cost, the same on both sides.
#include "core/predict/builtin_model.h"
#include "core/predict/node_power_json.h"
#include "core/report/power_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace powerctl::predict {
namespace {

using std::chrono::seconds;
using telemetry::NodeReading;
using telemetry::SteadyTime;

const SteadyTime kFormNow = SteadyTime{} + std::chrono::hours(1);
constexpr const char* kSteepCurve = "100,250,260,270,280,290,300,310,320,330,340";

NodeFacts FormNode(const std::string& name, std::map<std::string, std::string> annotations) {
  NodeFacts n;
  n.name = name;
  n.annotations = std::move(annotations);
  return n;
}

NodeReading FormReading(const std::string& name, double cores, double capacity) {
  NodeReading r;
  r.node = name;
  r.cpu_cores_used = telemetry::CpuReading(cores, kFormNow, "test");
  r.cpu_capacity = capacity;
  return r;
}

PowerQuery FormQuery(double cores) {
  PowerQuery q;
  q.extra_cpu_cores = cores;
  q.now = kFormNow;
  return q;
}

// An efficient node that rises steeply from idle, and an inefficient linear one: the pod's
// own watts favour the linear node, the fill cost the steep one.
struct Cluster {
  std::vector<NodeFacts> nodes = {
      FormNode("steep", {{"powerctl.io/power-curve", kSteepCurve}}),
      FormNode("linear", {{"powerctl.io/idle-watts", "100"}, {"powerctl.io/max-watts", "700"}}),
      FormNode("typo", {{"powerctl.io/max-watts", "many"}})};
  std::map<std::string, NodeReading> readings = {{"steep", FormReading("steep", 0, 100)},
                                                 {"linear", FormReading("linear", 0, 100)},
                                                 {"typo", FormReading("typo", 0, 100)}};
};

TEST(PredictNodePowerWithFill, ShowsEachNodesModelAndItsFillCost) {
  Cluster c;
  config::PowerctlConfig config;
  BuiltinPredictor builtin;
  auto power = PredictNodePowerWithFill(c.nodes, c.readings, config, builtin, FormQuery(10));
  ASSERT_EQ(power.size(), 3u);
  const NodePower& steep = power[0];
  const NodePower& linear = power[1];
  ASSERT_TRUE(steep.builtin && steep.builtin->points);
  EXPECT_EQ(FormatPowerCurve(*steep.builtin->points), kSteepCurve);
  ASSERT_TRUE(linear.builtin);
  EXPECT_EQ(linear.builtin->points, nullptr);
  EXPECT_EQ(linear.builtin->idle_watts, 100);
  EXPECT_EQ(linear.builtin->max_watts, 700);
  // +10 cores of 100: the steep node adds more watts for this pod (150 W vs 60 W) ...
  EXPECT_NEAR(*steep.delta(), 150, 1e-3);
  EXPECT_NEAR(*linear.delta(), 60, 1e-3);
  // ... but fills cheapest: (340 - 100) W over the whole node vs 600 W, per 100 cores.
  ASSERT_TRUE(steep.fill_watts_per_core && linear.fill_watts_per_core);
  EXPECT_NEAR(*steep.fill_watts_per_core, 2.4, 1e-4);
  EXPECT_NEAR(*linear.fill_watts_per_core, 6.0, 1e-4);
  // Annotations that do not parse are not a model to show.
  EXPECT_NE(power[2].error, "");
  EXPECT_FALSE(power[2].builtin);
  EXPECT_FALSE(power[2].fill_watts_per_core);
}

TEST(PredictNodePowerWithFill, TheExtendersDocumentCarriesTheSame) {
  Cluster c;
  config::PowerctlConfig config;
  BuiltinPredictor builtin;
  auto power = PredictNodePowerWithFill(c.nodes, c.readings, config, builtin, FormQuery(10));
  nlohmann::json doc = PredictionDocument(power, 10, kFormNow);
  EXPECT_EQ(doc["nodes"][0]["model"]["form"], "curve");
  EXPECT_EQ(doc["nodes"][0]["model"]["curve"].size(), 11u);
  EXPECT_EQ(doc["nodes"][1]["model"]["form"], "exponent");
  EXPECT_EQ(doc["nodes"][1]["model"]["exponent"], 1.0);
  EXPECT_FALSE(doc["nodes"][2]["model"].contains("form"));
  auto parsed = ParsePredictionDocument(nlohmann::json::parse(doc.dump()), kFormNow + seconds(1));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->nodes.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const NodePower& a = power[i];
    const NodePower& b = parsed->nodes[i];
    EXPECT_EQ(a.fill_watts_per_core, b.fill_watts_per_core) << a.node;
    ASSERT_EQ(a.builtin.has_value(), b.builtin.has_value()) << a.node;
    if (!a.builtin) continue;
    EXPECT_EQ(a.builtin->idle_watts, b.builtin->idle_watts);
    EXPECT_EQ(a.builtin->max_watts, b.builtin->max_watts);
    EXPECT_EQ(a.builtin->curve, b.builtin->curve);
    EXPECT_EQ(a.builtin->temperature_factor, b.builtin->temperature_factor);
    ASSERT_EQ(a.builtin->points == nullptr, b.builtin->points == nullptr);
    if (a.builtin->points) {
      EXPECT_EQ(*a.builtin->points, *b.builtin->points);
    }
  }
}

TEST(PredictionDocument, AModelFormIsReadWithinBounds) {
  auto parse = [](nlohmann::json model) {
    nlohmann::json doc = {{"kind", "PowerPrediction"},
                          {"cpuAdded", 1},
                          {"nodes", {{{"node", "a"}, {"model", model}}}}};
    return ParsePredictionDocument(doc, kFormNow);
  };
  nlohmann::json curve = nlohmann::json::array();
  for (int i = 0; i <= 10; ++i) curve.push_back(100 + 10 * i);
  auto ok = parse({{"backend", "builtin"}, {"form", "curve"}, {"curve", curve}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_TRUE(ok->nodes[0].builtin && ok->nodes[0].builtin->points);
  EXPECT_EQ(ok->nodes[0].builtin->max_watts, 200);

  // A curve is exactly 11 watts in range; the exponent form needs its three numbers.
  nlohmann::json longer = curve;
  longer.push_back(210);
  nlohmann::json hot = curve;
  hot[3] = 1e9;
  nlohmann::json words = curve;
  words[0] = "idle";
  for (const nlohmann::json& bad : {longer, hot, words, nlohmann::json("100,110")}) {
    auto refused = parse({{"backend", "builtin"}, {"form", "curve"}, {"curve", bad}});
    ASSERT_FALSE(refused.ok()) << bad.dump();
    EXPECT_EQ(refused.error().code, ErrorCode::kApi);
    EXPECT_NE(refused.error().message.find("node a.model.curve: not a list of 11 watts"),
              std::string::npos)
        << refused.error().message;
  }
  auto missing = parse({{"backend", "builtin"}, {"form", "exponent"}, {"idleWatts", 100}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("maxWatts: missing"), std::string::npos);
  // A form this version does not know, and none (an older extender): no model shown.
  auto unknown = parse({{"backend", "builtin"}, {"form", "spline"}});
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->nodes[0].builtin);
  auto older = parse({{"backend", "builtin"}});
  ASSERT_TRUE(older.ok());
  EXPECT_FALSE(older->nodes[0].builtin);
}

}  // namespace
}  // namespace powerctl::predict
