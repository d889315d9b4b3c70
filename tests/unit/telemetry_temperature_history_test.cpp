#include "core/telemetry/temperature_history.h"
#include "tests/unit/calibrate_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace powerctl::telemetry {
namespace {

using calibrate_test::FakePrometheus;
using calibrate_test::VectorSample;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<NodeInfo> Nodes() {
  return {NodeInfo{"node-a", {"10.0.0.1"}, {}, 8.0}, NodeInfo{"node-b", {"10.0.0.2"}, {}, 8.0}};
}

nlohmann::json Series(const std::string& instance, const std::string& name, double value,
                      const std::string& id = "1") {
  return VectorSample({{"instance", instance}, {"name", name}, {"id", id}}, value);
}

TEST(TemperatureHistoryTest, MinMaxAndCountPerNodeAndRole) {
  FakePrometheus prom;
  prom.Vector("min_over_time",
              {Series("10.0.0.1:9290", "Ambient", 18.4), Series("10.0.0.1:9290", "CPU1", 30.2),
               Series("10.0.0.1:9290", "CPU2", 31), Series("node-b:9290", "Inlet Temp", 20)});
  prom.Vector("max_over_time",
              {Series("10.0.0.1:9290", "Ambient", 34.6), Series("10.0.0.1:9290", "CPU1", 88),
               Series("10.0.0.1:9290", "CPU2", 79.5), Series("node-b:9290", "Inlet Temp", 27)});
  prom.Vector("count_over_time",
              {Series("10.0.0.1:9290", "Ambient", 2016), Series("10.0.0.1:9290", "CPU1", 2016),
               Series("10.0.0.1:9290", "CPU2", 2000), Series("node-b:9290", "Inlet Temp", 12)});
  TemperatureHistoryOptions options;
  options.window = std::chrono::hours(48);
  auto history = FetchTemperatureHistory(prom.client(), Nodes(), options);
  ASSERT_TRUE(history.ok()) << history.error().message;

  const NodeTemperatureHistory& a = history->at("node-a");
  ASSERT_TRUE(a.ambient && a.cpu1 && a.cpu2);
  EXPECT_EQ(a.ambient->sensor, "Ambient");
  EXPECT_EQ(a.ambient->min, 18.4);
  EXPECT_EQ(a.ambient->max, 34.6);
  EXPECT_EQ(a.ambient->samples, 2016);
  EXPECT_EQ(a.cpu2->samples, 2000);
  EXPECT_THAT(a.missing, IsEmpty());

  const NodeTemperatureHistory& b = history->at("node-b");
  ASSERT_TRUE(b.ambient);
  EXPECT_EQ(b.ambient->sensor, "Inlet Temp");  // the second configured ambient name
  EXPECT_FALSE(b.cpu1);
  EXPECT_THAT(b.missing, ElementsAre("no cpu1 history (sensor name CPU1 or CPU1 Temp)",
                                     "no cpu2 history (sensor name CPU2 or CPU2 Temp)"));

  // One instant query per aggregate, over the window in seconds, for the configured names.
  std::vector<std::string> queries = prom.queries();
  ASSERT_EQ(queries.size(), 3u);
  EXPECT_EQ(queries[0],
            "min_over_time(ipmi_temperature_celsius{name=~\"Ambient|Inlet Temp|CPU1|CPU1 "
            "Temp|CPU2|CPU2 Temp\"}[172800s])");
  EXPECT_THAT(queries[1], HasSubstr("max_over_time("));
  EXPECT_THAT(queries[2], HasSubstr("count_over_time("));
}

TEST(TemperatureHistoryTest, TheFirstConfiguredNameWinsAndItsSeriesCombine) {
  FakePrometheus prom;
  // Two scrape jobs report the same CPU1 sensor; "CPU1 Temp" is there too but comes second.
  prom.Vector("min_over_time",
              {Series("node-a:9290", "CPU1", 31, "9"), Series("node-a:9291", "CPU1", 29, "9"),
               Series("node-a:9290", "CPU1 Temp", 10)});
  prom.Vector("max_over_time",
              {Series("node-a:9290", "CPU1", 70, "9"), Series("node-a:9291", "CPU1", 75, "9"),
               Series("node-a:9290", "CPU1 Temp", 99)});
  prom.Vector("count_over_time",
              {Series("node-a:9290", "CPU1", 100, "9"), Series("node-a:9291", "CPU1", 50, "9"),
               Series("node-a:9290", "CPU1 Temp", 100)});
  auto history = FetchTemperatureHistory(prom.client(), Nodes(), {});
  ASSERT_TRUE(history.ok());
  const auto& cpu1 = history->at("node-a").cpu1;
  ASSERT_TRUE(cpu1);
  EXPECT_EQ(cpu1->sensor, "CPU1");
  EXPECT_EQ(cpu1->min, 29);
  EXPECT_EQ(cpu1->max, 75);
  EXPECT_EQ(cpu1->samples, 150);
}

TEST(TemperatureHistoryTest, ASensorThatOnlyReportedNaNHasNoHistory) {
  FakePrometheus prom;
  double nan = std::numeric_limits<double>::quiet_NaN();
  prom.Vector("min_over_time", {Series("node-a:9290", "Ambient", nan)});
  prom.Vector("max_over_time", {Series("node-a:9290", "Ambient", nan)});
  prom.Vector("count_over_time", {Series("node-a:9290", "Ambient", 40)});
  auto history = FetchTemperatureHistory(prom.client(), Nodes(), {});
  ASSERT_TRUE(history.ok());
  EXPECT_FALSE(history->at("node-a").ambient);
  EXPECT_THAT(history->at("node-a").missing[0], HasSubstr("no ambient history"));
  EXPECT_EQ(history->at("node-b").missing.size(), 3u);
}

TEST(TemperatureHistoryTest, AFailedQueryIsAnError) {
  FakePrometheus prom;
  prom.Fail("max_over_time");
  auto history = FetchTemperatureHistory(prom.client(), Nodes(), {});
  ASSERT_FALSE(history.ok());
  EXPECT_THAT(history.error().message, HasSubstr("boom"));
}

TEST(WholeDegreeRangeTest, RoundsOutwardAndNeverCollapses) {
  EXPECT_EQ(WholeDegreeRange({"Ambient", 18.4, 34.6, 10}), "18:35");
  EXPECT_EQ(WholeDegreeRange({"Ambient", 18, 35, 10}), "18:35");
  EXPECT_EQ(WholeDegreeRange({"Ambient", 21, 21, 10}), "21:22");
  EXPECT_EQ(WholeDegreeRange({"Ambient", 21.2, 21.7, 10}), "21:22");
  EXPECT_EQ(WholeDegreeRange({"Ambient", -3.5, -0.5, 10}), "-4:0");
}

}  // namespace
}  // namespace powerctl::telemetry
