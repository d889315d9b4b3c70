#include "core/common/decimal.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace powerctl {
namespace {

TEST(ParseDecimalTest, ReadsWhatGoParseFloatReads) {
  EXPECT_EQ(ParseDecimal("18"), 18.0);
  EXPECT_EQ(ParseDecimal("36.5"), 36.5);
  EXPECT_EQ(ParseDecimal("-5.25"), -5.25);
  EXPECT_EQ(ParseDecimal("+7"), 7.0);
  EXPECT_EQ(ParseDecimal(".5"), 0.5);
  EXPECT_EQ(ParseDecimal("5."), 5.0);
  EXPECT_EQ(ParseDecimal("1e2"), 100.0);
  EXPECT_EQ(ParseDecimal("2.5E-1"), 0.25);
  EXPECT_EQ(ParseDecimal("1e+1"), 10.0);
}

TEST(ParseDecimalTest, RejectsHexInfinityNanAndNoise) {
  for (const char* text : {"0x12", "0X1p4", "inf", "-Inf",  "infinity", "nan",  "NaN", "",
                           " 18",  "18 ",   "1,5", "1_000", "--1",      "+-1",  ".",   "-",
                           "e5",   "1e",    "1e+", "1.2.3", "18C",      "1e999"}) {
    EXPECT_EQ(ParseDecimal(text), std::nullopt) << text;
  }
}

TEST(ParseDecimalTest, FixedFormIsDigitsWithAnOptionalFraction) {
  EXPECT_EQ(ParseDecimal("135.5", DecimalForm::kFixed), 135.5);
  EXPECT_EQ(ParseDecimal("-0.25", DecimalForm::kFixed), -0.25);
  EXPECT_EQ(ParseDecimal("120", DecimalForm::kFixed), 120.0);
  for (const char* text : {"+1", "1e2", ".5", "5.", "0x10", "inf"}) {
    EXPECT_EQ(ParseDecimal(text, DecimalForm::kFixed), std::nullopt) << text;
  }
}

TEST(FormatDecimalTest, TrimsTrailingZerosAndNeverUsesAnExponent) {
  EXPECT_EQ(FormatDecimal(135.5, 2), "135.5");
  EXPECT_EQ(FormatDecimal(2.0, 3), "2");
  EXPECT_EQ(FormatDecimal(1.23456, 2), "1.23");
  EXPECT_EQ(FormatDecimal(-0.0001, 2), "0");
  EXPECT_EQ(FormatDecimal(1e7, 1), "10000000");
  // What FormatDecimal writes, the fixed-form reader reads back.
  EXPECT_EQ(ParseDecimal(FormatDecimal(349.876, 2), DecimalForm::kFixed), 349.88);
}

}  // namespace
}  // namespace powerctl
