#include "core/telemetry/gpu_power.h"
#include "core/telemetry/kepler.h"
#include "tests/unit/calibrate_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

namespace powerctl::telemetry {
namespace {

using calibrate_test::FakePrometheus;
using calibrate_test::VectorSample;
using ::testing::HasSubstr;

std::vector<NodeInfo> GpuNodes() {
  return {NodeInfo{"gpu-a", {"10.0.0.5"}, {}, std::nullopt},
          NodeInfo{"gpu-b", {"10.0.0.6"}, {}, std::nullopt},
          NodeInfo{"cpu-c", {"10.0.0.7"}, {}, std::nullopt}};
}

TEST(GpuPowerSourceTest, ParsesTheThreeSourcesAndNamesTheKeyOtherwise) {
  for (std::string_view name : {"none", "kepler", "dcgm"}) {
    auto s = ParseGpuPowerSource(name, "telemetry.gpuPowerSource");
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_EQ(GpuPowerSourceName(*s), name);
  }
  auto bad = ParseGpuPowerSource("nvml", "telemetry.gpuPowerSource");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(bad.error().message, HasSubstr("telemetry.gpuPowerSource \"nvml\""));
  EXPECT_FALSE(BuildGpuPowerQuery(GpuPowerSource::kNone, {}, std::chrono::seconds(60)).ok());
  EXPECT_FALSE(BuildGpuPowerQuery(GpuPowerSource::kDcgm, {}, std::chrono::seconds(0)).ok());
}

TEST(GpuPowerQueryTest, EachExporterIsReadPerDevice) {
  auto dcgm = BuildGpuPowerQuery(GpuPowerSource::kDcgm, {}, std::chrono::seconds(300));
  ASSERT_TRUE(dcgm.ok());
  EXPECT_EQ(dcgm->promql,
            "max by (instance, node, kubernetes_node, nodename, Hostname, hostname, UUID) "
            "(avg_over_time(DCGM_FI_DEV_POWER_USAGE[300s]))");
  auto kepler = BuildGpuPowerQuery(GpuPowerSource::kKepler, {}, std::chrono::seconds(300));
  ASSERT_TRUE(kepler.ok());
  EXPECT_EQ(kepler->promql,
            "max by (instance, node, kubernetes_node, nodename, node_name, gpu_uuid) "
            "(avg_over_time(kepler_node_gpu_watts[300s]))");
}

TEST(FetchGpuPowerTest, DevicesAddUpPerNodeAndADeviceCountsOnce) {
  FakePrometheus prom;
  prom.Vector("DCGM_FI_DEV_POWER_USAGE",
              {VectorSample({{"Hostname", "gpu-a"}, {"UUID", "GPU-1"}}, 300),
               VectorSample({{"Hostname", "gpu-a"}, {"UUID", "GPU-2"}}, 150),
               // The same device again (another scrape job): its highest reading, once.
               VectorSample({{"Hostname", "gpu-a"}, {"UUID", "GPU-2"}, {"job", "b"}}, 149),
               VectorSample({{"hostname", "gpu-b"}, {"UUID", "GPU-3"}}, 80),
               VectorSample({{"Hostname", "dcgm-exporter-x7k2p"}, {"UUID", "GPU-4"}}, 90),
               VectorSample({{"Hostname", "gpu-b"}, {"UUID", "GPU-5"}}, -1)});
  auto got =
      FetchGpuPower(prom.client(), GpuNodes(), GpuPowerSource::kDcgm, std::chrono::seconds(300));
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->at("gpu-a").watts, 450);
  EXPECT_EQ(got->at("gpu-a").devices, 2);
  EXPECT_EQ(got->at("gpu-b").watts, 80);  // hostname (renamed label) maps too; NaN/-1 left out
  EXPECT_EQ(got->at("gpu-b").devices, 1);
  EXPECT_FALSE(got->at("cpu-c").watts);
  EXPECT_EQ(got->at("cpu-c").missing_reason,
            "no dcgm GPU power series in Prometheus for this node over the last 300s");

  FakePrometheus failing;
  failing.Fail("DCGM_FI_DEV_POWER_USAGE");
  EXPECT_FALSE(
      FetchGpuPower(failing.client(), GpuNodes(), GpuPowerSource::kDcgm, std::chrono::seconds(300))
          .ok());
}

TEST(KeplerZonesTest, DescribesWhatTheKeplerSourceSums) {
  EXPECT_EQ(DescribeKeplerZones({"core", "dram", "package", "uncore"}), "RAPL package+dram");
  EXPECT_EQ(DescribeKeplerZones({"gpu", "platform_sensor_power1"}),
            "hwmon platform_sensor_power1 (left out: gpu)");
  EXPECT_EQ(DescribeKeplerZones({"gpu"}), "");
  EXPECT_EQ(DescribeKeplerZones({}), "");
}

TEST(KeplerGenerationTest, TheHintNamesTheOtherSourceOnlyWhenItsGenerationIsMissing) {
  KeplerGenerations legacy_only{.current = false, .legacy = true};
  KeplerGenerations current_only{.current = true, .legacy = false};
  EXPECT_THAT(KeplerGenerationHint(PowerSource::kKepler, legacy_only), HasSubstr("to kepler-0.7"));
  EXPECT_THAT(KeplerGenerationHint(PowerSource::kKepler07, current_only), HasSubstr("to kepler"));
  EXPECT_EQ(KeplerGenerationHint(PowerSource::kKepler, current_only), "");
  EXPECT_EQ(KeplerGenerationHint(PowerSource::kKepler, {}), "");
  EXPECT_EQ(KeplerGenerationHint(PowerSource::kIpmi, legacy_only), "");
}

}  // namespace
}  // namespace powerctl::telemetry
