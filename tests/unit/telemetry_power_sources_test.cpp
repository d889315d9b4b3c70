#include "core/telemetry/power_sources.h"
#include "tests/unit/calibrate_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

namespace powerctl::telemetry {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

PowerQuery Build(PowerSource source, seconds window = seconds(300)) {
  PowerQuerySpec spec;
  spec.source = source;
  spec.custom_query = R"(sum by (node) (my_node_watts{kind="wall"}))";
  auto q = BuildPowerQuery(spec, window);
  EXPECT_TRUE(q.ok()) << q.error().message;
  return q.ok() ? *q : PowerQuery{};
}

std::vector<NodeInfo> Nodes() {
  NodeInfo a{"node-a", {"10.0.0.5"}, {}, std::nullopt};
  NodeInfo b{"node-b", {"10.0.0.6"}, {}, std::nullopt};
  return {a, b};
}

TEST(PowerSourceTest, ParsesTheFiveSourcesAndNamesTheKeyOtherwise) {
  for (std::string_view name : {"ipmi", "kepler", "kepler-0.7", "rapl", "promql"}) {
    auto s = ParsePowerSource(name, "telemetry.powerSource");
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_EQ(PowerSourceName(*s), name);
  }
  auto bad = ParsePowerSource("redfish", "--power-source");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(bad.error().message, HasSubstr("--power-source \"redfish\""));
  EXPECT_THAT(bad.error().message, HasSubstr("kepler-0.7"));
}

TEST(PowerQueryTest, IpmiAveragesTheGaugeAsCalibrateAlwaysDid) {
  PowerQuery q = Build(PowerSource::kIpmi, seconds(600));
  EXPECT_EQ(q.promql,
            "avg by (instance, node, kubernetes_node, nodename) "
            "(avg_over_time(ipmi_dcmi_power_consumption_watts[600s]))");
  EXPECT_TRUE(q.whole_server);
  PowerQuerySpec other;
  other.gauge_metric = "redfish_power_watts";
  EXPECT_THAT(BuildPowerQuery(other, seconds(60))->promql,
              HasSubstr("avg_over_time(redfish_power_watts[60s])"));
  other.gauge_metric.clear();
  EXPECT_FALSE(BuildPowerQuery(other, seconds(60)).ok());
}

TEST(PowerQueryTest, KeplerSumsThePackageAndDramZonesPerNodeName) {
  PowerQuery q = Build(PowerSource::kKepler);
  const std::string by = "instance, node, kubernetes_node, nodename, node_name, job";
  EXPECT_EQ(q.promql,
            "sum by (" + by + ") " +
                R"((rate(kepler_node_cpu_joules_total{zone=~"package|dram"}[300s])))" + " or on (" +
                by + ") sum by (" + by + ") " +
                R"((rate(kepler_node_cpu_joules_total{zone!~"package|dram|psys|core|uncore|)" +
                R"(core_power|io_power|soc|vddgfx|gpu.*|amdgpu.*"}[300s])))");
  EXPECT_FALSE(q.whole_server);
  // Kepler's scrape target is its pod; the node is in the node_name label.
  NodeNameMapper mapper(Nodes(), q.mapping);
  EXPECT_EQ(mapper.Map({{"instance", "10.244.1.7:28282"}, {"node_name", "node-b"}}), "node-b");
}

TEST(PowerQueryTest, KeplerNeverAddsZonesInsideAnotherOrGpuSensors) {
  for (const char* zone : {"psys", "core", "uncore", "soc", "gpu", "gpu_0", "amdgpu_power1"}) {
    EXPECT_TRUE(KeplerZoneNeverSummed(zone)) << zone;
  }
  for (const char* zone : {"package", "dram", "platform_sensor_power1", "socket", "ppt"}) {
    EXPECT_FALSE(KeplerZoneNeverSummed(zone)) << zone;
  }
}

TEST(PowerQueryTest, Kepler07ReadsMeasuredPlatformEnergyOnly) {
  PowerQuery q = Build(PowerSource::kKepler07);
  EXPECT_EQ(q.promql,
            "sum by (instance, node, kubernetes_node, nodename, exported_instance, job) "
            R"((rate(kepler_node_platform_joules_total{source!="trained_power_model"}[300s])))");
  EXPECT_TRUE(q.whole_server);
  NodeNameMapper mapper(Nodes(), q.mapping);
  EXPECT_EQ(mapper.Map({{"instance", "10.244.1.7:9102"}, {"exported_instance", "node-a"}}),
            "node-a");
}

