// The built-in model's measured-curve form: parsing the annotation, following the curve, and
// the cheapest fill slope the power score ranks nodes by.
#include "core/predict/builtin_model.h"
#include "core/predict/node_params.h"

#include <gtest/gtest.h>

namespace powerctl::predict {
namespace {

// A modern server's shape: a steep step from idle to 10 %, flat, then a jump near 100 %.
constexpr const char* kSteep = "50,120,140,160,180,200,220,240,270,320,420";

ModelInputs At(double fraction) {
  ModelInputs in;
  in.cpu_fraction = static_cast<float>(fraction);
  return in;
}

BuiltinParams Curve(const std::string& text, double temperature_factor = 0) {
  auto curve = ParsePowerCurve(text);
  EXPECT_TRUE(curve.ok()) << (curve.ok() ? "" : curve.error().message);
  BuiltinParams params;
  params.temperature_factor = temperature_factor;
  return WithPowerCurve(params, *curve);
}

TEST(PowerCurveTest, ParsesElevenWattsAndFormatsThemBack) {
  auto curve = ParsePowerCurve(" 58, 119,139,159,177,197,217,242,273,314,357.5");
  ASSERT_TRUE(curve.ok()) << curve.error().message;
  EXPECT_DOUBLE_EQ((*curve)[0], 58);
  EXPECT_DOUBLE_EQ((*curve)[10], 357.5);
  EXPECT_EQ(FormatPowerCurve(*curve), "58,119,139,159,177,197,217,242,273,314,357.5");
}

TEST(PowerCurveTest, RefusesWhatIsNotAMeasuredCurve) {
  for (const char* bad :
       {"", "1,2,3", "50,60,70,80,90,100,110,120,130,140",
        "50,60,70,80,90,100,110,120,130,140,150,160", "50,60,x,80,90,100,110,120,130,140,150",
        "50,60,70,80,90,100,110,120,130,140,1e3", "-5,60,70,80,90,100,110,120,130,140,150"}) {
    auto curve = ParsePowerCurve(bad);
    EXPECT_FALSE(curve.ok()) << bad;
    if (!curve.ok()) {
      EXPECT_EQ(curve.error().code, ErrorCode::kInvalidInput);
    }
  }
  auto flat = ParsePowerCurve("100,100,100,100,100,100,100,100,100,100,100");
  ASSERT_FALSE(flat.ok());
  EXPECT_NE(flat.error().message.find("above those at active idle"), std::string::npos);
  auto falls = ParsePowerCurve("50,120,140,160,120,200,220,240,270,320,420");
  ASSERT_FALSE(falls.ok());
  EXPECT_NE(falls.error().message.find("falls from 160 W at 30 % to 120 W at 40 %"),
            std::string::npos)
      << falls.error().message;
}

TEST(PowerCurveTest, SmallWobblesAreRaisedSoTheCurveNeverFalls) {
  // Measured points can dip by a watt or two; within 2 % of the top they are lifted.
  auto curve = ParsePowerCurve("50,120,140,138,180,200,220,240,270,320,420");
  ASSERT_TRUE(curve.ok()) << curve.error().message;
  EXPECT_DOUBLE_EQ((*curve)[3], 140);
}

TEST(PowerCurveTest, WattsFollowTheCurveAndHeatScalesOnlyTheLoadPart) {
  BuiltinParams p = Curve(kSteep);
  EXPECT_DOUBLE_EQ(*BuiltinWatts(At(0), p), 50);
  // Halfway from 160 to 180 (the model's input is a float: 0.35 is 0.3499999940...).
  EXPECT_NEAR(*BuiltinWatts(At(0.35), p), 170, 1e-4);
  EXPECT_DOUBLE_EQ(*BuiltinWatts(At(1), p), 420);
  EXPECT_DOUBLE_EQ(*BuiltinWatts(At(1.7), p), 420);  // clamped
  BuiltinParams hot = Curve(kSteep, 0.5);
  ModelInputs in = At(0.5);
  in.ambient = in.cpu1 = in.cpu2 = 1;  // the hottest the labels allow
  EXPECT_DOUBLE_EQ(*BuiltinWatts(in, hot), 50 + 150 * 1.5);
}

TEST(PowerCurveTest, TheCheapestFillSlopeLooksPastTheNextStep) {
  BuiltinParams p = Curve(kSteep);
  // From idle, the next 10 % cost 700 W per unit of load; filling to 70 % costs 271 per unit,
  // the cheapest chord (the jump after 80 % makes the full chord dearer: 370).
  EXPECT_NEAR(*CheapestFillSlope(At(0), 0.1, p), (240.0 - 50) / 0.7, 1e-9);
  // From 80 %, the only way up is the jump.
  EXPECT_NEAR(*CheapestFillSlope(At(0.8), 0.9, p), (320.0 - 270) / 0.1, 1e-9);
  // The pod's own level counts even between points.
  EXPECT_NEAR(*CheapestFillSlope(At(0.85), 0.95, p), (370.0 - 295) / 0.1, 1e-3);
  EXPECT_FALSE(CheapestFillSlope(At(0.5), 0.5, p).ok());
}

TEST(PowerCurveTest, TheFillSlopeStopsWhereTheNodeCanNoLongerBeFilled) {
  BuiltinParams p = Curve(kSteep);
  // Capped at 40 %, the chord to 70 % is out of reach: the cheapest is the one to 40 %.
  EXPECT_NEAR(*CheapestFillSlope(At(0), 0.1, p, 0.4), (180.0 - 50) / 0.4, 1e-9);
  // Between points: the cap itself is a candidate (35 % is halfway from 160 to 180 W).
  EXPECT_NEAR(*CheapestFillSlope(At(0), 0.1, p, 0.35), (170.0 - 50) / 0.35, 1e-9);
  // A cap below the pod's own level is the pod's level.
  EXPECT_NEAR(*CheapestFillSlope(At(0), 0.1, p, 0.05), (120.0 - 50) / 0.1, 1e-9);
  // A concave power law fills to the cap, not to full load.
  BuiltinParams concave{100, 300, 0.5, 0};
  EXPECT_NEAR(*CheapestFillSlope(At(0), 0.25, concave, 0.64), 200 * 0.8 / 0.64, 1e-9);
}

TEST(PowerCurveTest, ThePowerLawFillsToFullWhenConcaveAndStepByStepWhenConvex) {
  BuiltinParams concave{100, 300, 0.5, 0};
  EXPECT_NEAR(*CheapestFillSlope(At(0.25), 0.3, concave), (300.0 - 200) / 0.75, 1e-9);
  BuiltinParams convex{100, 300, 2.0, 0};
  EXPECT_NEAR(*CheapestFillSlope(At(0.5), 0.6, convex), 200 * (0.36 - 0.25) / 0.1, 1e-9);
}

TEST(PowerCurveTest, TheAnnotationReplacesIdleMaxAndCurve) {
  auto params = BuiltinParamsFromAnnotations(
      {{kIdleWattsAnnotation, "10"}, {kMaxWattsAnnotation, "20"}, {kPowerCurveAnnotation, kSteep}});
  ASSERT_TRUE(params.ok()) << params.error().message;
  ASSERT_NE(params->points, nullptr);
  EXPECT_DOUBLE_EQ(params->idle_watts, 50);
  EXPECT_DOUBLE_EQ(params->max_watts, 420);
  auto bad = BuiltinParamsFromAnnotations({{kPowerCurveAnnotation, "1,2,3"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("annotation powerctl.io/power-curve=\"1,2,3\""),
            std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace powerctl::predict
