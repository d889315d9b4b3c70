#include "core/scoring/power_score.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace powerctl::scoring {
namespace {

predict::PowerEstimate Predicted(const std::string& /*node*/, double now, double after) {
  predict::PowerEstimate p;
  p.watts_now = now;
  p.watts_after = after;
  return p;
}

predict::PowerEstimate Failed(const std::string& /*node*/, const std::string& error) {
  predict::PowerEstimate p;
  p.error = error;
  return p;
}

// The pod's own watts, linearly, no ties: what these tests describe (the fill objective and
// tie tolerance have tests of their own below).
config::ScoringSettings Settings(int unknown = 5) {
  config::ScoringSettings s;
  s.unknown_score = unknown;
  s.objective = config::kObjectiveMarginal;
  s.tie_tolerance = 0;
  return s;
}

TEST(ScorePowerTest, ProportionalToTheDeltaNotRanks) {
  // deltas 2, 4, 12: ranks would give 10, 9, 8; proportional gives 10, 8, 0.
  std::string summary;
  auto scores =
      ScorePower({Predicted("a", 100, 102), Predicted("b", 100, 104), Predicted("c", 90, 102)},
                 Settings(), &summary);
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[1].component.value, 8.0);
  EXPECT_DOUBLE_EQ(scores[2].component.value, 0.0);
  EXPECT_EQ(scores[1].component.name, "power");
  EXPECT_EQ(scores[1].component.reason, "+4.0 W");
  EXPECT_EQ(summary, "power: 3 nodes with a prediction add +2.0 W (score 10) to +12.0 W (score 0)");
  EXPECT_EQ(scores[1].delta_watts, 4.0);
  EXPECT_TRUE(scores[1].known);
}

TEST(ScorePowerTest, EqualDeltasAllGetTen) {
  // MinimizePower gave equal nodes 10 on its 0..100 scale, i.e. nearly the worst.
  std::string summary;
  auto scores =
      ScorePower({Predicted("a", 100, 105), Predicted("b", 200, 205)}, Settings(), &summary);
  for (const auto& s : scores) {
    EXPECT_DOUBLE_EQ(s.component.value, 10.0);
    EXPECT_EQ(s.component.reason, "+5.0 W");
  }
  EXPECT_EQ(summary, "power: all 2 nodes with a prediction add +5.0 W, all score 10");
  auto one = ScorePower({Predicted("a", 100, 101.25)}, Settings(), &summary);
  EXPECT_DOUBLE_EQ(one[0].component.value, 10.0);
  EXPECT_EQ(one[0].component.reason, "+1.2 W");
  EXPECT_EQ(summary, "power: only one node has a prediction");
  std::string untouched = "kept";
  ScorePower({Failed("a", "model down")}, Settings(), &untouched);
  EXPECT_EQ(untouched, "kept");
}

TEST(ScorePowerTest, SmallDeltasAreNotQuantised) {
  // MinimizePower rounded inputs to 0.1 and truncated the delta to whole watts, so 0.3 W and 0.9 W
  // both scored as 0 W.
  auto scores = ScorePower({Predicted("a", 100, 100.3), Predicted("b", 100, 100.9)}, Settings());
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[1].component.value, 0.0);
}

TEST(ScorePowerTest, NodesWithoutPredictionGetTheUnknownScoreAndReason) {
  auto scores = ScorePower({Predicted("a", 100, 103), Failed("b", "no CPU usage: stale"),
                            Predicted("c", 100, 109), Failed("d", "")},
                           Settings(3));
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[2].component.value, 0.0);
  EXPECT_DOUBLE_EQ(scores[1].component.value, 3.0);
  EXPECT_EQ(scores[1].component.reason, "no CPU usage: stale");
  EXPECT_FALSE(scores[1].known);
  EXPECT_EQ(scores[1].delta_watts, std::nullopt);
  EXPECT_EQ(scores[3].component.reason, "no prediction");
}

