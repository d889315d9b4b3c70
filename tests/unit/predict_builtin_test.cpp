#include "core/predict/builtin_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace powerctl::predict {
namespace {

BuiltinParams Params(double idle, double max, double curve, double factor) {
  BuiltinParams p;
  p.idle_watts = idle;
  p.max_watts = max;
  p.curve = curve;
  p.temperature_factor = factor;
  return p;
}

double Watts(const ModelInputs& in, const BuiltinParams& p) {
  Result<double> w = BuiltinWatts(in, p);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().message);
  return w.ok() ? *w : -1;
}

TEST(BuiltinModelTest, DocumentedValues) {
  const BuiltinParams p = Params(100, 300, 1.0, 0.1);
  EXPECT_DOUBLE_EQ(Watts({0.0f, 0.5f, 0.5f, 0.5f}, p), 100);  // idle whatever the temperature
  EXPECT_DOUBLE_EQ(Watts({1.0f, 0.0f, 0.0f, 0.0f}, p), 300);  // max at the cool end
  EXPECT_DOUBLE_EQ(Watts({0.5f, 0.0f, 0.0f, 0.0f}, p), 200);
  // Hottest: 10% more dynamic power. 100 + 200 * 0.5 * (1 + 0.1 * 1) = 210.
  EXPECT_DOUBLE_EQ(Watts({0.5f, 1.0f, 1.0f, 1.0f}, p), 210);
  // curve 2: 100 + 200 * 0.25 = 150.
  EXPECT_DOUBLE_EQ(Watts({0.5f, 0.0f, 0.0f, 0.0f}, Params(100, 300, 2.0, 0)), 150);
  // curve 0.5 rises early: 100 + 200 * sqrt(0.25) = 200.
  EXPECT_DOUBLE_EQ(Watts({0.25f, 0.0f, 0.0f, 0.0f}, Params(100, 300, 0.5, 0)), 200);
}

TEST(BuiltinModelTest, DefaultsAreValid) {
  EXPECT_TRUE(ValidateBuiltinParams(BuiltinParams{}).ok());
  EXPECT_DOUBLE_EQ(Watts({1.0f, 0, 0, 0}, BuiltinParams{}), 350);
}

TEST(BuiltinModelTest, ClampsInputs) {
  const BuiltinParams p = Params(120, 350, 1.3, 0.2);
  EXPECT_DOUBLE_EQ(Watts({1.7f, 0.3f, 0.4f, 0.5f}, p), Watts({1.0f, 0.3f, 0.4f, 0.5f}, p));
  EXPECT_DOUBLE_EQ(Watts({-0.4f, 0.3f, 0.4f, 0.5f}, p), 120);
  // MinimizePower does not clamp normalised temperatures; readings outside the labelled range
  // must not extrapolate.
  EXPECT_DOUBLE_EQ(Watts({0.5f, 3.0f, -2.0f, 1.5f}, p), Watts({0.5f, 1.0f, 0.0f, 1.0f}, p));
}

