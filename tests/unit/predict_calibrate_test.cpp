#include "core/predict/builtin_model.h"
#include "core/predict/calibrate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace powerctl::predict {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

double CurveWatts(double u, double idle, double max, double curve) {
  return idle + (max - idle) * std::pow(u, curve);
}

// `n` utilisations spread evenly over [lo, hi].
std::vector<double> Spread(int n, double lo, double hi) {
  std::vector<double> u;
  for (int i = 0; i < n; ++i) u.push_back(lo + (hi - lo) * i / (n - 1));
  return u;
}

TEST(FitBuiltinModelTest, RecoversExactParametersOnTheGrid) {
  std::vector<PowerSample> samples;
  for (double u : Spread(200, 0.0, 1.0)) samples.push_back({u, CurveWatts(u, 95, 410, 1.35)});
  auto fit = FitBuiltinModel(samples);
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_THAT(fit->refused, IsEmpty());
  EXPECT_TRUE(fit->fitted);
  EXPECT_NEAR(fit->params.idle_watts, 95, 1e-6);
  EXPECT_NEAR(fit->params.max_watts, 410, 1e-6);
  EXPECT_NEAR(fit->params.curve, 1.35, 1e-9);
  EXPECT_NEAR(fit->r2, 1.0, 1e-12);
  EXPECT_NEAR(fit->rmse_watts, 0, 1e-6);
  EXPECT_EQ(fit->samples, 200u);
  EXPECT_EQ(fit->utilisation_min, 0.0);
  EXPECT_EQ(fit->utilisation_max, 1.0);
}