TEST(ScorePowerTest, OvercommittedNodesScoreZeroAndDoNotStretchTheRange) {
  auto over = Predicted("b", 100, 200);
  over.overcommitted = true;
  auto scores = ScorePower({Predicted("a", 100, 103), over, Predicted("c", 100, 109)}, Settings());
  EXPECT_DOUBLE_EQ(scores[1].component.value, 0.0);
  EXPECT_EQ(scores[1].component.reason,
            "overcommitted: node CPU usage plus the pod's CPU exceeds capacity");
  EXPECT_TRUE(scores[1].known);
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);  // range is 3..9 W, not 3..100 W
  EXPECT_DOUBLE_EQ(scores[2].component.value, 0.0);
  auto failed_over = Failed("d", "model down");
  failed_over.overcommitted = true;
  EXPECT_DOUBLE_EQ(ScorePower({failed_over}, Settings())[0].component.value, 0.0);
}

TEST(ScorePowerTest, NegativeDeltaCountsAsZeroNotAsAnError) {
  // MinimizePower encoded errors as -1 and mapped every negative raw score to 0.
  auto scores = ScorePower(
      {Predicted("a", 100, 98), Predicted("b", 100, 100), Predicted("c", 100, 110)}, Settings());
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[1].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[2].component.value, 0.0);
  EXPECT_EQ(scores[0].delta_watts, -2.0);
  EXPECT_EQ(scores[0].component.reason, "-2.0 W, a decrease counted as +0.0 W");
}

TEST(ScorePowerTest, NonFiniteWattsAreUnknown) {
  auto scores =
      ScorePower({Predicted("a", 100, std::numeric_limits<double>::infinity())}, Settings(4));
  EXPECT_DOUBLE_EQ(scores[0].component.value, 4.0);
  EXPECT_EQ(scores[0].component.reason, "model returned a non-finite value");
}

TEST(ScorePowerTest, UnknownScoreIsClampedAndEmptyInputGivesNothing) {
  EXPECT_DOUBLE_EQ(ScorePower({Failed("a", "x")}, Settings(42))[0].component.value, 10.0);
  EXPECT_TRUE(ScorePower({}, Settings()).empty());
}

predict::PowerEstimate Filling(double now, double after, double fill_watts_per_core) {
  predict::PowerEstimate p = Predicted("", now, after);
  p.fill_watts_per_core = fill_watts_per_core;
  return p;
}

TEST(ScorePowerTest, TheFillObjectiveRanksByTheCostToFillNotThePodsWatts) {
  // An efficient node whose curve rises steeply from idle: the pod alone adds more there
  // (+12 W against +8 W), but filling it costs half as much per core.
  config::ScoringSettings fill;
  std::string summary;
  auto scores = ScorePower({Filling(60, 72, 1.2), Filling(200, 208, 2.4)}, fill, &summary);
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[1].component.value, 0.0);
  EXPECT_EQ(scores[0].component.reason, "+12.0 W, 1.20 W/core to fill");
  EXPECT_EQ(summary,
            "power: 2 nodes with a prediction cost 1.20 W/core (score 10) to 2.40 W/core (score 0) "
            "to fill; within 5 % of the cheapest is a tie");
  // The marginal objective, kept for comparison, ranks the other way.
  auto marginal = ScorePower({Filling(60, 72, 1.2), Filling(200, 208, 2.4)}, Settings());
  EXPECT_DOUBLE_EQ(marginal[0].component.value, 0.0);
  EXPECT_DOUBLE_EQ(marginal[1].component.value, 10.0);
}

TEST(ScorePowerTest, TheReasonShowsARaiseForThePodSlot) {
  // The pod-slot rule raised the first node's fill cost: the reason says by how much, after
  // the cost, so explain still reads the cost from it.
  predict::PowerEstimate raised = Filling(60, 72, 2.4);
  raised.fill_slot_factor = 2.0;
  auto scores = ScorePower({raised, Filling(200, 208, 2.0)}, config::ScoringSettings{});
  EXPECT_EQ(scores[0].component.reason,
            "+12.0 W, 2.40 W/core to fill (x2.00 for the pod slot it takes)");
  EXPECT_EQ(scores[1].component.reason, "+8.0 W, 2.00 W/core to fill");
  EXPECT_DOUBLE_EQ(scores[1].component.value, 10.0);
  EXPECT_LT(scores[0].component.value, 10.0);
}

