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
       {"1.19", "1.35", "2.0", "", "1", "1.", "1.x", "v", "1.20.x", "1.20abc", "01.2000000000"}) {
    auto v = KubeVersion::Parse(bad);
    EXPECT_FALSE(v.ok()) << bad;
    if (!v.ok()) {
      EXPECT_EQ(v.error().code, ErrorCode::kInvalidInput);
    }
  }
  EXPECT_NE(KubeVersion::Parse("1.35").error().message.find("1.20 to 1.34"), std::string::npos);
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
  KubeVersion newest = KubeVersion::ParseRelease("1.34").value();
  EXPECT_FALSE(newest.LineEnded());
  KubeVersion beyond =
      KubeVersion::ParseRelease("1.34." + std::to_string(newest.NewestKnownPatch() + 1)).value();
  EXPECT_NE(beyond.UnknownPatchWarning().find("newer than the newest 1.34 release"),
            std::string::npos);
  EXPECT_EQ(newest.UnknownPatchWarning(), "");
}

TEST(KubeVersionTest, EveryLineHasAKnownPatch) {
  for (int minor = KubeVersion::kMinMinor; minor <= KubeVersion::kMaxMinor; ++minor) {
    KubeVersion v{.major = 1, .minor = minor};
    EXPECT_GT(v.NewestKnownPatch(), 0) << minor;
  }
}

}  // namespace
}  // namespace powerctl
