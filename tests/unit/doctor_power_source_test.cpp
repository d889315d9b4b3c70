#include "core/setup/doctor_power_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::setup {
namespace {

using telemetry::KeplerInventory;
using telemetry::PowerSource;
using ::testing::HasSubstr;

KeplerInventory Current() {
  KeplerInventory k;
  k.present.current = true;
  k.current_versions = {"v0.11.4"};
  return k;
}

KeplerInventory Legacy(bool idle) {
  KeplerInventory k;
  k.present.legacy = true;
  k.legacy_versions = {"v0.9.0"};
  k.legacy_idle_series = idle;
  return k;
}

TEST(DoctorPowerSourceTest, TheRightGenerationPassesWithItsVersion) {
  CheckResult r = JudgeKeplerInventory(Current(), PowerSource::kKepler);
  EXPECT_EQ(r.status, CheckStatus::kPass);
  EXPECT_EQ(r.message,
            "Kepler 0.10+ (v0.11.4) is in Prometheus: telemetry.powerSource kepler reads it");
  EXPECT_EQ(JudgeKeplerInventory(Legacy(true), PowerSource::kKepler07).status, CheckStatus::kPass);
}

TEST(DoctorPowerSourceTest, TheOtherGenerationAloneNamesTheSourceToSet) {
  CheckResult r = JudgeKeplerInventory(Legacy(true), PowerSource::kKepler);
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_THAT(r.message, HasSubstr("Kepler 0.7-0.9 (v0.9.0) is in Prometheus, not Kepler 0.10+"));
  EXPECT_EQ(r.fix, "set telemetry.powerSource to kepler-0.7");
  CheckResult back = JudgeKeplerInventory(Current(), PowerSource::kKepler07);
  EXPECT_EQ(back.status, CheckStatus::kWarn);
  EXPECT_EQ(back.fix, "set telemetry.powerSource to kepler");
}

TEST(DoctorPowerSourceTest, NoKeplerOrNoIdleSeriesWarn) {
  CheckResult none = JudgeKeplerInventory({}, PowerSource::kKepler);
  EXPECT_EQ(none.status, CheckStatus::kWarn);
  EXPECT_EQ(none.message, "no Kepler metrics in Prometheus");
  CheckResult dynamic_only = JudgeKeplerInventory(Legacy(false), PowerSource::kKepler07);
  EXPECT_EQ(dynamic_only.status, CheckStatus::kWarn);
  EXPECT_THAT(dynamic_only.fix, HasSubstr("--expose-estimated-idle-power"));
  // Mid-upgrade: both are there; the configured one reads.
  KeplerInventory both = Current();
  both.present.legacy = true;
  CheckResult mixed = JudgeKeplerInventory(both, PowerSource::kKepler);
  EXPECT_EQ(mixed.status, CheckStatus::kPass);
  EXPECT_THAT(mixed.message, HasSubstr("is there too"));
}

TEST(DoctorPowerSourceTest, OtherSourcesAreSkipped) {
  config::PowerctlConfig config;
  config.telemetry.power_source = "rapl";
  CheckResult r = CheckPowerSource(nullptr, config);
  EXPECT_EQ(r.status, CheckStatus::kSkip);
  EXPECT_EQ(r.message, "telemetry.powerSource is rapl: no exporter generation to tell");
}

}  // namespace
}  // namespace powerctl::setup
