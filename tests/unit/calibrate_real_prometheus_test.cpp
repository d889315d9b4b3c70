// `label nodes --from-prometheus` and `calibrate` against Debian's real Prometheus holding a
// week of history: synthetic series with known temperature ranges and a known power model
// are backfilled with `promtool tsdb create-blocks-from openmetrics`, then Prometheus serves
// them from its TSDB. Measured power is written as each exporter exposes it (names, labels,
// counters, and the labels a usual scrape configuration adds): ipmi_exporter's DCMI gauge,
// Kepler 0.10+ and 0.7-0.9 energy counters, node_exporter's RAPL counters with their wraps. Nodes
// live in the in-memory API server. Prometheus runs on a free loopback port from a temporary
// directory and is stopped by PID. Skipped when the binaries are not installed.

#include "core/common/http_client.h"
#include "core/predict/builtin_model.h"
#include "core/setup/calibrate_nodes.h"
#include "core/setup/label_nodes.h"
#include "core/telemetry/kepler.h"
#include "core/telemetry/power_sources.h"
#include "core/telemetry/prometheus_client.h"
#include "tests/unit/child_process.h"
#include "tests/unit/fake_api_server.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace powerctl::setup {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kPrometheus[] = "/usr/bin/prometheus";
constexpr char kPromtool[] = "/usr/bin/promtool";
constexpr double kPi = 3.14159265358979323846;
constexpr std::int64_t kDay = 86400;
constexpr std::int64_t kInterval = 60;  // seconds between synthetic samples

// What the synthetic history of one node is made from.
struct SyntheticNode {
  std::string name;
  std::vector<std::string> sensors;  // ambient, cpu1, cpu2 names
  double offset;                     // added to every temperature
  double idle, max, curve;
};

const std::vector<SyntheticNode>& Synthetic() {
  static const std::vector<SyntheticNode> nodes = {
      {"node-a", {"Ambient", "CPU1", "CPU2"}, 0, 110, 380, 0.9},
      {"node-b", {"Inlet Temp", "CPU1 Temp", "CPU2 Temp"}, 2, 95, 300, 1.4}};
  return nodes;
}

// Temperatures that stay strictly inside known bounds and come close to them:
// ambient 18.4..34.2, cpu1 30.5..80.5, cpu2 30.2..70.2 (plus the node's offset).
double Temperature(int role, std::int64_t t) {
  double x = static_cast<double>(t);
  if (role == 0) return 26.3 + 7.9 * std::sin(2 * kPi * x / kDay);
  if (role == 1) return 55.5 + 25 * std::sin(2 * kPi * x / (3 * 3600));
  return 50.2 + 20 * std::cos(2 * kPi * x / (5 * 3600));
}

// Utilisation, constant for half an hour at a time, 0.05..0.95.
double Utilisation(std::int64_t t) {
  std::uint64_t block = static_cast<std::uint64_t>(t / 1800);
  std::uint64_t h = block * 6364136223846793005ULL + 1442695040888963407ULL;
  return 0.05 + 0.9 * static_cast<double>((h >> 33) % 1000) / 999.0;
}

// One CPU: its idle seconds grow by (1 - u) per second.
void WriteCpu(std::ofstream& out, const std::string& node, std::int64_t first, std::int64_t last) {
  double idle_seconds = 1000;
  for (std::int64_t t = first; t <= last; t += kInterval) {
    idle_seconds += (1 - Utilisation(t)) * kInterval;
    out << "node_cpu_seconds_total{instance=\"" << node
        << ":9100\",job=\"node\",cpu=\"0\",mode=\"idle\"} " << idle_seconds << " " << t << "\n";
  }
}

// Nodes whose power is measured by an energy counter: the exporter and the true curve of
// what it measures.
enum class Meter { kKepler, kKeplerHwmon, kKepler07, kKepler07Estimated, kRapl };
struct MeteredNode {
  std::string name;
  Meter meter;
  double idle, max, curve;
  double Watts(double u) const { return idle + (max - idle) * std::pow(u, curve); }
};

