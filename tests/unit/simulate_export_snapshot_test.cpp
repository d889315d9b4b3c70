#include "core/simulate/export_snapshot.h"

#include <gtest/gtest.h>

#include <cmath>

namespace powerctl::simulate {
namespace {

Snapshot TwoNodes() {
  Snapshot s;
  s.nodes.resize(2);
  s.nodes[0].name = "a";
  s.nodes[1].name = "b";
  return s;
}

std::vector<double> Curve(double idle) {
  std::vector<double> out;
  for (std::size_t i = 0; i < kCurvePoints; ++i)
    out.push_back(idle + 20.0 * static_cast<double>(i));
  return out;
}

TEST(ExportSnapshotTest, MeasuredCurvesBecomeTheNodesTruePower) {
  Snapshot s = TwoNodes();
  EXPECT_EQ(AddMeasuredCurves(s, {{"a", Curve(100)}, {"gone", Curve(50)}}), 1U);
  EXPECT_EQ(s.nodes[0].power_curve, Curve(100));
  EXPECT_TRUE(s.nodes[1].power_curve.empty());
}

TEST(ExportSnapshotTest, CurvesOfTheWrongLengthOrWithoutWattsAreLeftOut) {
  Snapshot s = TwoNodes();
  std::vector<double> with_nan = Curve(100);
  with_nan[3] = std::nan("");
  EXPECT_EQ(AddMeasuredCurves(s, {{"a", {100, 200}}, {"b", with_nan}}), 0U);
  EXPECT_TRUE(s.nodes[0].power_curve.empty());
  EXPECT_TRUE(s.nodes[1].power_curve.empty());
}

}  // namespace
}  // namespace powerctl::simulate
