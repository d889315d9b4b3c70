// Telemetry against the real thing: Debian's node_exporter serving ipmi_exporter series
// through its textfile collector plus real CPU counters, scraped every second by Debian's
// Prometheus. Both run on free loopback ports from a temporary directory and are stopped by
// PID. Skipped when the binaries are not installed.

#include "core/common/http_client.h"
#include "core/telemetry/exposition.h"
#include "core/telemetry/prometheus_client.h"
#include "core/telemetry/sources.h"
#include "core/telemetry/telemetry_service.h"
#include "tests/unit/child_process.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace powerctl::telemetry {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kRealNodeExporter[] = "/usr/bin/prometheus-node-exporter";
constexpr char kRealPrometheus[] = "/usr/bin/prometheus";

constexpr char kIpmiProm[] =
    R"(# HELP ipmi_temperature_celsius Temperature reading in degree Celsius.
# TYPE ipmi_temperature_celsius gauge
ipmi_temperature_celsius{id="1",name="Ambient"} 23
ipmi_temperature_celsius{id="9",name="CPU1"} 41
ipmi_temperature_celsius{id="07",name="CPU1"} 255
ipmi_temperature_celsius{id="08",name="CPU2"} 30
ipmi_temperature_celsius{id="10",name="CPU2"} 44.5
# HELP ipmi_dcmi_power_consumption_watts Current power consumption in Watts.
# TYPE ipmi_dcmi_power_consumption_watts gauge
ipmi_dcmi_power_consumption_watts 240
)";

int FreePrometheusPort() {
  telemetry_test::LocalHttpServer probe(
      [](const telemetry_test::ServerRequest&) { return telemetry_test::ServerResponse{}; });
  return probe.port();
}

using testsupport::Child;

std::string ReadTextFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class TelemetryRealPrometheusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kRealNodeExporter) || !fs::exists(kRealPrometheus)) return;
    dir_ =
        new fs::path(fs::temp_directory_path() / ("powerctl-prom-" + std::to_string(::getpid())));
    fs::create_directories(*dir_ / "textfile");
    std::ofstream(*dir_ / "textfile" / "ipmi.prom") << kIpmiProm;
    exporter_port_ = FreePrometheusPort();
    prometheus_port_ = FreePrometheusPort();
    std::ofstream(*dir_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: node\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << exporter_port_ << "']\n";
    exporter_ = new Child(
        {kRealNodeExporter, "--web.listen-address=127.0.0.1:" + std::to_string(exporter_port_),
         "--collector.disable-defaults", "--collector.cpu", "--collector.textfile",
         "--collector.textfile.directory=" + (*dir_ / "textfile").string()},
        *dir_ / "node_exporter.log");
    prometheus_ =
        new Child({kRealPrometheus, "--config.file=" + (*dir_ / "prometheus.yml").string(),
                   "--storage.tsdb.path=" + (*dir_ / "data").string(),
                   "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)},
                  *dir_ / "prometheus.log");
  }

  static void TearDownTestSuite() {
    delete prometheus_;
    delete exporter_;
    prometheus_ = exporter_ = nullptr;
    if (dir_ != nullptr) {
      std::error_code ignored;
      fs::remove_all(*dir_, ignored);
      delete dir_;
      dir_ = nullptr;
    }
  }

  void SetUp() override {
    if (dir_ == nullptr)
      GTEST_SKIP() << "prometheus and prometheus-node-exporter are not installed";
    http_ = MakeCurlHttpClient();
    prometheus_url_ = "http://127.0.0.1:" + std::to_string(prometheus_port_);
    ASSERT_TRUE(WaitFor(
        seconds(60),
        [&] {
          auto r = http_->Do({"GET", prometheus_url_ + "/-/ready", "", "", milliseconds(1000)});
          return r.ok() && r->status == 200;
        }))
        << "Prometheus not ready:\n"
        << ReadTextFile(*dir_ / "prometheus.log");
    PrometheusClient client(*http_, PrometheusOptions{prometheus_url_, seconds(5), nullptr});
    // rate() needs two scrapes; the ipmi series need one.
    ASSERT_TRUE(WaitFor(seconds(60),
                        [&] {
                          auto cpu = client.Query(DefaultCpuQuery({}));
                          auto temps = client.Query("ipmi_temperature_celsius");
                          return cpu.ok() && cpu->series.size() == 1 && temps.ok() &&
                                 temps->series.size() == 5;
                        }))
        << "series did not appear:\n"
        << ReadTextFile(*dir_ / "prometheus.log") << ReadTextFile(*dir_ / "node_exporter.log");
  }

  template <typename F>
  static bool WaitFor(milliseconds limit, F ready) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (ready()) return true;
      std::this_thread::sleep_for(milliseconds(250));
    }
    return false;
  }

  // The test "cluster": one node whose InternalIP is where node_exporter listens.
  static std::vector<NodeInfo> Nodes() { return {NodeInfo{"node-a", {"127.0.0.1"}, {}, 64.0}}; }

  static inline fs::path* dir_ = nullptr;
  static inline Child* exporter_ = nullptr;
  static inline Child* prometheus_ = nullptr;
  static inline int exporter_port_ = 0;
  static inline int prometheus_port_ = 0;
  std::unique_ptr<HttpClient> http_;
  std::string prometheus_url_;
};