TEST(PowerQueryTest, RaplReadsBothNamingsLeavesOutMmioAndWindowsWithAWrap) {
  PowerQuery q = Build(PowerSource::kRapl, seconds(120));
  const std::string by = "instance, node, kubernetes_node, nodename, job";
  const std::string named =
      R"({__name__=~"node_rapl_(package|dram)_joules_total",path!~".*intel-rapl-mmio.*"})";
  const std::string labelled =
      R"(node_rapl_joules_total{rapl_zone=~"package|dram",path!~".*intel-rapl-mmio.*"})";
  EXPECT_EQ(q.promql, "sum by (" + by + ") (rate(" + named + "[120s]) or rate(" + labelled +
                          "[120s])) unless on (" + by + ") (sum by (" + by + ") (resets(" + named +
                          "[120s]) or resets(" + labelled + "[120s])) > 0)");
  EXPECT_THAT(q.promql, Not(HasSubstr("core")));
  EXPECT_FALSE(q.whole_server);
  NodeNameMapper mapper(Nodes(), q.mapping);
  EXPECT_EQ(mapper.Map({{"instance", "10.0.0.5:9100"}, {"job", "node"}}), "node-a");
}

TEST(PowerQueryTest, ACustomQueryIsAveragedOverTheWindowAsASubquery) {
  PowerQuery q = Build(PowerSource::kPromQl, seconds(300));
  EXPECT_EQ(q.promql,
            "avg by (instance, node, kubernetes_node, nodename) "
            R"((avg_over_time((sum by (node) (my_node_watts{kind="wall"}))[300s:])))");
  PowerQuerySpec empty;
  empty.source = PowerSource::kPromQl;
  auto refused = BuildPowerQuery(empty, seconds(300));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("telemetry.powerQuery"));
}

TEST(PowerQueryTest, TheUsersMappingIsKeptAndTheWindowMustBePositive) {
  PowerQuerySpec spec;
  spec.source = PowerSource::kKepler;
  spec.mapping.node_labels = {"host"};
  spec.mapping.instance_label = "target";
  auto q = BuildPowerQuery(spec, seconds(60));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->mapping.node_labels, (std::vector<std::string>{"host", "node_name"}));
  EXPECT_THAT(q->promql, HasSubstr("sum by (target, host, node_name, job)"));
  EXPECT_FALSE(BuildPowerQuery(spec, seconds(0)).ok());
}

TEST(PowerQuerySpecTest, FromSettingsNeedsAQueryForPromql) {
  config::TelemetrySettings settings;
  auto spec = PowerQuerySpecFromSettings(settings);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->source, PowerSource::kIpmi);
  settings.power_source = "promql";
  auto refused = PowerQuerySpecFromSettings(settings);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("telemetry.powerQuery"));
  settings.power_query = "node_watts";
  ASSERT_TRUE(PowerQuerySpecFromSettings(settings).ok());
  settings.power_source = "bmc";
  auto unknown = PowerQuerySpecFromSettings(settings);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message, HasSubstr("telemetry.powerSource \"bmc\""));
}

TEST(PowerQuerySpecTest, AReadingTakesTheSpecAndTheRateWindow) {
  config::TelemetrySettings settings;
  settings.power_source = "kepler";
  settings.power_rate_window = "2m";
  auto reading = PowerReadingFromSettings(settings);
  ASSERT_TRUE(reading.ok()) << reading.error().message;
  EXPECT_EQ(reading->spec.source, PowerSource::kKepler);
  EXPECT_EQ(reading->window, seconds(120));
  settings.power_rate_window = "two minutes";
  auto refused = PowerReadingFromSettings(settings);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("telemetry.powerRateWindow"));
}

TEST(FetchMeasuredPowerTest, OneInstantQueryOverTheRateWindowGivesEachNodesWatts) {
  calibrate_test::FakePrometheus prom;
  prom.Vector("node_rapl", {calibrate_test::VectorSample({{"instance", "10.0.0.5:9100"}}, 142.5),
                            calibrate_test::VectorSample({{"instance", "node-b:9100"}}, -1)});
  PowerQuerySpec spec;
  spec.source = PowerSource::kRapl;
  auto got = FetchMeasuredPower(prom.client(), Nodes(), spec, seconds(120));
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(prom.queries().size(), 1u);
  EXPECT_EQ(prom.queries()[0], BuildPowerQuery(spec, seconds(120))->promql);
  EXPECT_EQ(got->at("node-a").watts, 142.5);
  EXPECT_FALSE(got->at("node-b").watts);
  EXPECT_EQ(got->at("node-b").missing_reason, "rapl power is not a number of watts");

  calibrate_test::FakePrometheus silent;
  auto none = FetchMeasuredPower(silent.client(), Nodes(), spec, seconds(120));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->at("node-a").missing_reason,
            "no rapl power series in Prometheus for this node over the last 120s");

  calibrate_test::FakePrometheus failing;
  failing.Fail("node_rapl");
  EXPECT_FALSE(FetchMeasuredPower(failing.client(), Nodes(), spec, seconds(120)).ok());
}

}  // namespace
}  // namespace powerctl::telemetry