const std::vector<MeteredNode>& Metered() {
  static const std::vector<MeteredNode> nodes = {{"node-k", Meter::kKepler, 55, 230, 1.2},
                                                 {"node-h", Meter::kKeplerHwmon, 70, 310, 1.0},
                                                 {"node-l", Meter::kKepler07, 120, 420, 0.8},
                                                 {"node-m", Meter::kKepler07Estimated, 100, 300, 1},
                                                 {"node-r", Meter::kRapl, 45, 260, 1.1}};
  return nodes;
}

// One counter series in OpenMetrics: `labels` and the running total at each sample.
struct CounterSeries {
  std::string labels;
  double value;
  double wrap_at;  // the counter starts again from 0 past this (RAPL's max_energy_range_uj)
  std::vector<std::pair<std::int64_t, double>> samples;
  void Add(std::int64_t t, double joules) {
    value += joules;
    if (value >= wrap_at) value -= wrap_at;
    samples.emplace_back(t, value);
  }
};

// `name{labels} value t` lines of one counter family, with its metadata first.
void WriteCounterFamily(std::ofstream& out, const std::string& family, const std::string& help,
                        const std::vector<CounterSeries>& series) {
  out << "# HELP " << family << " " << help << "\n# TYPE " << family << " counter\n";
  for (const CounterSeries& c : series) {
    for (const auto& [t, v] : c.samples) {
      out << family << "_total{" << c.labels << "} " << v << " " << t << "\n";
    }
  }
}

constexpr double kNoWrap = 1e18;
// max_energy_range_uj of a Xeon's package and DRAM zones, in joules.
constexpr double kPackageWrap = 262143.328850;
constexpr double kDramWrap = 65712.999613;

