#include "core/predict/model_accuracy.h"

#include <gtest/gtest.h>

namespace powerctl::predict {
namespace {

NodePower Predicted(const std::string& node, std::optional<double> watts, std::string error = {}) {
  NodePower p;
  p.node = node;
  p.watts_now = watts;
  p.error = std::move(error);
  return p;
}

telemetry::MeasuredPower Measured(std::optional<double> watts, std::string reason = {}) {
  return telemetry::MeasuredPower{watts, std::move(reason)};
}

TEST(ModelAccuracyTest, ComparesEachNodeAndRanksTheWorstFirst) {
  std::vector<NodePower> predicted = {Predicted("a", 210), Predicted("b", 260),
                                      Predicted("c", 150)};
  std::map<std::string, telemetry::MeasuredPower> measured = {
      {"a", Measured(200)}, {"b", Measured(200)}, {"c", Measured(200)}};
  ModelAccuracy acc = CompareModel(predicted, measured);
  ASSERT_EQ(acc.nodes.size(), 3U);
  EXPECT_EQ(acc.nodes[0].node, "b");
  EXPECT_DOUBLE_EQ(acc.nodes[0].error_watts, 60);
  EXPECT_DOUBLE_EQ(acc.nodes[0].relative_error, 0.3);
  EXPECT_EQ(acc.nodes[1].node, "c");
  EXPECT_DOUBLE_EQ(acc.nodes[1].error_watts, -50);
  EXPECT_EQ(acc.nodes[2].node, "a");
  ASSERT_TRUE(acc.mean_absolute_percentage_error.has_value());
  EXPECT_DOUBLE_EQ(*acc.mean_absolute_percentage_error, (0.05 + 0.3 + 0.25) / 3);
  EXPECT_DOUBLE_EQ(*acc.mean_absolute_error_watts, (10 + 60 + 50) / 3.0);
  EXPECT_EQ(acc.Worst()->node, "b");
  EXPECT_EQ(acc.Find("c")->measured_watts, 200);
  EXPECT_EQ(acc.Find("zz"), nullptr);
  EXPECT_EQ(DescribeNodeAccuracy(acc.nodes[0]), "b (+30%: 260 W predicted, 200 W measured)");
  EXPECT_EQ(DescribeNodeAccuracy(acc.nodes[1]), "c (-25%: 150 W predicted, 200 W measured)");
}

TEST(ModelAccuracyTest, SaysWhyANodeWasNotCompared) {
  std::vector<NodePower> predicted = {Predicted("no-model", std::nullopt, "no telemetry"),
                                      Predicted("unmeasured", 100), Predicted("absent", 100),
                                      Predicted("zero", 100)};
  std::map<std::string, telemetry::MeasuredPower> measured = {
      {"no-model", Measured(100)},
      {"unmeasured", Measured(std::nullopt, "no rapl power series")},
      {"zero", Measured(0)}};
  ModelAccuracy acc = CompareModel(predicted, measured);
  EXPECT_TRUE(acc.nodes.empty());
  EXPECT_FALSE(acc.mean_absolute_percentage_error.has_value());
  EXPECT_EQ(acc.Worst(), nullptr);
  ASSERT_EQ(acc.not_compared.size(), 4U);
  EXPECT_EQ(acc.not_compared[0].node, "absent");
  EXPECT_EQ(acc.not_compared[0].reason, "not measured");
  EXPECT_EQ(acc.not_compared[1].reason, "no prediction: no telemetry");
  EXPECT_EQ(acc.not_compared[2].reason, "no rapl power series");
  EXPECT_EQ(acc.not_compared[3].reason, "the measured power is 0 W");
}

TEST(ModelAccuracyTest, DescribesWhichModelPredictsANode) {
  config::PowerctlConfig config;
  NodeFacts node;
  node.name = "a";
  node.annotations = {{"powerctl.io/idle-watts", "100"},
                      {"powerctl.io/max-watts", "300"},
                      {"powerctl.io/curve", "0.8"}};
  EXPECT_EQ(DescribeNodeModel(node, config),
            "built-in model, exponent form (idle 100 W, max 300 W, exponent 0.8)");
  node.annotations["powerctl.io/power-curve"] = "50,120,140,160,180,200,220,240,270,320,420";
  EXPECT_EQ(DescribeNodeModel(node, config), "built-in model, the node's measured curve");
  node.annotations["powerctl.io/max-watts"] = "lots";
  EXPECT_EQ(DescribeNodeModel(node, config).rfind("built-in model, not usable: ", 0), 0U);
  config.predictor.backend = "tfserving-grpc";
  node.labels = {
      {"tensorflow/host", "10.0.0.9"}, {"tensorflow/port", "8500"}, {"tensorflow/name", "power"}};
  EXPECT_EQ(DescribeNodeModel(node, config), "tfserving-grpc model power at 10.0.0.9:8500");
}

}  // namespace
}  // namespace powerctl::predict
