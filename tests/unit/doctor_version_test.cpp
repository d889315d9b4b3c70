#include "core/setup/doctor_version.h"

#include <gtest/gtest.h>

namespace powerctl::setup {
namespace {

std::chrono::sys_days On(int y, unsigned m, unsigned d) {
  return std::chrono::sys_days{std::chrono::year_month_day{
      std::chrono::year{y}, std::chrono::month{m}, std::chrono::day{d}}};
}

CheckResult Check(const std::string& server, std::optional<std::string> image) {
  return CheckKubeVersion({server, std::move(image), On(2026, 12, 2)});
}

TEST(DoctorVersionTest, MaintainedLineWithAMatchingSchedulerPasses) {
  CheckResult r = Check("v1.36.3", "registry.k8s.io/kube-scheduler:v1.36.3");
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.message;
  EXPECT_NE(r.message.find("1.36, maintained until 2027-06-28"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("within the skew policy"), std::string::npos) << r.message;
  // One minor older is allowed; a provider's build suffix is not second-guessed.
  EXPECT_EQ(Check("v1.36.3-eks-1a2b", "registry.k8s.io/kube-scheduler:v1.35.4").status,
            CheckStatus::kPass);
  EXPECT_EQ(Check("v1.37.1", std::nullopt).status, CheckStatus::kPass);
}

TEST(DoctorVersionTest, EndedLineWarnsWithItsDate) {
  CheckResult r = Check("v1.33.5", "registry.k8s.io/kube-scheduler:v1.33.5");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_NE(r.message.find("end of life since 2026-06-28"), std::string::npos) << r.message;
  EXPECT_NE(r.fix.find("maintained line"), std::string::npos) << r.fix;
}

TEST(DoctorVersionTest, NewerMinorThanKnownWarns) {
  CheckResult r = Check("v1.38.0", std::nullopt);
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_NE(r.message.find("newer than this powerctl knows"), std::string::npos) << r.message;
  EXPECT_NE(r.fix.find("1.37 configuration"), std::string::npos) << r.fix;
}

TEST(DoctorVersionTest, SkewedOrUnreadableSchedulerImageWarns) {
  CheckResult newer = Check("v1.35.2", "registry.k8s.io/kube-scheduler:v1.36.0");
  EXPECT_EQ(newer.status, CheckStatus::kWarn);
  EXPECT_NE(newer.message.find("newer than the API server"), std::string::npos) << newer.message;
  EXPECT_NE(newer.fix.find("powerctl apply"), std::string::npos);
  CheckResult older = Check("v1.37.0", "registry.k8s.io/kube-scheduler:v1.35.0");
  EXPECT_EQ(older.status, CheckStatus::kWarn);
  CheckResult custom = Check("v1.36.0", "example.com/my-scheduler@sha256:abc");
  EXPECT_EQ(custom.status, CheckStatus::kWarn);
  EXPECT_NE(custom.message.find("names no Kubernetes version"), std::string::npos);
}

TEST(DoctorVersionTest, UnsupportedOrUnreadableServerVersion) {
  EXPECT_EQ(Check("v1.19.4", std::nullopt).status, CheckStatus::kFail);
  CheckResult unread = Check("", std::nullopt);
  EXPECT_EQ(unread.status, CheckStatus::kWarn);
  EXPECT_NE(unread.message.find("could not be read"), std::string::npos);
}

}  // namespace
}  // namespace powerctl::setup