// Each metered node's energy as its exporter counts it, the watts split across the zones or
// modes the exporter reports (zones that overlap the package, and an MMIO duplicate of it,
// included: the queries must not add them).
void WriteMeteredHistory(std::ofstream& out, std::int64_t first, std::int64_t last) {
  std::mt19937 rng(99);
  std::normal_distribution<double> noise(0, 3);
  std::vector<CounterSeries> kepler, kepler07, kepler07_package, rapl_package, rapl_dram;
  const std::string k_target =
      R"(container="kepler",endpoint="http",instance="10.244.1.7:28282",job="kepler",)"
      R"(namespace="kepler",pod="kepler-x7k2p",service="kepler",node_name="node-k",)";
  for (const char* zone : {"package", "dram", "core", "uncore"}) {
    // Two sockets: Kepler adds each zone's sockets itself and says so in the path.
    kepler.push_back(
        {k_target + "zone=\"" + zone + "\",path=\"aggregated-" + zone + "\"", 5000, kNoWrap, {}});
  }
  // Kepler 0.11.4's hwmon meter on a node without RAPL: zones named after the sensors, a
  // platform sensor (the node) and an amdgpu one (not the host's power: never added).
  const std::string h_target =
      R"(container="kepler",endpoint="http",instance="10.244.2.4:28282",job="kepler",)"
      R"(namespace="kepler",pod="kepler-h8m3q",service="kepler",node_name="node-h",)";
  kepler.push_back(
      {h_target + R"(zone="platform_sensor_power1",path="/sys/class/hwmon/hwmon3/power1_input")",
       700,
       kNoWrap,
       {}});
  kepler.push_back(
      {h_target + R"(zone="gpu",path="/sys/class/hwmon/hwmon5/power1_average")", 300, kNoWrap, {}});
  auto k07_target = [](const std::string& node, const char* source, const char* package,
                       const char* mode) {
    return R"(container="kepler-exporter",endpoint="http",exported_instance=")" + node +
           R"(",instance=")" + node +
           R"(",job="kepler-exporter",namespace="kepler",pod="kepler-exporter-)" + node +
           R"(",service="kepler-exporter",source=")" + source + R"(",package=")" + package +
           R"(",mode=")" + mode + "\"";
  };
  for (const char* node : {"node-l", "node-m"}) {
    const char* source = std::string(node) == "node-l" ? "acpi" : "trained_power_model";
    for (const char* mode : {"dynamic", "idle"}) {
      kepler07.push_back({k07_target(node, source, "energy1", mode), 100, kNoWrap, {}});
      kepler07_package.push_back({k07_target(node, "rapl-sysfs", "0", mode), 100, kNoWrap, {}});
    }
  }
  const std::string r_target = R"(instance="node-r:9100",job="node",)";
  rapl_package = {
      {r_target + R"(index="0",path="/sys/class/powercap/intel-rapl:0")", 1000, kPackageWrap, {}},
      {r_target + R"(index="1",path="/sys/class/powercap/intel-rapl:1")", 90000, kPackageWrap, {}},
      {r_target + R"(index="0",path="/sys/class/powercap/intel-rapl-mmio:0")",
       1000,
       kPackageWrap,
       {}}};
  rapl_dram = {
      {r_target + R"(index="0",path="/sys/class/powercap/intel-rapl:0:0")", 20, kDramWrap, {}},
      {r_target + R"(index="1",path="/sys/class/powercap/intel-rapl:1:0")", 40000, kDramWrap, {}}};

  for (std::int64_t t = first; t <= last; t += kInterval) {
    const double u = Utilisation(t);
    for (const MeteredNode& n : Metered()) {
      const double joules = (n.Watts(u) + noise(rng)) * kInterval;
      const double idle = n.idle * kInterval;
      switch (n.meter) {
        case Meter::kKepler:  // package 80 %, DRAM 20 %; core and uncore inside the package
          kepler[0].Add(t, 0.8 * joules);
          kepler[1].Add(t, 0.2 * joules);
          kepler[2].Add(t, 0.5 * joules);
          kepler[3].Add(t, 0.1 * joules);
          break;
        case Meter::kKeplerHwmon:  // the platform sensor is the node; the GPU draws 45 W more
          kepler[4].Add(t, joules);
          kepler[5].Add(t, 45.0 * kInterval);
          break;
        case Meter::kKepler07:
        case Meter::kKepler07Estimated: {  // dynamic + idle = the platform
          std::size_t i = n.meter == Meter::kKepler07 ? 0 : 2;
          kepler07[i].Add(t, joules - idle);
          kepler07[i + 1].Add(t, idle);
          kepler07_package[i].Add(t, 0.3 * (joules - idle));
          kepler07_package[i + 1].Add(t, 0.3 * idle);
          break;
        }
        case Meter::kRapl:  // two sockets, 40 % each, and their DRAM, 10 % each
          rapl_package[0].Add(t, 0.4 * joules);
          rapl_package[1].Add(t, 0.4 * joules);
          rapl_package[2].Add(t, 0.4 * joules);  // the same package seen through MMIO
          rapl_dram[0].Add(t, 0.1 * joules);
          rapl_dram[1].Add(t, 0.1 * joules);
          break;
      }
    }
  }
  WriteCounterFamily(out, "kepler_node_cpu_joules", "Energy consumption of cpu at node level",
                     kepler);
  // Each generation's build info, as its exporter labels it.
  out << "# HELP kepler_build_info A metric with a constant '1' value labeled with version "
         "information\n# TYPE kepler_build_info gauge\n";
  for (std::int64_t t = first; t <= last; t += kInterval) {
    out << R"(kepler_build_info{arch="amd64",branch="HEAD",goversion="go1.24.4",)"
        << R"(revision="cdef4739",version="v0.11.4",instance="10.244.1.7:28282",job="kepler"} 1 )"
        << t << "\n";
  }
  out << "# HELP kepler_exporter_build_info A metric with a constant '1' value labeled by "
         "version, revision, branch, os and arch from which kepler_exporter was built.\n"
         "# TYPE kepler_exporter_build_info gauge\n";
  for (std::int64_t t = first; t <= last; t += kInterval) {
    out << R"(kepler_exporter_build_info{arch="amd64",branch="",os="linux",revision="",)"
        << R"(version="v0.9.0",instance="node-l",job="kepler-exporter"} 1 )" << t << "\n";
  }
  WriteCounterFamily(out, "kepler_node_platform_joules", "Aggregated value in platform value",
                     kepler07);
  WriteCounterFamily(out, "kepler_node_package_joules", "Aggregated value in package value",
                     kepler07_package);
  WriteCounterFamily(out, "node_rapl_package_joules", "Current RAPL package value in joules",
                     rapl_package);
  WriteCounterFamily(out, "node_rapl_dram_joules", "Current RAPL dram value in joules", rapl_dram);
}

