#include "core/common/kube_version.h"

#include <gtest/gtest.h>

namespace powerctl {
namespace {

TEST(KubeVersionTest, ParsesMinorPatchAndSuffixes) {
  auto v = KubeVersion::Parse("1.20");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->minor, 20);
  EXPECT_EQ(v->patch, -1);
  EXPECT_EQ(v->ImageTag(), "v1.20.0");
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

}  // namespace
}  // namespace powerctl