TEST(ScorePowerTest, EveryReasonReadsTheSameWithOrWithoutAPodSlotRaise) {
  // A reason without a pod-slot raise is written on a short path, one with it on the general
  // one: apart from the raise's note they must read the same, for costs and watts of every
  // size, ties at the last digit, decreases and rounding to a whole number.
  std::vector<predict::PowerEstimate> plain, raised;
  const double values[] = {0,     0.04,   0.05,  0.15,    0.25,   0.949, 0.95,       1.005, 2.675,
                           9.995, 12.345, 99.95, 100.049, 1234.5, 1e6,   123456.785, 3e12,  9.9e12,
                           -0.04, -0.05,  -3.25, -999.95, 2e13,   -7e13, 2e14};
  for (double delta : values) {
    for (double cost : values) {
      predict::PowerEstimate e = Filling(100, 100 + delta, std::fabs(cost));
      plain.push_back(e);
      e.fill_slot_factor = 1.0000001;
      raised.push_back(e);
    }
  }
  const auto a = ScorePower(plain, config::ScoringSettings{});
  const auto b = ScorePower(raised, config::ScoringSettings{});
  ASSERT_EQ(a.size(), b.size());
  const std::string note = " (x1.00 for the pod slot it takes)";
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].component.reason + note, b[i].component.reason) << i;
  }
  EXPECT_EQ(a[1].component.reason, "+0.0 W, 0.04 W/core to fill");
}

TEST(ScorePowerTest, FillCostsAreOnALogScaleThatEndsAtTwiceTheCheapest) {
  config::ScoringSettings fill;
  fill.tie_tolerance = 0;
  auto scores = ScorePower(
      {Filling(0, 1, 1.0), Filling(0, 1, std::sqrt(2.0)), Filling(0, 1, 2.0), Filling(0, 1, 9.0)},
      fill);
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_NEAR(scores[1].component.value, 5.0, 1e-9);  // halfway on the log scale
  EXPECT_DOUBLE_EQ(scores[2].component.value, 0.0);
  EXPECT_DOUBLE_EQ(scores[3].component.value, 0.0);
}

TEST(ScorePowerTest, CostsWithinTheTieToleranceAllScoreTen) {
  config::ScoringSettings fill;  // tolerance 5 %
  std::string summary;
  auto scores = ScorePower({Filling(0, 1, 2.0), Filling(0, 1, 2.09)}, fill, &summary);
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[1].component.value, 10.0);
  EXPECT_EQ(summary,
            "power: all 2 nodes with a prediction cost 2.00 W/core to 2.09 W/core to fill, "
            "within 5 % of the cheapest: all score 10");
  auto apart = ScorePower({Filling(0, 1, 2.0), Filling(0, 1, 2.2)}, fill);
  EXPECT_LT(apart[1].component.value, 10.0);
}

TEST(ScorePowerTest, WithoutAFillCostEverywhereThePodsWattsRank) {
  // A pod without CPU has no fill cost; one node without it makes all rank by watts.
  config::ScoringSettings fill;
  fill.tie_tolerance = 0;
  auto scores = ScorePower({Filling(100, 102, 9.0), Predicted("b", 100, 110)}, fill);
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[1].component.value, 0.0);
  EXPECT_EQ(scores[0].component.reason, "+2.0 W");
}

TEST(PodPowerCpuCoresTest, RequestOrTheSchedulerDefault) {
  kube::PodResources pod;
  pod.cpu_request_millis = 750;
  pod.cpu_unspecified = false;
  std::string note;
  EXPECT_DOUBLE_EQ(PodPowerCpuCores(pod, &note), 0.75);
  EXPECT_TRUE(note.empty());
  kube::PodResources bare;
  bare.cpu_request_nonzero_millis = 200;
  EXPECT_DOUBLE_EQ(PodPowerCpuCores(bare, &note), 0.2);
  EXPECT_NE(note.find("default of 100m per container (200m)"), std::string::npos) << note;
}

}  // namespace
}  // namespace powerctl::scoring