// OpenMetrics text for every synthetic series, samples from `first` to `last`.
void WriteOpenMetrics(const fs::path& path, std::int64_t first, std::int64_t last) {
  std::ofstream out(path);
  out.precision(12);
  std::mt19937 rng(1234);
  std::normal_distribution<double> noise(0, 3);
  for (const SyntheticNode& n : Synthetic()) {
    for (int role = 0; role < 3; ++role) {
      for (std::int64_t t = first; t <= last; t += kInterval) {
        out << "ipmi_temperature_celsius{instance=\"" << n.name << ":9290\",job=\"ipmi\",name=\""
            << n.sensors[role] << "\",id=\"" << role + 1 << "\"} "
            << Temperature(role, t) + n.offset << " " << t << "\n";
      }
    }
    for (std::int64_t t = first; t <= last; t += kInterval) {
      double u = Utilisation(t);
      out << "ipmi_dcmi_power_consumption_watts{instance=\"" << n.name << ":9290\",job=\"ipmi\"} "
          << n.idle + (n.max - n.idle) * std::pow(u, n.curve) + noise(rng) << " " << t << "\n";
    }
    WriteCpu(out, n.name, first, last);
  }
  for (const MeteredNode& n : Metered()) WriteCpu(out, n.name, first, last);
  WriteMeteredHistory(out, first, last);
  out << "# EOF\n";
}

int FreePort() {
  telemetry_test::LocalHttpServer probe(
      [](const telemetry_test::ServerRequest&) { return telemetry_test::ServerResponse{}; });
  return probe.port();
}

