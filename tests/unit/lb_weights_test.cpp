#include "core/lb/weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::lb {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

EndpointPrediction Delta(double delta, double now = 200) {
  EndpointPrediction p;
  p.watts_now = now;
  p.watts_after = now + delta;
  return p;
}

EndpointPrediction Failed(const std::string& error) {
  EndpointPrediction p;
  p.error = error;
  return p;
}

std::vector<int> Weights(const std::vector<EndpointWeight>& out) {
  std::vector<int> w;
  for (const EndpointWeight& e : out) w.push_back(e.weight);
  return w;
}

// ---- powerctl ------------------------------------------------------------------------------

TEST(LbWeightsTest, InverseToTheDeltaWithTheFloor) {
  // (0.5 + 0.1) / (d + 0.1): 1, 0.545, 0.286.
  auto out = ComputeWeights({Delta(0.5), Delta(1.0), Delta(2.0)});
  EXPECT_THAT(Weights(out), ElementsAre(100, 55, 29));
  EXPECT_EQ(out[0].basis, WeightBasis::kPredicted);
  EXPECT_EQ(out[0].reason, "+0.50 W per request, the cheapest");
  EXPECT_EQ(out[2].reason, "+2.00 W per request (the cheapest +0.50 W)");
  EXPECT_DOUBLE_EQ(*out[1].delta_watts, 1.0);
}

TEST(LbWeightsTest, EqualDeltasAreEqualWeights) {
  EXPECT_THAT(Weights(ComputeWeights({Delta(0.625, 100), Delta(0.625, 300)})),
              ElementsAre(100, 100));
}

TEST(LbWeightsTest, SubWattDeltasKeepTheirSignal) {
  // One 100m request on a 32-core node adds well under a watt. WAO v2 truncates both to 0 W
  // and weighs them equally; powerctl keeps the 3x difference.
  EXPECT_THAT(Weights(ComputeWeights({Delta(0.3), Delta(0.9)})), ElementsAre(100, 40));
  std::vector<int64_t> wao = {WaoV2NodeScore(200, 200.3), WaoV2NodeScore(200, 200.9)};
  EXPECT_THAT(WaoV2Weights(wao), ElementsAre(100, 100));
}

TEST(LbWeightsTest, NeverBelowOneNeverAboveHundred) {
  EXPECT_THAT(Weights(ComputeWeights({Delta(0.5), Delta(1e6)})), ElementsAre(100, 1));
}

TEST(LbWeightsTest, NegativeDeltaCountsAsFree) {
  auto out = ComputeWeights({Delta(-3), Delta(0.9)});
  EXPECT_THAT(Weights(out), ElementsAre(100, 10));
  EXPECT_DOUBLE_EQ(*out[0].delta_watts, 0);
}

TEST(LbWeightsTest, SaturatedNodesGetTheMinimum) {
  EndpointPrediction full = Delta(0);  // the built-in model is flat at full load
  full.saturated = true;
  auto out = ComputeWeights({full, Delta(2)});
  EXPECT_THAT(Weights(out), ElementsAre(1, 100));
  EXPECT_EQ(out[0].basis, WeightBasis::kSaturated);
  EXPECT_THAT(out[0].reason, HasSubstr("saturated"));
}

TEST(LbWeightsTest, UnknownGetsTheDefaultWithTheReason) {
  auto out = ComputeWeights({Delta(0.5), Failed("no CPU telemetry"), Delta(1.0)});
  EXPECT_THAT(Weights(out), ElementsAre(100, 50, 55));
  EXPECT_EQ(out[1].basis, WeightBasis::kUnknown);
  EXPECT_EQ(out[1].reason, "no prediction (no CPU telemetry); default weight");
  EXPECT_FALSE(out[1].delta_watts);

  EXPECT_THAT(Weights(ComputeWeights({Failed("x"), Delta(1)}, 7)), ElementsAre(7, 100));
  EXPECT_THAT(Weights(ComputeWeights({Failed("x")}, 0)), ElementsAre(1));
  EXPECT_THAT(Weights(ComputeWeights({Failed("x")}, 500)), ElementsAre(100));
}

