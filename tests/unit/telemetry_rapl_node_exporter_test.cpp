// The rapl power source against Debian's real node_exporter and Prometheus. This kernel may
// not expose powercap, and a real one's watts are unknown, so node_exporter reads a sysfs tree
// laid out as the kernel lays out /sys/class/powercap (two sockets with their DRAM zones, and
// the MMIO view of package 0 some Intel CPUs add), whose energy_uj files this test advances
// at known watts. Prometheus scrapes it every second; the measured power must be their sum.
// Skipped when the binaries are not installed.

#include "core/common/http_client.h"
#include "core/telemetry/power_sources.h"
#include "core/telemetry/prometheus_client.h"
#include "tests/unit/child_process.h"
#include "tests/unit/telemetry_test_support.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace powerctl::telemetry {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kNodeExporter[] = "/usr/bin/prometheus-node-exporter";
constexpr char kPrometheus[] = "/usr/bin/prometheus";

// One powercap zone: its directory, name file and how fast its counter grows.
struct Zone {
  std::string dir;   // under class/powercap
  std::string name;  // the zone's name file
  double watts;
  double start_joules;
};

// 2 x 60 W packages and 2 x 15 W DRAM: 150 W. The MMIO zone repeats package 0.
const std::vector<Zone>& Zones() {
  static const std::vector<Zone> zones = {{"intel-rapl:0", "package-0", 60, 1000},
                                          {"intel-rapl:0:0", "dram", 15, 20},
                                          {"intel-rapl:1", "package-1", 60, 90000},
                                          {"intel-rapl:1:0", "dram", 15, 4000},
                                          {"intel-rapl-mmio:0", "package-0", 60, 1000}};
  return zones;
}

void WriteFile(const fs::path& path, const std::string& text) {
  fs::path tmp = path.string() + ".tmp";
  std::ofstream(tmp) << text << "\n";
  fs::rename(tmp, path);
}

int FreePort() {
  telemetry_test::LocalHttpServer probe(
      [](const telemetry_test::ServerRequest&) { return telemetry_test::ServerResponse{}; });
  return probe.port();
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(RaplNodeExporterTest, MeasuredPowerIsTheSumOfPackagesAndDramFromTheRealExporter) {
  if (!fs::exists(kNodeExporter) || !fs::exists(kPrometheus)) {
    GTEST_SKIP() << "node_exporter and prometheus are not installed";
  }
  const fs::path dir = fs::temp_directory_path() / ("powerctl-rapl-" + std::to_string(::getpid()));
  fs::create_directories(dir / "data");
  const fs::path powercap = dir / "sys/class/powercap";
  for (const Zone& z : Zones()) {
    fs::create_directories(powercap / z.dir);
    WriteFile(powercap / z.dir / "name", z.name);
    WriteFile(powercap / z.dir / "max_energy_range_uj", "262143328850");
    WriteFile(powercap / z.dir / "energy_uj",
              std::to_string(static_cast<std::uint64_t>(z.start_joules * 1e6)));
  }
  // The counters advance at their watts, as the kernel's would.
  std::atomic<bool> stop{false};
  const auto begin = std::chrono::steady_clock::now();
  std::thread meter([&] {
    while (!stop) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      for (const Zone& z : Zones()) {
        const double joules = z.start_joules + z.watts * elapsed;
        WriteFile(powercap / z.dir / "energy_uj",
                  std::to_string(static_cast<std::uint64_t>(joules * 1e6)));
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
  });

  const int exporter_port = FreePort();
  testsupport::Child exporter(
      {kNodeExporter, "--path.sysfs=" + (dir / "sys").string(), "--collector.disable-defaults",
       "--collector.rapl", "--web.listen-address=127.0.0.1:" + std::to_string(exporter_port)},
      dir / "node_exporter.log");
  const int prometheus_port = FreePort();
  // The target is labelled with the node's name, as kubernetes_sd relabelling would.
  std::ofstream(dir / "prometheus.yml")
      << "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: node\n"
      << "    static_configs:\n      - targets: ['127.0.0.1:" << exporter_port << "']\n"
      << "        labels: {node: node-r}\n";
  testsupport::Child prometheus(
      {kPrometheus, "--config.file=" + (dir / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (dir / "data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port)},
      dir / "prometheus.log");

  auto http = MakeCurlHttpClient();
  PrometheusClient client(
      *http, PrometheusOptions{"http://127.0.0.1:" + std::to_string(prometheus_port), seconds(10),
                               nullptr});
  PowerQuerySpec spec;
  spec.source = PowerSource::kRapl;
  const std::vector<NodeInfo> nodes = {{"node-r", {"10.0.0.9"}, {}, std::nullopt}};
  // Once the series are older than the window (Prometheus takes a few seconds to start, and a
  // rate over a window the series only partly covers reads low), until the query answers.
  std::optional<double> watts;
  std::string last;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1000));
    if (std::chrono::steady_clock::now() - begin < seconds(25)) continue;
    auto measured = FetchMeasuredPower(client, nodes, spec, seconds(8));
    if (!measured.ok()) {
      last = measured.error().message;
      continue;
    }
    last = measured->at("node-r").missing_reason;
    watts = measured->at("node-r").watts;
    if (watts) break;
  }
  stop = true;
  meter.join();
  const std::string exporter_log = ReadFile(dir / "node_exporter.log");
  const std::string prometheus_log = ReadFile(dir / "prometheus.log");
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  ASSERT_TRUE(watts) << last << "\nnode_exporter:\n"
                     << exporter_log << "\nprometheus:\n"
                     << prometheus_log;
  // 150 W; the MMIO duplicate would make it 210 W, the packages alone 120 W.
  EXPECT_NEAR(*watts, 150, 5);
}

}  // namespace
}  // namespace powerctl::telemetry