using testsupport::SpawnLogged;
using testsupport::StopPid;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class CalibrateRealPrometheusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kPrometheus) || !fs::exists(kPromtool)) return;
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("powerctl-history-" + std::to_string(::getpid())));
    fs::create_directories(*dir_ / "data");
    std::int64_t now =
        std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    std::int64_t last = now / kInterval * kInterval - 2 * kInterval;
    // Starts just inside a 7-day window that ends now.
    WriteOpenMetrics(*dir_ / "history.om", last - 7 * kDay + 10 * kInterval, last);
    pid_t promtool = SpawnLogged({kPromtool, "tsdb", "create-blocks-from", "openmetrics",
                                  (*dir_ / "history.om").string(), (*dir_ / "data").string()},
                                 *dir_ / "promtool.log");
    int status = -1;
    if (promtool > 0) ::waitpid(promtool, &status, 0);
    backfill_ok_ = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!backfill_ok_) return;
    port_ = FreePort();
    std::ofstream(*dir_ / "prometheus.yml") << "global:\n  scrape_interval: 1m\n";
    pid_ = SpawnLogged({kPrometheus, "--config.file=" + (*dir_ / "prometheus.yml").string(),
                        "--storage.tsdb.path=" + (*dir_ / "data").string(),
                        "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
                       *dir_ / "prometheus.log");
  }

  static void TearDownTestSuite() {
    StopPid(pid_);
    pid_ = -1;
    if (dir_ != nullptr) {
      std::error_code ignored;
      fs::remove_all(*dir_, ignored);
      delete dir_;
      dir_ = nullptr;
    }
  }

  void SetUp() override {
    if (dir_ == nullptr) GTEST_SKIP() << "prometheus and promtool are not installed";
    ASSERT_TRUE(backfill_ok_) << "promtool failed:\n" << ReadFile(*dir_ / "promtool.log");
    http_ = MakeCurlHttpClient();
    std::string url = "http://127.0.0.1:" + std::to_string(port_);
    auto deadline = std::chrono::steady_clock::now() + seconds(90);
    bool ready = false;
    while (!ready && std::chrono::steady_clock::now() < deadline) {
      auto r = http_->Do({"GET", url + "/-/ready", "", "", milliseconds(1000)});
      ready = r.ok() && r->status == 200;
      if (!ready) std::this_thread::sleep_for(milliseconds(250));
    }
    ASSERT_TRUE(ready) << "Prometheus not ready:\n" << ReadFile(*dir_ / "prometheus.log");
    prometheus_ = std::make_unique<telemetry::PrometheusClient>(
        *http_, telemetry::PrometheusOptions{url, seconds(30), nullptr});
    for (const SyntheticNode& n : Synthetic()) server_.Put(kube::fake::NodeObject(n.name));
    client_ = server_.MakeClient();
  }

  json Node(const std::string& name) const {
    return server_.Object("/api/v1/nodes/" + name)["metadata"];
  }

  static inline fs::path* dir_ = nullptr;
  static inline bool backfill_ok_ = false;
  static inline pid_t pid_ = -1;
  static inline int port_ = 0;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<telemetry::PrometheusClient> prometheus_;
  kube::fake::FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(CalibrateRealPrometheusTest, LabelNodesDerivesRangesFromAWeekOfHistory) {
  LabelNodesRequest request;
  request.all = true;
  request.from_prometheus = true;
  auto results = LabelNodes(*client_, request, prometheus_.get());
  ASSERT_TRUE(results.ok()) << results.error().message;

  json a = Node("node-a")["labels"];
  EXPECT_EQ(a["ambient/min"], "18");
  EXPECT_EQ(a["ambient/max"], "35");
  EXPECT_EQ(a["cpu1/min"], "30");
  EXPECT_EQ(a["cpu1/max"], "81");
  EXPECT_EQ(a["cpu2/min"], "30");
  EXPECT_EQ(a["cpu2/max"], "71");
  json b = Node("node-b")["labels"];  // vendor sensor names, 2 degrees warmer
  EXPECT_EQ(b["ambient/min"], "20");
  EXPECT_EQ(b["ambient/max"], "37");
  EXPECT_EQ(b["cpu1/max"], "83");
  EXPECT_EQ(b["cpu2/min"], "32");

  ASSERT_EQ(results->size(), 2u);
  const auto& derived = (*results)[1].derived;
  ASSERT_EQ(derived.size(), 3u);
  EXPECT_EQ(derived[0].sensor, "Inlet Temp");
  EXPECT_NEAR(derived[0].observed_min, 20.4, 0.01);
  EXPECT_NEAR(derived[0].observed_max, 36.2, 0.01);
  // One sample a minute for the 7 days less the 10 minutes left out at the start.
  EXPECT_NEAR(derived[0].samples, 7 * 1440 - 10, 3);
}