TEST(LbWeightsTest, NothingPredictedIsAnEqualSplit) {
  EXPECT_THAT(Weights(ComputeWeights({Failed("a"), Failed("b"), Failed("c")})),
              ElementsAre(50, 50, 50));
  EXPECT_TRUE(ComputeWeights({}).empty());
}

TEST(LbWeightsTest, NonFiniteWattsAreUnknown) {
  EndpointPrediction nan;
  nan.watts_now = 100;
  nan.watts_after = std::numeric_limits<double>::quiet_NaN();
  auto out = ComputeWeights({nan, Delta(1)});
  EXPECT_THAT(Weights(out), ElementsAre(50, 100));
  EXPECT_THAT(out[0].reason, HasSubstr("no finite watts"));
}

// ---- WAO v1 (docs/reference/minimizepower.md): int(lowest * 100 / score) on absolute watts ---

TEST(LbWeightsTest, WaoV1CalcWeight) {
  EXPECT_TRUE(WaoV1Weights({}).empty());
  EXPECT_THAT(WaoV1Weights({150.0}), ElementsAre(1));  // one endpoint: weight 1
  EXPECT_THAT(WaoV1Weights({150.0, 200.0, 300.0}), ElementsAre(100, 75, 50));
  // Truncated, not rounded: 10689 / 114.62 = 93.26.
  EXPECT_THAT(WaoV1Weights({106.89, 114.62}), ElementsAre(100, 93));
  // A node without a score (-1 or none) gets 0: no traffic.
  EXPECT_THAT(WaoV1Weights({150.0, -1.0, 300.0, std::nullopt}), ElementsAre(100, 0, 50, 0));
  // No valid score at all: every endpoint 1.
  EXPECT_THAT(WaoV1Weights({-1.0, -1.0, std::nullopt}), ElementsAre(1, 1, 1));
}

TEST(LbWeightsTest, WaoV1WeighsAbsolutePowerNotTheRequestsCost) {
  // A big node (400 W now, +0.3 W per request) and a small one (150 W, +1.2 W): WAO v1
  // sends most traffic to the small one, powerctl to the big one.
  EXPECT_THAT(WaoV1Weights({400.0, 150.0}), ElementsAre(37, 100));
  EXPECT_THAT(Weights(ComputeWeights({Delta(0.3, 400), Delta(1.2, 150)})), ElementsAre(100, 31));
}

// ---- WAO v2 (docs/reference/minimizepower.md): round(100 * min(w+1) / (w_i+1)) on int deltas -

TEST(LbWeightsTest, WaoV2NormalizeScoresVectors) {
  EXPECT_THAT(WaoV2Weights({200, 250, 300}), ElementsAre(100, 80, 67));
  EXPECT_THAT(WaoV2Weights({0}), ElementsAre(100));
  EXPECT_THAT(WaoV2Weights({1}), ElementsAre(100));
  EXPECT_THAT(WaoV2Weights({200, 200000000}), ElementsAre(100, 0));
  EXPECT_THAT(WaoV2Weights({5, 2, -123, 0, 5, 0}), ElementsAre(17, 33, std::nullopt, 100, 17, 100));
  EXPECT_TRUE(WaoV2Weights({}).empty());
  EXPECT_THAT(WaoV2Weights({-1, -5}), ElementsAre(std::nullopt, std::nullopt));
}

TEST(LbWeightsTest, WaoV2NodeScoreTruncatesAndClamps) {
  EXPECT_EQ(WaoV2NodeScore(106.89, 114.62), 7);
  EXPECT_EQ(WaoV2NodeScore(200, 200.99), 0);
  EXPECT_EQ(WaoV2NodeScore(200, 190), 0);  // negative -> 0
  EXPECT_EQ(WaoV2NodeScore(0, std::numeric_limits<double>::quiet_NaN()), 0);
}

}  // namespace
}  // namespace powerctl::lb
