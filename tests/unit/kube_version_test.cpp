#include "core/common/kube_version.h"

#include <gtest/gtest.h>

namespace powerctl {
namespace {

TEST(KubeVersionTest, ParsesMinorPatchAndSuffixes) {
  auto v = KubeVersion::Parse("1.20");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->minor, 20);
  EXPECT_EQ(v->patch, -1);
  EXPECT_EQ(v->ImageTag(), "v1.20.15");  // no patch given: the line's newest, not ".0"
  auto w = KubeVersion::Parse("v1.30.2-eks-1234");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->MinorString(), "1.30");
  EXPECT_EQ(w->ImageTag(), "v1.30.2");
}

TEST(KubeVersionTest, RejectsOutOfRangeAndGarbage) {
  for (const char* bad :
       {"1.19", "1.100", "2.0", "", "1", "1.", "1.x", "v", "1.20.x", "1.20abc", "01.2000000000"}) {
    auto v = KubeVersion::Parse(bad);
    EXPECT_FALSE(v.ok()) << bad;
    if (!v.ok()) {
      EXPECT_EQ(v.error().code, ErrorCode::kInvalidInput);
    }
  }
  EXPECT_NE(KubeVersion::Parse("1.19").error().message.find("1.20 and later"), std::string::npos);
}

TEST(KubeVersionTest, ReleasesMustExistInEndedLines) {
  auto real = KubeVersion::ParseRelease("1.30.14");
  ASSERT_TRUE(real.ok());
  EXPECT_EQ(real->ImageTag(), "v1.30.14");
  auto missing = KubeVersion::ParseRelease("1.30.99");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(missing.error().message.find("ended with 1.30.14"), std::string::npos)
      << missing.error().message;
  // A running API server's version is not second-guessed (vendor builds re-release patches).
  EXPECT_TRUE(KubeVersion::Parse("1.30.99").ok());
}

TEST(KubeVersionTest, NewerPatchOfAMaintainedLineIsAWarningNotAnError) {
  KubeVersion newest = KubeVersion::ParseRelease("1.36").value();
  EXPECT_FALSE(newest.LineEnded());
  KubeVersion beyond =
      KubeVersion::ParseRelease("1.36." + std::to_string(newest.NewestKnownPatch() + 1)).value();
  EXPECT_NE(beyond.UnknownPatchWarning().find("newer than the newest 1.36 release"),
            std::string::npos);
  EXPECT_EQ(newest.UnknownPatchWarning(), "");
}

TEST(KubeVersionTest, EveryLineHasAKnownPatch) {
  for (int minor = KubeVersion::kMinMinor; minor <= KubeVersion::kNewestKnownMinor; ++minor) {
    KubeVersion v{.major = 1, .minor = minor};
    ASSERT_TRUE(v.Line().has_value()) << minor;
    EXPECT_GT(v.NewestKnownPatch(), 0) << minor;
    // Lines come every four months or so and are supported about fourteen.
    std::chrono::sys_days released{v.Line()->released}, ended{v.Line()->end_of_life};
    EXPECT_GT((ended - released).count(), 365) << minor;
    EXPECT_LT((ended - released).count(), 500) << minor;
    if (minor > KubeVersion::kMinMinor) {
      KubeVersion before{.major = 1, .minor = minor - 1};
      EXPECT_GT(released, std::chrono::sys_days{before.Line()->released}) << minor;
    }
  }
}

using std::chrono::day;
using std::chrono::month;
using std::chrono::sys_days;
using std::chrono::year;

sys_days On(int y, unsigned m, unsigned d) {
  return sys_days{std::chrono::year_month_day{year{y}, month{m}, day{d}}};
}

TEST(KubeVersionTest, ANewerMinorIsAcceptedWithAWarningAndTheNewestShape) {
  auto v = KubeVersion::ParseRelease("1.38");
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_FALSE(v->Known());
  EXPECT_EQ(v->SupportOn(On(2026, 12, 2)), KubeLineSupport::kNewerThanKnown);
  EXPECT_EQ(v->ImageTag(), "v1.38.0");  // no patch known: the line's first release
  auto warnings = v->Warnings(On(2026, 12, 2));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("1.38 is newer than the newest line this powerctl knows (1.37)"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("rendering the 1.37 scheduler configuration"), std::string::npos);
  EXPECT_NE(warnings[1].find("v1.38.0"), std::string::npos) << warnings[1];
  // With a patch given, only the line's warning.
  EXPECT_EQ(KubeVersion::ParseRelease("1.38.2")->Warnings(On(2026, 12, 2)).size(), 1u);
}

TEST(KubeVersionTest, AnEndedLineIsWarnedWithItsEndOfLife) {
  KubeVersion v = KubeVersion::ParseRelease("1.33").value();
  EXPECT_EQ(v.SupportOn(On(2026, 6, 28)), KubeLineSupport::kMaintained);  // its last day
  EXPECT_EQ(v.SupportOn(On(2026, 6, 29)), KubeLineSupport::kEnded);
  auto warnings = v.Warnings(On(2026, 12, 2));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("1.33 reached its end of life on 2026-06-28"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("the maintained lines are 1.35 to 1.37"), std::string::npos)
      << warnings[0];
  EXPECT_EQ(v.SupportSummary(On(2026, 12, 2)), "1.33, end of life since 2026-06-28");
}

TEST(KubeVersionTest, MaintainedLinesFollowTheDay) {
  EXPECT_EQ(KubeVersion::MaintainedMinors(On(2026, 12, 2)),
            (std::vector<std::string>{"1.35", "1.36", "1.37"}));
  EXPECT_EQ(KubeVersion::MaintainedMinors(On(2026, 10, 27)),
            (std::vector<std::string>{"1.34", "1.35", "1.36", "1.37"}));
  KubeVersion v = KubeVersion::ParseRelease("1.36").value();
  EXPECT_TRUE(v.Warnings(On(2026, 12, 2)).empty());
  EXPECT_EQ(v.SupportSummary(On(2026, 12, 2)), "1.36, maintained until 2027-06-28");
}

TEST(KubeVersionTest, SchedulerSkewFollowsThePolicy) {
  auto v = [](const char* text) { return KubeVersion::Parse(text).value(); };
  EXPECT_EQ(SchedulerSkewProblem(v("1.36"), v("1.36")), "");
  EXPECT_EQ(SchedulerSkewProblem(v("1.36"), v("1.35")), "");
  EXPECT_NE(SchedulerSkewProblem(v("1.36"), v("1.37")).find("newer than the API server"),
            std::string::npos);
  EXPECT_NE(SchedulerSkewProblem(v("1.36"), v("1.34")).find("2 minors older"), std::string::npos);
}

}  // namespace
}  // namespace powerctl