TEST_F(CalibrateRealPrometheusTest, CalibrateRecoversTheModelFromAWeekOfHistory) {
  CalibrateRequest request;
  request.all = true;
  auto report = CalibrateNodes(*client_, *prometheus_, request);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_TRUE(report->not_written.empty()) << report->not_written;
  ASSERT_EQ(report->nodes.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const SyntheticNode& want = Synthetic()[i];
    const NodeCalibration& got = report->nodes[i];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(got.node, want.name);
    EXPECT_GT(got.fit.samples, 1900u);  // 7d at 5m is 2016 steps
    EXPECT_NEAR(got.fit.params.idle_watts, want.idle, 6);
    EXPECT_NEAR(got.fit.params.max_watts, want.max, 10);
    EXPECT_NEAR(got.fit.params.curve, want.curve, 0.1);
    EXPECT_GT(got.fit.r2, 0.95);
    EXPECT_LT(got.fit.rmse_watts, 15);
    EXPECT_LT(got.fit.utilisation_min, 0.1);
    EXPECT_GT(got.fit.utilisation_max, 0.9);
    json annotations = Node(want.name)["annotations"];
    EXPECT_NEAR(std::stod(annotations["powerctl.io/max-watts"].get<std::string>()), want.max, 10);
    EXPECT_NEAR(std::stod(annotations["powerctl.io/curve"].get<std::string>()), want.curve, 0.1);
    // The default form also writes the measured curve: measured means inside the 5..95 %
    // utilisation swept; the 0 % step (and the 100 % one, unless enough samples sat at
    // 95 %) filled from the exponent fit.
    EXPECT_EQ(annotations["powerctl.io/power-curve"], predict::FormatPowerCurve(got.curve.points));
    EXPECT_FALSE(got.curve.bins[0].measured);
    EXPECT_NEAR(got.curve.points[0], want.idle, 6);
    EXPECT_NEAR(got.curve.points[10], want.max, 15);
    for (int k = 1; k <= 9; ++k) {
      SCOPED_TRACE(k);
      EXPECT_TRUE(got.curve.bins[k].measured);
      EXPECT_NEAR(got.curve.points[k],
                  want.idle + (want.max - want.idle) * std::pow(k / 10.0, want.curve), 6);
    }
    EXPECT_LT(got.curve.rmse_watts, 15);
  }
}

// Each counter source recovers its node's curve; the errors allowed are those of the gauge
// above (noise of 3 W on every sample, 30-minute load blocks straddling 5-minute steps).
TEST_F(CalibrateRealPrometheusTest, CalibrateRecoversTheCurveFromEachEnergyCounter) {
  struct Case {
    std::string node;
    telemetry::PowerSource source;
    std::size_t min_samples, max_samples;
  };
  // 7 days at 5 minutes is 2016 steps. RAPL's counters wrap every 40 minutes or so here;
  // the steps with a wrap are left out.
  const std::vector<Case> cases = {{"node-k", telemetry::PowerSource::kKepler, 1900, 2016},
                                   {"node-h", telemetry::PowerSource::kKepler, 1900, 2016},
                                   {"node-l", telemetry::PowerSource::kKepler07, 1900, 2016},
                                   {"node-r", telemetry::PowerSource::kRapl, 1000, 1800}};
  for (const MeteredNode& n : Metered()) server_.Put(kube::fake::NodeObject(n.name));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.node);
    const MeteredNode& want = *std::find_if(Metered().begin(), Metered().end(),
                                            [&](const MeteredNode& n) { return n.name == c.node; });
    CalibrateRequest request;
    request.nodes = {c.node};
    request.power.source = c.source;
    request.dry_run = DryRunMode::kClient;
    auto report = CalibrateNodes(*client_, *prometheus_, request);
    ASSERT_TRUE(report.ok()) << report.error().message;
    ASSERT_TRUE(report->not_written.empty()) << report->not_written;
    const NodeCalibration& got = report->nodes[0];
    EXPECT_GE(got.fit.samples, c.min_samples);
    EXPECT_LE(got.fit.samples, c.max_samples);
    EXPECT_NEAR(got.fit.params.idle_watts, want.idle, 6);
    EXPECT_NEAR(got.fit.params.max_watts, want.max, 10);
    EXPECT_NEAR(got.fit.params.curve, want.curve, 0.1);
    EXPECT_GT(got.fit.r2, 0.95);
    EXPECT_GT(got.load_range_covered, 0.85);
    EXPECT_EQ(got.measured_steps, 9);  // 5..95 % swept: the 0 % and 100 % steps are filled
    double worst = 0;
    for (int k = 1; k <= 9; ++k) {
      worst = std::max(worst, std::abs(got.curve.points[k] - want.Watts(k / 10.0)));
    }
    EXPECT_LT(worst, 6) << "largest error of a measured load step, W";
    // calibrate says which Kepler zones it summed: RAPL's, or the hwmon sensors but the GPU.
    const std::string zones = c.node == "node-k"   ? "RAPL package+dram"
                              : c.node == "node-h" ? "hwmon platform_sensor_power1 (left out: gpu)"
                                                   : "";
    EXPECT_EQ(got.power_zones, zones);
  }
}