TEST(BuiltinModelTest, MonotoneNonDecreasingInCpuOverGrid) {
  int checked = 0;
  for (double curve : {0.05, 0.25, 0.5, 0.8, 1.0, 1.5, 2.0, 3.0, 4.0}) {
    for (double factor : {0.0, 0.1, 0.5, 1.0}) {
      for (auto [idle, max] :
           {std::pair{0.0, 1.0}, {120.0, 350.0}, {80.0, 80.5}, {500.0, 2400.0}}) {
        for (float temp : {-1.0f, 0.0f, 0.3f, 0.5f, 1.0f, 2.0f}) {
          const BuiltinParams p = Params(idle, max, curve, factor);
          double previous = -1;
          for (int step = -20; step <= 120; ++step) {  // cpu -0.2 .. 1.2 in 1% steps
            const float cpu = static_cast<float>(step) / 100.0f;
            const double w = Watts({cpu, temp, temp * 0.5f, 1.0f - temp}, p);
            ASSERT_GE(w, previous) << "curve=" << curve << " factor=" << factor << " idle=" << idle
                                   << " cpu=" << cpu << " temp=" << temp;
            ASSERT_GE(w, idle);
            ASSERT_LE(w, idle + (max - idle) * (1 + factor) + 1e-9);
            previous = w;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100000);
}

TEST(BuiltinModelTest, HotterNodesCostMorePerAddedCpu) {
  const BuiltinParams p = Params(120, 350, 1.0, 0.3);
  const double cool = Watts({0.6f, 0.2f, 0.2f, 0.2f}, p) - Watts({0.4f, 0.2f, 0.2f, 0.2f}, p);
  const double hot = Watts({0.6f, 0.9f, 0.9f, 0.9f}, p) - Watts({0.4f, 0.9f, 0.9f, 0.9f}, p);
  EXPECT_GT(hot, cool);
}

TEST(BuiltinModelTest, ValidatesParams) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    BuiltinParams params;
    const char* message;
  };
  const Case bad[] = {
      {Params(-1, 300, 1, 0.1), "idle-watts"},     {Params(nan, 300, 1, 0.1), "idle-watts"},
      {Params(100, 100, 1, 0.1), "greater than"},  {Params(100, 90, 1, 0.1), "greater than"},
      {Params(100, inf, 1, 0.1), "max-watts"},     {Params(100, 2e5, 1, 0.1), "max-watts"},
      {Params(100, 300, 0, 0.1), "curve"},         {Params(100, 300, -1, 0.1), "curve"},
      {Params(100, 300, 4.01, 0.1), "curve"},      {Params(100, 300, nan, 0.1), "curve"},
      {Params(100, 300, 1, -0.01), "temperature"}, {Params(100, 300, 1, 1.01), "temperature"},
      {Params(100, 300, 1, nan), "temperature"},
  };
  for (const Case& c : bad) {
    Status s = ValidateBuiltinParams(c.params);
    ASSERT_FALSE(s.ok()) << c.message;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(s.error().message.find(c.message), std::string::npos) << s.error().message;
    EXPECT_FALSE(BuiltinWatts({0.5f, 0.5f, 0.5f, 0.5f}, c.params).ok());
  }
  for (const BuiltinParams& good :
       {Params(0, 1, 4, 0), Params(0, 0.001, 0.001, 1), Params(120, 350, 1, 0.1)}) {
    EXPECT_TRUE(ValidateBuiltinParams(good).ok());
  }
}

TEST(BuiltinModelTest, RejectsNonFiniteInputs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (ModelInputs in : {ModelInputs{nan, 0, 0, 0}, ModelInputs{0.5f, nan, 0, 0},
                         ModelInputs{0.5f, 0, inf, 0}, ModelInputs{0.5f, 0, 0, -inf}}) {
    Result<double> w = BuiltinWatts(in, BuiltinParams{});
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.error().message, "model input is not a finite number");
  }
}

TEST(BuiltinModelTest, PredictorUsesEachRowsParamsAndKeepsOrder) {
  std::vector<PredictionRow> rows(3);
  rows[0].builtin = Params(100, 300, 1, 0);
  rows[0].inputs = {0.5f, 0, 0, 0};
  rows[1].builtin = Params(100, 50, 1, 0);  // invalid: max below idle
  rows[2].builtin = Params(200, 400, 1, 0);
  rows[2].inputs = {0.25f, 0, 0, 0};
  BuiltinPredictor predictor;
  std::vector<Prediction> out = predictor.Predict(rows, std::chrono::milliseconds(0));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_DOUBLE_EQ(out[0].watts.value_or(-1), 200);
  EXPECT_FALSE(out[1].watts.has_value());
  EXPECT_EQ(out[1].error, "built-in model: max-watts must be greater than idle-watts");
  EXPECT_DOUBLE_EQ(out[2].watts.value_or(-1), 250);
  EXPECT_TRUE(out[0].error.empty());
}

}  // namespace
}  // namespace powerctl::predict
