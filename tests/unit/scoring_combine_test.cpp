#include "core/scoring/combine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace powerctl::scoring {
namespace {

config::ScoringSettings Weights(double power, double policy, double real_usage) {
  config::ScoringSettings s;
  s.power_weight = power;
  s.policy_weight = policy;
  s.real_usage_weight = real_usage;
  s.unknown_score = 5;
  return s;
}

Component P(double v) {
  return {"power", v, "p"};
}
Component Pol(double v) {
  return {"policy", v, "q"};
}
Component R(double v) {
  return {"realUsage", v, "r"};
}

TEST(CombineTest, WeightedMeanOfPresentComponents) {
  // (2*8 + 1*2) / 3 = 6
  EXPECT_EQ(Combine({P(8), Pol(2)}, Weights(2, 1, 0)).score, 6);
  // only power present: its value, rounded
  EXPECT_EQ(Combine({P(7.4)}, Weights(2, 1, 1)).score, 7);
}

TEST(CombineTest, RoundsHalfUp) {
  EXPECT_EQ(Combine({P(6.5)}, Weights(1, 1, 0)).score, 7);
  EXPECT_EQ(Combine({P(7), Pol(6)}, Weights(1, 1, 0)).score, 7);  // 6.5
  EXPECT_EQ(Combine({P(0.5)}, Weights(1, 1, 0)).score, 1);
  EXPECT_EQ(Combine({P(6.49)}, Weights(1, 1, 0)).score, 6);
  EXPECT_EQ(Combine({P(6.3), Pol(6.7)}, Weights(0.7, 0.3, 0)).score, 6);  // 6.42
  // a mean of 6.5 that binary fractions make 6.4999999999999991 still rounds up
  EXPECT_EQ(Combine({P(10.0 / 3.0), Pol(29.0 / 3.0)}, Weights(1, 1, 0)).score, 7);
}

TEST(CombineTest, ZeroWeightComponentsAreKeptButNotCounted) {
  auto combined = Combine({P(10), Pol(0), R(0)}, Weights(1, 1, 0));
  EXPECT_EQ(combined.score, 5);  // (10 + 0) / 2
  ASSERT_EQ(combined.components.size(), 3u);
  EXPECT_EQ(combined.components[2], R(0));
  EXPECT_EQ(Combine({{"mystery", 0, "?"}, P(9)}, Weights(1, 1, 1)).score, 9);
}

TEST(CombineTest, AListHoldsOneComponentPerKindAndRefusesMore) {
  ComponentList list{P(1), Pol(2)};
  EXPECT_TRUE(list.push_back(R(3)));
  EXPECT_FALSE(list.push_back({"mystery", 4, "?"}));
  ASSERT_EQ(list.size(), ComponentList::kCapacity);
  EXPECT_EQ(list[2], R(3));
  EXPECT_EQ(list, (ComponentList{P(1), Pol(2), R(3)}));
  EXPECT_NE(list, (ComponentList{P(1), Pol(2)}));
  EXPECT_EQ(CombinedScoreOf(list, Weights(1, 1, 1)), 2);  // (1 + 2 + 3) / 3
}

TEST(CombineTest, NothingCountedGivesTheUnknownScore) {
  EXPECT_EQ(Combine({}, Weights(1, 1, 1)).score, 5);
  EXPECT_EQ(Combine({R(10)}, Weights(1, 1, 0)).score, 5);
  EXPECT_EQ(Combine({P(std::numeric_limits<double>::quiet_NaN())}, Weights(1, 1, 1)).score, 5);
}

TEST(CombineTest, ValuesAndResultStayInRange) {
  EXPECT_EQ(Combine({P(42)}, Weights(1, 0, 0)).score, 10);
  EXPECT_EQ(Combine({P(-3)}, Weights(1, 0, 0)).score, 0);
  auto s = Weights(1, 0, 0);
  s.unknown_score = 99;
  EXPECT_EQ(Combine({}, s).score, 10);
}

TEST(InverseMinMaxTest, LinearFromLowestToHighest) {
  EXPECT_DOUBLE_EQ(InverseMinMax(2, 2, 12, 1e-6), 10.0);
  EXPECT_DOUBLE_EQ(InverseMinMax(12, 2, 12, 1e-6), 0.0);
  EXPECT_DOUBLE_EQ(InverseMinMax(4.5, 2, 12, 1e-6), 7.5);
  EXPECT_DOUBLE_EQ(InverseMinMax(5, 5, 5, 1e-6), 10.0);
  EXPECT_DOUBLE_EQ(InverseMinMax(20, 2, 12, 1e-6), 0.0);  // clamped
}

}  // namespace
}  // namespace powerctl::scoring