// Each Kepler source, pointed at the other generation's exposition, says which source to use:
// in calibrate's refusal and in the measured power doctor and the extender read.
TEST_F(CalibrateRealPrometheusTest, EachKeplerSourceNamesTheOtherWhenOnlyItsGenerationIsThere) {
  for (const char* node : {"node-k", "node-l"}) server_.Put(kube::fake::NodeObject(node));
  struct Case {
    std::string node;
    telemetry::PowerSource source;
    std::string names;
  };
  for (const Case& c : {Case{"node-l", telemetry::PowerSource::kKepler, "to kepler-0.7"},
                        Case{"node-k", telemetry::PowerSource::kKepler07, "to kepler"}}) {
    SCOPED_TRACE(c.node);
    CalibrateRequest request;
    request.nodes = {c.node};
    request.power.source = c.source;
    request.dry_run = DryRunMode::kClient;
    auto report = CalibrateNodes(*client_, *prometheus_, request);
    ASSERT_TRUE(report.ok()) << report.error().message;
    EXPECT_THAT(report->nodes[0].refused, ::testing::HasSubstr("power history in Prometheus"));
    EXPECT_THAT(report->nodes[0].refused,
                ::testing::EndsWith("set telemetry.powerSource (or --power-source) " + c.names));
    telemetry::PowerQuerySpec spec;
    spec.source = c.source;
    auto measured = telemetry::FetchMeasuredPower(
        *prometheus_, {telemetry::NodeInfoFromJson(server_.Object("/api/v1/nodes/" + c.node))},
        spec, std::chrono::hours(24 * 8));
    ASSERT_TRUE(measured.ok()) << measured.error().message;
    EXPECT_FALSE((*measured)[c.node].watts.has_value());
    EXPECT_THAT((*measured)[c.node].missing_reason, ::testing::EndsWith(c.names));
  }
}

// doctor's power-source check reads which Kepler runs from the build-info and energy series.
TEST_F(CalibrateRealPrometheusTest, BothKeplerGenerationsAndTheirVersionsAreFound) {
  auto found = telemetry::DetectKeplerInventory(*prometheus_);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_TRUE(found->present.current);
  EXPECT_TRUE(found->present.legacy);
  EXPECT_EQ(found->current_versions, std::vector<std::string>{"v0.11.4"});
  EXPECT_EQ(found->legacy_versions, std::vector<std::string>{"v0.9.0"});
  EXPECT_TRUE(found->legacy_idle_series);
}

TEST_F(CalibrateRealPrometheusTest, Kepler07sOwnEstimateIsNotAMeasurement) {
  server_.Put(kube::fake::NodeObject("node-m"));
  CalibrateRequest request;
  request.nodes = {"node-m"};
  request.power.source = telemetry::PowerSource::kKepler07;
  request.dry_run = DryRunMode::kClient;
  auto report = CalibrateNodes(*client_, *prometheus_, request);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->nodes[0].refused, "no kepler-0.7 power history in Prometheus for this node");
}

}  // namespace
}  // namespace powerctl::setup
