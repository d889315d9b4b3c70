#include "core/common/duration.h"

#include <gtest/gtest.h>

namespace powerctl {
namespace {

TEST(DurationTest, ParsesGoStyle) {
  EXPECT_EQ(ParseDuration("500ms")->count(), 500);
  EXPECT_EQ(ParseDuration("2s")->count(), 2000);
  EXPECT_EQ(ParseDuration("1m30s")->count(), 90000);
  EXPECT_EQ(ParseDuration("1.5s")->count(), 1500);
  EXPECT_EQ(ParseDuration("7d")->count(), 7 * 86400000LL);
  EXPECT_EQ(ParseDuration("0")->count(), 0);
}

TEST(DurationTest, RejectsBadInput) {
  for (const char* bad : {"", "5", "s", "-1s", "1x", "1.2.3s", "1e400s", "ms"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(DurationTest, FormatsShortestForm) {
  EXPECT_EQ(FormatDuration(Duration(0)), "0s");
  EXPECT_EQ(FormatDuration(Duration(250)), "250ms");
  EXPECT_EQ(FormatDuration(Duration(1500)), "1.5s");
  EXPECT_EQ(FormatDuration(Duration(90000)), "1m30s");
  EXPECT_EQ(FormatDuration(Duration(3600000)), "1h");
  for (const char* text : {"2s", "1m30s", "1.5s", "1h2m3s", "250ms"}) {
    EXPECT_EQ(FormatDuration(*ParseDuration(text)), text);
  }
}

}  // namespace
}  // namespace powerctl
