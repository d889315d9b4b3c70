#include "core/predict/calibrate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace powerctl::predict {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

double Watts(double u, double idle, double max, double curve) {
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
  for (double u : Spread(200, 0.0, 1.0)) samples.push_back({u, Watts(u, 95, 410, 1.35)});
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
    samples.push_back({u, Watts(u, 120, 350, 0.8) + noise(rng)});
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
  for (double u : Spread(10, 0.1, 0.9)) samples.push_back({u, Watts(u, 100, 300, 1)});
  auto fit = FitBuiltinModel(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_FALSE(fit->fitted);
  EXPECT_EQ(fit->refused, "only 10 samples (need 30)");
}

TEST(FitBuiltinModelTest, ANarrowUtilisationRangeIsRefused) {
  std::vector<PowerSample> samples;
  for (double u : Spread(100, 0.30, 0.42)) samples.push_back({u, Watts(u, 100, 300, 1)});
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
  for (double u : Spread(50, 0, 1)) samples.push_back({u, Watts(u, 100, 300, 1)});
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

}  // namespace
}  // namespace powerctl::predict
