// power_cost: the fill cost read back from the power score's reasons, the objective that
// ranked a decision, and the line saying why the chosen node won.
#include "core/explain/power_cost.h"
#include "core/scoring/power_score.h"

#include <gtest/gtest.h>

namespace powerctl::explain {
namespace {

// A scored row as the decision carries it: the power component as ScorePower wrote it.
NodeScore CostRow(const std::string& name, const scoring::PowerScore& power, std::int64_t score) {
  NodeScore row;
  row.node = name;
  scoring::NodeDecision d;
  d.node = name;
  d.score = score;
  d.watts_now = 100;
  d.watts_after = 100 + power.delta_watts.value_or(0);
  d.components.push_back(power.component);
  row.scored = d;
  return row;
}

predict::PowerEstimate Estimate(double delta, double fill) {
  predict::PowerEstimate e;
  e.watts_now = 100;
  e.watts_after = 100 + delta;
  e.fill_watts_per_core = fill;
  return e;
}

// node-a adds the fewest watts for this pod; node-b is the cheapest to fill.
std::vector<scoring::PowerScore> Scored(const std::string& objective, double fill_b = 9.8) {
  config::ScoringSettings settings;
  settings.objective = objective;
  return scoring::ScorePower({Estimate(20, 12.1), Estimate(40, fill_b), Estimate(60, 30)},
                             settings);
}

TEST(FillWattsPerCoreFromReason, ReadsWhatThePowerScoreWrites) {
  auto scores = Scored("fill");
  EXPECT_EQ(FillWattsPerCoreFromReason(scores[0].component.reason), 12.1)
      << scores[0].component.reason;
  EXPECT_EQ(FillWattsPerCoreFromReason(scores[1].component.reason), 9.8);
  EXPECT_EQ(FillWattsPerCoreFromReason("+3.0 W, a decrease counted as +0.0 W, 0.25 W/core to fill"),
            0.25);
  EXPECT_EQ(
      FillWattsPerCoreFromReason("+3.0 W, 2.40 W/core to fill (x2.00 for the pod slot it takes)"),
      2.4);
  // Marginal reasons, errors and garbage carry none.
  EXPECT_EQ(FillWattsPerCoreFromReason(Scored("marginal")[0].component.reason), std::nullopt);
  EXPECT_EQ(FillWattsPerCoreFromReason("model server unreachable"), std::nullopt);
  EXPECT_EQ(FillWattsPerCoreFromReason(" W/core to fill"), std::nullopt);
  EXPECT_EQ(FillWattsPerCoreFromReason("1.2.3 W/core to fill"), std::nullopt);
}

TEST(RankingObjective, FromTheReasons) {
  auto fill = Scored("fill");
  auto marginal = Scored("marginal");
  EXPECT_EQ(RankingObjective({CostRow("a", fill[0], 5), CostRow("b", fill[1], 10)}),
            config::kObjectiveFill);
  EXPECT_EQ(RankingObjective({CostRow("a", marginal[0], 10), CostRow("b", marginal[1], 5)}),
            config::kObjectiveMarginal);
  NodeScore unscored;
  unscored.node = "c";
  EXPECT_EQ(RankingObjective({unscored}), "");
}

TEST(WhyChosen, TheCheapestToFillAgainstTheNextBest) {
  auto s = Scored("fill");
  std::vector<NodeScore> nodes = {CostRow("node-b", s[1], 10), CostRow("node-a", s[0], 4),
                                  CostRow("node-c", s[2], 0)};
  EXPECT_EQ(WhyChosen(nodes, "node-b"),
            "node-b won: cheapest to fill, 9.80 W/core vs 12.10 W/core on node-a (next best)");
  // Not scored: nothing to say.
  EXPECT_EQ(WhyChosen(nodes, "node-z"), "");
}

TEST(WhyChosen, MarginalSaysWatts) {
  auto s = Scored("marginal");
  std::vector<NodeScore> nodes = {CostRow("node-a", s[0], 10), CostRow("node-b", s[1], 5)};
  EXPECT_EQ(WhyChosen(nodes, "node-a"),
            "node-a won: adds the least power, +20.0 W vs +40.0 W on node-b (next best)");
}

TEST(WhyChosen, ATieWithinTheToleranceIsBrokenByKubeSchedulersScores) {
  auto s = Scored("fill", 12.3);  // within 5 % of node-a's 12.10: both score 10
  ASSERT_EQ(s[0].component.value, 10);
  ASSERT_EQ(s[1].component.value, 10);
  std::vector<NodeScore> nodes = {CostRow("node-a", s[0], 10), CostRow("node-b", s[1], 10)};
  EXPECT_EQ(WhyChosen(nodes, "node-b"),
            "node-b won a tie on power: 12.30 W/core vs 12.10 W/core on node-a (cheapest), both "
            "score 10.0 (within the tie tolerance), so kube-scheduler's other scores decided");
}

TEST(WhyChosen, KubeSchedulerOutweighingTheExtenderIsSaid) {
  auto s = Scored("fill");
  std::vector<NodeScore> nodes = {CostRow("node-b", s[1], 10), CostRow("node-a", s[0], 4)};
  EXPECT_EQ(WhyChosen(nodes, "node-a"),
            "node-a won though node-b is cheaper to fill (9.80 W/core vs 12.10 W/core) and the "
            "extender scored it higher (10 vs 4): kube-scheduler's own scores outweighed the "
            "extender's");
  // The extender's other components (a policy) can make the dearer node score as high.
  nodes[1].scored->score = 10;
  EXPECT_EQ(WhyChosen(nodes, "node-a"),
            "node-a won on its other scores, though node-b is cheaper to fill: 9.80 W/core vs "
            "12.10 W/core");
}

TEST(WhyChosen, AloneOrWithoutAPrediction) {
  auto s = Scored("fill");
  EXPECT_EQ(WhyChosen({CostRow("node-a", s[0], 10)}, "node-a"),
            "node-a won: the only node the extender scored");
  scoring::PowerScore unknown;
  unknown.component = {"power", 5, "model server unreachable"};
  std::vector<NodeScore> nodes = {CostRow("node-a", s[0], 10), CostRow("node-x", unknown, 5)};
  nodes[1].scored->watts_now.reset();
  nodes[1].scored->watts_after.reset();
  EXPECT_EQ(WhyChosen(nodes, "node-x"),
            "node-x won without a power prediction (model server unreachable): kube-scheduler's "
            "other scores chose it");
  EXPECT_EQ(WhyChosen(nodes, "node-a"), "node-a won: the only node with a power prediction");
  nodes[0] = nodes[1];
  nodes[0].node = "node-y";
  EXPECT_EQ(WhyChosen(nodes, "node-x"),
            "node-x won: no node had a power prediction (model server unreachable on node-x), so "
            "kube-scheduler's other scores decided");
}

TEST(NodeScoreToJson, CarriesTheFillCost) {
  auto s = Scored("fill");
  nlohmann::json row = NodeScoreToJson(CostRow("node-b", s[1], 10));
  EXPECT_EQ(row["fillWattsPerCore"], 9.8);
  EXPECT_EQ(row["deltaWatts"], 40.0);
  row = NodeScoreToJson(CostRow("node-a", Scored("marginal")[0], 10));
  EXPECT_TRUE(row["fillWattsPerCore"].is_null());
  ScoreReport report;
  report.objective = config::kObjectiveFill;
  EXPECT_EQ(ScoreReportToJson(report)["objective"], "fill");
}

}  // namespace
}  // namespace powerctl::explain
