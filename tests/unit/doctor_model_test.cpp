#include "core/setup/doctor_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::setup {
namespace {

using ::testing::HasSubstr;

predict::ModelAccuracy Accuracy(const std::map<std::string, std::pair<double, double>>& nodes) {
  std::vector<predict::NodePower> predicted;
  std::map<std::string, telemetry::MeasuredPower> measured;
  for (const auto& [name, watts] : nodes) {
    predict::NodePower p;
    p.node = name;
    p.watts_now = watts.first;
    predicted.push_back(p);
    measured[name] = telemetry::MeasuredPower{watts.second, ""};
  }
  return predict::CompareModel(predicted, measured);
}

config::PowerctlConfig Config() {
  config::PowerctlConfig c;
  c.telemetry.model_accuracy = true;
  c.telemetry.power_source = "rapl";
  return c;
}

TEST(DoctorModelTest, PassesWithinTheWarningThresholdAndSaysTheMeanError) {
  CheckResult r = JudgeModelAccuracy(Accuracy({{"a", {205, 200}}, {"b", {190, 200}}}), Config());
  EXPECT_EQ(r.id, "model-accuracy");
  EXPECT_EQ(r.status, CheckStatus::kPass);
  EXPECT_EQ(r.message,
            "2 nodes compared with measured rapl power: mean error 4%, worst b (-5%: 190 W "
            "predicted, 200 W measured)");
  EXPECT_EQ(r.fix, "");
}

TEST(DoctorModelTest, FailsANodeThirtyPerCentOffAndNamesItsFix) {
  CheckResult r = JudgeModelAccuracy(
      Accuracy({{"good", {201, 200}}, {"bad", {260, 200}}, {"meh", {230, 200}}}), Config());
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.message, HasSubstr("2 of 3 nodes are 10% or more off measured rapl power"));
  EXPECT_THAT(r.message, HasSubstr("bad (+30%: 260 W predicted, 200 W measured); meh (+15%"));
  EXPECT_EQ(r.fix, "fit each node's model to its measured power: powerctl calibrate bad meh");
}

TEST(DoctorModelTest, WarnsBetweenTheThresholds) {
  config::PowerctlConfig c = Config();
  c.telemetry.model_error_warn = 20;
  c.telemetry.model_error_fail = 40;
  CheckResult r = JudgeModelAccuracy(Accuracy({{"bad", {260, 200}}, {"meh", {230, 200}}}), c);
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_THAT(r.message, HasSubstr("1 of 2 nodes is 20% or more off"));
  EXPECT_EQ(r.fix, "fit each node's model to its measured power: powerctl calibrate bad");
}

TEST(DoctorModelTest, WarnsWhenNoNodeCouldBeCompared) {
  std::vector<predict::NodePower> predicted(1);
  predicted[0].node = "a";
  predicted[0].watts_now = 100;
  predict::ModelAccuracy acc = predict::CompareModel(
      predicted, {{"a", telemetry::MeasuredPower{std::nullopt, "no rapl power series"}}});
  CheckResult r = JudgeModelAccuracy(acc, Config());
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_EQ(r.message,
            "no node has both a prediction and a measured power (rapl): a: no rapl power series");
  EXPECT_THAT(r.fix, HasSubstr("powerctl predict -o wide"));
}

}  // namespace
}  // namespace powerctl::setup
