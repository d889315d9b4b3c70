#include "core/report/power_report.h"

#include <gtest/gtest.h>

namespace powerctl::report {
namespace {

TEST(PowerReportTest, ExtenderPathGoesThroughTheServiceProxyToTheOpsPort) {
  config::PowerctlConfig config;
  config.namespace_ = "power";
  EXPECT_EQ(ExtenderPredictionsPath(config, {"a", "b.example"}, "500m"),
            "/api/v1/namespaces/power/services/http:powerctl-extender:ops/proxy/v1/"
            "predictions?cpu=500m&node=a"
            "&node=b.example");
}

TEST(PowerReportTest, SourceIsAutoLocalOrExtender) {
  EXPECT_EQ(*ParsePredictSource("auto"), PredictSource::kAuto);
  EXPECT_EQ(*ParsePredictSource("local"), PredictSource::kLocal);
  EXPECT_EQ(*ParsePredictSource("extender"), PredictSource::kExtender);
  auto bad = ParsePredictSource("remote");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(bad.error().message.find("auto, local or extender"), std::string::npos);
}

}  // namespace
}  // namespace powerctl::report