TEST_F(TelemetryRealPrometheusTest, PrometheusQueries) {
  PrometheusClient client(*http_, PrometheusOptions{prometheus_url_, seconds(5), nullptr});
  auto power = client.Query("ipmi_dcmi_power_consumption_watts");
  ASSERT_TRUE(power.ok()) << power.error().message;
  ASSERT_EQ(power->series.size(), 1u);
  EXPECT_EQ(power->series[0].samples[0].value, 240);
  EXPECT_EQ(power->series[0].metric.at("instance"), "127.0.0.1:" + std::to_string(exporter_port_));

  auto now = std::chrono::system_clock::now();
  auto range = client.QueryRange("up", now - seconds(5), now, seconds(1));
  ASSERT_TRUE(range.ok()) << range.error().message;
  EXPECT_EQ(range->result_type, "matrix");
  ASSERT_EQ(range->series.size(), 1u);
  EXPECT_GE(range->series[0].samples.size(), 2u);

  auto scalar = client.Query("0/0");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->result_type, "scalar");
  EXPECT_TRUE(std::isnan(scalar->scalar.value));

  auto bad = client.Query("sum(");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("bad_data (HTTP 400)"));
}

TEST_F(TelemetryRealPrometheusTest, SourcesReadTemperaturesAndRealCpu) {
  PrometheusClient client(*http_, PrometheusOptions{prometheus_url_, seconds(5), nullptr});
  TimeBase time;
  auto temps = MakePrometheusTemperatureSource(client, {}, time)->Fetch(Nodes());
  ASSERT_TRUE(temps.ok()) << temps.error().message;
  const Temperatures& t = temps->at("node-a");
  EXPECT_EQ(t.ambient.value, 23.0) << t.ambient.missing_reason;
  // Two CPU1 series differ only in "id", which powerctl does not read: one sensor, and the
  // implausible 255 C does not hide the plausible 41 C.
  EXPECT_EQ(t.cpu1.value, 41.0) << t.cpu1.missing_reason;
  // Two CPU2 series likewise: the highest reading (Prometheus returns id="08" first; it used
  // to be the one taken).
  EXPECT_EQ(t.cpu2.value, 44.5) << t.cpu2.missing_reason;
  EXPECT_LT(Age(t.ambient, time.clock.now()), seconds(10));  // a scrape time, 1s apart
  EXPECT_LT(Age(t.cpu2, time.clock.now()), seconds(10));

  auto cpu = MakePrometheusCpuSource(client, {}, time)->Fetch(Nodes());
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  const Reading& used = cpu->at("node-a");
  ASSERT_TRUE(used.ok()) << used.missing_reason;
  EXPECT_GE(*used.value, 0.0);
  EXPECT_LE(*used.value, std::thread::hardware_concurrency() * 1.05 + 0.1);
  EXPECT_LT(Age(used, time.clock.now()), seconds(10));
}

TEST_F(TelemetryRealPrometheusTest, IpmiExporterDirectScrape) {
  // node_exporter's own /metrics is a real exposition with HELP escapes and many families.
  auto metrics =
      http_->Do({"GET", "http://127.0.0.1:" + std::to_string(exporter_port_) + "/metrics", "", "",
                 seconds(5)});
  ASSERT_TRUE(metrics.ok()) << metrics.error().message;
  auto exposition = ParseExposition(metrics->body);
  ASSERT_TRUE(exposition.ok()) << exposition.error().message;
  EXPECT_FALSE(FindSamples(*exposition, "node_cpu_seconds_total").empty());
  EXPECT_EQ(FindSamples(*exposition, "ipmi_temperature_celsius", {{"name", "CPU2"}}).size(), 2u);

  IpmiExporterOptions options;
  options.port = exporter_port_;
  options.limits = ExpositionLimits{};  // node_exporter serves more than a BMC exporter
  auto temps = MakeIpmiExporterTemperatureSource(*http_, options, TimeBase{})->Fetch(Nodes());
  ASSERT_TRUE(temps.ok());
  EXPECT_EQ(temps->at("node-a").ambient.value, 23.0) << temps->at("node-a").ambient.missing_reason;
  EXPECT_EQ(temps->at("node-a").cpu1.value, 41.0);  // not the implausible 255 beside it
  EXPECT_EQ(temps->at("node-a").cpu2.value, 44.5);  // the higher of the two CPU2 sensors
}

TEST_F(TelemetryRealPrometheusTest, ServiceFromConfig) {
  config::TelemetrySettings settings;
  settings.cpu_source = "prometheus";
  settings.temperature_source = "prometheus";
  settings.prometheus_url = prometheus_url_;
  auto sources =
      MakeTelemetrySources(settings, SourceDependencies{http_.get(), nullptr, {}, nullptr});
  ASSERT_TRUE(sources.ok()) << sources.error().message;
  TelemetryServiceOptions options;
  options.max_age = sources->max_age;
  options.refresh_interval = sources->refresh_interval;
  TelemetryService service(
      *sources->cpu, *sources->temperature, [] { return Result<std::vector<NodeInfo>>(Nodes()); },
      options);
  auto readings = service.Readings(Wait::kIfEmpty);
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  const NodeReading& r = readings->at("node-a");
  EXPECT_TRUE(r.cpu_cores_used.ok()) << r.cpu_cores_used.missing_reason;
  EXPECT_EQ(r.cpu_capacity, 64.0);
  EXPECT_EQ(r.ambient.value, 23.0);
  EXPECT_EQ(r.cpu1.value, 41.0);
  EXPECT_EQ(r.cpu2.value, 44.5);
  ASSERT_TRUE(exporter_->running());
  ASSERT_TRUE(prometheus_->running());
}

}  // namespace
}  // namespace powerctl::telemetry