TEST(FitBuiltinModelTest, RecoversParametersFromNoisyPartialData) {
  // Real nodes rarely reach 100%: utilisation 5..75%, 8 W of measurement noise.
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> load(0.05, 0.75);
  std::normal_distribution<double> noise(0, 8);
  std::vector<PowerSample> samples;
  for (int i = 0; i < 2000; ++i) {
    double u = load(rng);
    samples.push_back({u, CurveWatts(u, 120, 350, 0.8) + noise(rng)});
  }
  auto fit = FitBuiltinModel(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_THAT(fit->refused, IsEmpty());
  EXPECT_NEAR(fit->params.idle_watts, 120, 5);
  EXPECT_NEAR(fit->params.max_watts, 350, 15);
  EXPECT_NEAR(fit->params.curve, 0.8, 0.1);
  EXPECT_NEAR(fit->rmse_watts, 8, 0.5);
  EXPECT_GT(fit->r2, 0.9);
  EXPECT_LT(fit->r2, 1.0);
}

TEST(FitBuiltinModelTest, TooFewSamplesAreRefused) {
  std::vector<PowerSample> samples;
  for (double u : Spread(10, 0.1, 0.9)) samples.push_back({u, CurveWatts(u, 100, 300, 1)});
  auto fit = FitBuiltinModel(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_FALSE(fit->fitted);
  EXPECT_EQ(fit->refused, "only 10 samples (need 30)");
}

TEST(FitBuiltinModelTest, ANarrowUtilisationRangeIsRefused) {
  std::vector<PowerSample> samples;
  for (double u : Spread(100, 0.30, 0.42)) samples.push_back({u, CurveWatts(u, 100, 300, 1)});
  auto fit = FitBuiltinModel(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_FALSE(fit->fitted);
  EXPECT_THAT(fit->refused, HasSubstr("0.30..0.42 (a spread of 0.12, need 0.20)"));
  // A lower threshold lets the same data through.
  CalibrationOptions lenient;
  lenient.min_utilisation_range = 0.1;
  EXPECT_THAT(FitBuiltinModel(samples, lenient)->refused, IsEmpty());
}

TEST(FitBuiltinModelTest, PowerUnrelatedToLoadIsAPoorFit) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> any(0, 1);
  std::vector<PowerSample> samples;
  // Watts rise weakly with load but mostly wander: R² far below 0.8.
  for (int i = 0; i < 500; ++i) {
    double u = any(rng);
    samples.push_back({u, 200 + 20 * u + 80 * any(rng)});
  }
  auto fit = FitBuiltinModel(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_TRUE(fit->fitted);
  EXPECT_THAT(fit->refused, HasSubstr("poor fit: R²"));
  EXPECT_LT(fit->r2, 0.8);
  CalibrationOptions any_fit;
  any_fit.min_r2 = 0;
  EXPECT_THAT(FitBuiltinModel(samples, any_fit)->refused, IsEmpty());
}

TEST(FitBuiltinModelTest, PowerThatFallsWithLoadIsRefused) {
  std::vector<PowerSample> samples;
  for (double u : Spread(100, 0, 1)) samples.push_back({u, 300 - 100 * u});
  auto fit = FitBuiltinModel(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_THAT(fit->refused, HasSubstr("max-watts must be greater than idle-watts"));
}

TEST(FitBuiltinModelTest, NonFiniteSamplesAreDroppedAndUtilisationClamped) {
  std::vector<PowerSample> samples;
  for (double u : Spread(50, 0, 1)) samples.push_back({u, CurveWatts(u, 100, 300, 1)});
  samples.push_back({std::numeric_limits<double>::quiet_NaN(), 5000});
  samples.push_back({0.5, std::numeric_limits<double>::infinity()});
  samples.push_back({1.02, 300});  // rate() overshoot: read as 100%
  auto fit = FitBuiltinModel(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->samples, 51u);
  EXPECT_EQ(fit->utilisation_max, 1.0);
  EXPECT_NEAR(fit->params.max_watts, 300, 1e-6);
}

TEST(FitBuiltinModelTest, AnInvertedGridIsAnError) {
  CalibrationOptions bad;
  bad.curve_min = 2;
  bad.curve_max = 1;
  auto fit = FitBuiltinModel({}, bad);
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.error().code, ErrorCode::kInvalidInput);
}

// The power curve form.

// A real server's published curve (SPECpower-like): steep from idle to 10 %, a jump at the top.
constexpr PowerCurve kServer = {58, 119, 139, 159, 177, 197, 217, 242, 273, 314, 357.5};

double On(const PowerCurve& c, double u) {
  const double x = u * 10;
  const auto i = std::min<std::size_t>(static_cast<std::size_t>(x), 9);
  return c[i] + (c[i + 1] - c[i]) * (x - static_cast<double>(i));
}

// `per_step` samples at each load k/10 for k in `steps`, exactly on the curve.
std::vector<PowerSample> AtSteps(const PowerCurve& c, std::vector<int> steps, int per_step) {
  std::vector<PowerSample> samples;
  for (int k : steps) {
    for (int i = 0; i < per_step; ++i) samples.push_back({k / 10.0, c[k]});
  }
  return samples;
}

Result<CurveFit> FitCurve(const std::vector<PowerSample>& samples,
                          const CalibrationOptions& options = {}) {
  auto exponent = FitBuiltinModel(samples, options);
  EXPECT_TRUE(exponent.ok());
  return FitPowerCurve(samples, *exponent, options);
}

TEST(FitPowerCurveTest, RecoversAKnownCurveFromNoisySamples) {
  // A graduated load schedule as SPECpower runs it: each 10 % level held, utilisation
  // wobbling 1 % around it, 5 W of measurement noise.
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> wobble(-0.01, 0.01);
  std::normal_distribution<double> noise(0, 5);
  std::vector<PowerSample> samples;
  for (int k = 0; k <= 10; ++k) {
    for (int i = 0; i < 200; ++i) {
      double u = std::clamp(k / 10.0 + wobble(rng), 0.0, 1.0);
      samples.push_back({u, On(kServer, u) + noise(rng)});
    }
  }
  auto fit = FitCurve(samples);
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_THAT(fit->refused, IsEmpty());
  EXPECT_TRUE(fit->fitted);
  EXPECT_THAT(fit->filled_from, IsEmpty());
  for (std::size_t k = 0; k < kPowerCurvePoints; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(fit->bins[k].load_percent, static_cast<int>(k * 10));
    EXPECT_EQ(fit->bins[k].samples, 200u);
    EXPECT_TRUE(fit->bins[k].measured);
    EXPECT_NEAR(fit->points[k], kServer[k], 3);
    EXPECT_EQ(fit->bins[k].watts, fit->points[k]);
  }
  EXPECT_NEAR(fit->rmse_watts, 5, 0.5);
  EXPECT_GT(fit->r2, 0.99);
  // The annotation's text parses back to the points the fit reports.
  auto parsed = ParsePowerCurve(FormatPowerCurve(fit->points));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, fit->points);
}

TEST(FitPowerCurveTest, TheEndStepsAreNotReadLowWhenLoadSweepsEvenly) {
  // History that sweeps the whole range evenly: the 100 % step only gets samples from 95 % up
  // (mean 97.5 %), the 0 % step only up to 5 %. Their plain means would be a quarter step off
  // (here 3.75 W of a 15 W step); moved to the step's load they are exact on a straight line.
  std::vector<PowerSample> samples;
  for (int i = 0; i <= 2000; ++i) {
    const double u = i / 2000.0;
    samples.push_back({u, 100 + 150 * u});
  }
  auto fit = FitCurve(samples);
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_THAT(fit->refused, IsEmpty());
  EXPECT_NEAR(fit->bins[10].mean_watts, 246.25, 0.1);  // what was measured, reported as such
  for (std::size_t k = 0; k < kPowerCurvePoints; ++k) {
    SCOPED_TRACE(k);
    EXPECT_NEAR(fit->points[k], 100 + 15.0 * static_cast<double>(k), 0.1);
  }
}

TEST(FitPowerCurveTest, FollowsAShapeOneExponentCannot) {
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<PowerSample> samples = AtSteps(kServer, all, 10);
  auto exponent = FitBuiltinModel(samples);
  ASSERT_TRUE(exponent.ok());
  auto fit = FitPowerCurve(samples, *exponent);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->points, kServer);
  EXPECT_NEAR(fit->rmse_watts, 0, 1e-9);
  EXPECT_NEAR(fit->r2, 1, 1e-12);
  EXPECT_GT(exponent->rmse_watts, 8);  // the steep start and the top jump, missed
}

TEST(FitPowerCurveTest, AFallingBinIsPooledWithItsNeighbourByWeight) {
  PowerCurve c = {100, 110, 120, 130, 140, 125, 150, 160, 170, 180, 190};
  std::vector<PowerSample> samples = AtSteps(c, {0, 1, 2, 3, 5, 6, 7, 8, 9, 10}, 5);
  for (int i = 0; i < 10; ++i) samples.push_back({0.4, 140});  // 10 samples at 40 %
  auto fit = FitCurve(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_THAT(fit->refused, IsEmpty());
  // (140 * 10 + 125 * 5) / 15: the 40 % and 50 % bins become one level.
  EXPECT_DOUBLE_EQ(fit->points[4], 135);
  EXPECT_DOUBLE_EQ(fit->points[5], 135);
  EXPECT_DOUBLE_EQ(fit->bins[5].mean_watts, 125);  // what was measured is still reported
  EXPECT_TRUE(fit->bins[5].measured);
  EXPECT_DOUBLE_EQ(fit->points[3], 130);  // the others stay as measured
  EXPECT_DOUBLE_EQ(fit->points[6], 150);
  for (std::size_t k = 1; k < kPowerCurvePoints; ++k) EXPECT_GE(fit->points[k], fit->points[k - 1]);
}

TEST(FitPowerCurveTest, AnEmptyTopBinIsFilledFromTheExponentFit) {
  // A node never busier than 90 %, following idle 100, max 300, curve 1.3 exactly.
  std::vector<PowerSample> samples;
  for (int k = 0; k <= 9; ++k) {
    for (int i = 0; i < 10; ++i) samples.push_back({k / 10.0, CurveWatts(k / 10.0, 100, 300, 1.3)});
  }
  auto fit = FitCurve(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_THAT(fit->refused, IsEmpty());
  EXPECT_EQ(fit->filled_from, "exponent fit");
  const CurveBin& top = fit->bins[10];
  EXPECT_FALSE(top.measured);
  EXPECT_EQ(top.samples, 0u);
  EXPECT_DOUBLE_EQ(top.watts, 300);  // the exponent fit's max-watts
  for (int k = 0; k <= 9; ++k) {
    EXPECT_TRUE(fit->bins[k].measured);
    EXPECT_NEAR(fit->points[k], CurveWatts(k / 10.0, 100, 300, 1.3), 0.05);  // 0.1 W rounding
  }
}

TEST(FitPowerCurveTest, ABinWithTooFewSamplesIsFilledAndAFilledPointGivesWay) {
  PowerCurve c = {100, 110, 120, 130, 140, 150, 160, 170, 180, 230, 240};
  std::vector<PowerSample> samples = AtSteps(c, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 20);
  samples.push_back({1.0, 250});  // two samples at 100 %: fewer than min_bin_samples (3)
  samples.push_back({1.0, 252});
  CalibrationFit exponent;  // a linear model whose 100 % point lies below the 90 % bin
  exponent.fitted = true;
  exponent.params.idle_watts = 100;
  exponent.params.max_watts = 200;
  exponent.params.curve = 1;
  auto fit = FitPowerCurve(samples, exponent);
  ASSERT_TRUE(fit.ok());
  EXPECT_THAT(fit->refused, IsEmpty());
  const CurveBin& top = fit->bins[10];
  EXPECT_FALSE(top.measured);
  EXPECT_EQ(top.samples, 2u);
  EXPECT_DOUBLE_EQ(top.mean_watts, 251);
  // Filled with 200 W, below the 90 % bin's 230: pooled as one sample against twenty.
  const double pooled = std::round((230.0 * 20 + 200) / 21 * 10) / 10;
  EXPECT_DOUBLE_EQ(fit->points[9], pooled);
  EXPECT_DOUBLE_EQ(fit->points[10], pooled);
}

TEST(FitPowerCurveTest, WithoutAUsableExponentFitGapsAreInterpolated) {
  PowerCurve c = {100, 110, 120, 0, 0, 0, 200, 210, 220, 230, 240};
  std::vector<PowerSample> samples = AtSteps(c, {0, 1, 2, 6, 7, 8, 9, 10}, 5);
  CalibrationFit unusable;  // e.g. it gave max-watts below idle-watts
  unusable.fitted = true;
  unusable.params.idle_watts = 300;
  unusable.params.max_watts = 200;
  unusable.refused = "the fit gives idle 300.0 W, max 200.0 W";
  auto fit = FitPowerCurve(samples, unusable);
  ASSERT_TRUE(fit.ok());
  EXPECT_THAT(fit->refused, IsEmpty());
  EXPECT_EQ(fit->filled_from, "interpolation");
  EXPECT_DOUBLE_EQ(fit->points[3], 140);
  EXPECT_DOUBLE_EQ(fit->points[4], 160);
  EXPECT_DOUBLE_EQ(fit->points[5], 180);
  EXPECT_FALSE(fit->bins[4].measured);
}

TEST(FitPowerCurveTest, WithoutAUsableExponentFitAMissingEndIsRefused) {
  PowerCurve c = {100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200};
  std::vector<PowerSample> samples = AtSteps(c, {0, 1, 2, 3, 4, 5, 6, 7, 8}, 5);
  auto fit = FitPowerCurve(samples, CalibrationFit{});
  ASSERT_TRUE(fit.ok());
  EXPECT_FALSE(fit->fitted);
  EXPECT_THAT(fit->refused, HasSubstr("the 100 % load step has 0 samples (need 3) and the "
                                      "exponent fit cannot fill it (it did not run)"));
  EXPECT_THAT(fit->refused, HasSubstr("fully busy periods"));
  // The same samples with the exponent fit: filled.
  auto filled = FitCurve(samples);
  ASSERT_TRUE(filled.ok());
  EXPECT_THAT(filled->refused, IsEmpty());
  EXPECT_NEAR(filled->points[10], 200, 0.05);
}

TEST(FitPowerCurveTest, RefusesWhatCannotBeACurve) {
  CalibrationOptions options;
  // Too few samples, too narrow a range: the exponent fit's reasons, word for word.
  std::vector<PowerSample> few;
  for (double u : Spread(10, 0.1, 0.9)) few.push_back({u, CurveWatts(u, 100, 300, 1)});
  EXPECT_EQ(FitCurve(few)->refused, "only 10 samples (need 30)");
  std::vector<PowerSample> narrow;
  for (double u : Spread(100, 0.30, 0.42)) narrow.push_back({u, CurveWatts(u, 100, 300, 1)});
  EXPECT_THAT(FitCurve(narrow)->refused, HasSubstr("0.30..0.42 (a spread of 0.12, need 0.20)"));

  // Enough spread, but one load step holds nearly all of it.
  std::vector<PowerSample> one_step;
  for (int i = 0; i < 40; ++i) one_step.push_back({0.3, 150});
  one_step.push_back({0.52, 170});
  one_step.push_back({0.52, 171});
  auto one = FitCurve(one_step);
  EXPECT_THAT(one->refused,
              HasSubstr("only 1 of the 11 load steps (0 %, 10 %, ..., 100 %) have at least 3"));

  // Power that falls with load pools into a flat line, which is no curve.
  std::vector<PowerSample> falling;
  for (double u : Spread(110, 0, 1)) falling.push_back({u, 300 - 100 * u});
  auto fall = FitCurve(falling);
  ASSERT_TRUE(fall.ok());
  EXPECT_TRUE(fall->fitted);
  EXPECT_THAT(fall->refused, HasSubstr("is not usable: power-curve: the watts at 100 % load must "
                                       "be above those at active idle"));

  // Power that barely follows load.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> any(0, 1);
  std::vector<PowerSample> wandering;
  for (int i = 0; i < 500; ++i) {
    double u = any(rng);
    wandering.push_back({u, 200 + 20 * u + 80 * any(rng)});
  }
  auto poor = FitCurve(wandering);
  ASSERT_TRUE(poor.ok());
  EXPECT_THAT(poor->refused, HasSubstr("poor fit: R²"));
  EXPECT_LT(poor->r2, 0.8);

  options.min_bin_samples = 0;
  EXPECT_EQ(FitPowerCurve(falling, CalibrationFit{}, options).error().code,
            ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace powerctl::predict
