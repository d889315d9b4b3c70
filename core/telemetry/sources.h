#pragma once
// Where node CPU usage and temperatures come from, as selected by powerctl.yaml's
// telemetry section:
//   CPU:          metrics.k8s.io NodeMetrics, or PromQL over node_exporter;
//   temperatures: ipmi_exporter scraped directly at http://<InternalIP>:<port>/metrics (as
//                 WAO's MinimizePower scheduler does), or PromQL over ipmi_temperature_celsius.
// A source answers for every node asked about: a usable reading or the reason there is
// none. An error from Fetch means the whole source failed (Prometheus down, ...).

#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/telemetry/exposition.h"
#include "core/telemetry/metrics_api.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/prometheus_client.h"
#include "core/telemetry/readings.h"

#include <spdlog/logger.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace powerctl::telemetry {

class CpuSource {
 public:
  virtual ~CpuSource() = default;
  // Cores in use per node name, one entry for each of `nodes`. Thread-safe.
  virtual Result<std::map<std::string, Reading>> Fetch(const std::vector<NodeInfo>& nodes) = 0;
  virtual std::string Describe() const = 0;  // "metrics.k8s.io", "Prometheus at http://..."
};

class TemperatureSource {
 public:
  virtual ~TemperatureSource() = default;
  // Temperatures per node name, one entry for each of `nodes`. Thread-safe.
  virtual Result<std::map<std::string, Temperatures>> Fetch(const std::vector<NodeInfo>& nodes) = 0;
  virtual std::string Describe() const = 0;
};

// node_exporter's busy CPU per scrape target, and the time of the newest CPU sample behind it.
// Grouped by every label `mapping` reads, so a series that names its node in a `node` label
// keeps it through the sum.
std::string DefaultCpuQuery(const NodeMappingOptions& mapping);
std::string DefaultCpuTimestampQuery(const NodeMappingOptions& mapping);
inline constexpr char kTemperatureMetric[] = "ipmi_temperature_celsius";

struct PrometheusCpuOptions {
  NodeMappingOptions mapping;
  std::string query = DefaultCpuQuery(mapping);  // one series per node, value in cores
  // Same grouping as `query`; "" uses the evaluation time as the time of each reading
  // (which hides up to the rate window of staleness).
  std::string timestamp_query = DefaultCpuTimestampQuery(mapping);
};

struct IpmiExporterOptions {
  int port = 9290;
  std::string path = "/metrics";
  std::chrono::milliseconds timeout{2000};  // per node
  int parallelism = 16;                     // nodes scraped at once
  ExpositionLimits limits{1 << 20, 20000, 32};
  config::SensorNames sensors;
};

struct PrometheusTemperatureOptions {
  config::SensorNames sensors;
  NodeMappingOptions mapping;
};

std::unique_ptr<CpuSource> MakeMetricsApiCpuSource(MetricsApiClient& client, TimeBase time);
std::unique_ptr<CpuSource> MakePrometheusCpuSource(PrometheusClient& prometheus,
                                                   PrometheusCpuOptions options, TimeBase time);
std::unique_ptr<TemperatureSource> MakeIpmiExporterTemperatureSource(
    HttpClient& http, IpmiExporterOptions options, TimeBase time,
    std::shared_ptr<spdlog::logger> log = nullptr);
std::unique_ptr<TemperatureSource> MakePrometheusTemperatureSource(
    PrometheusClient& prometheus, PrometheusTemperatureOptions options, TimeBase time);

// One temperature series of one node.
struct SensorSample {
  std::string name;  // the "name" label: "Ambient", "Inlet Temp", "CPU1", ...
  double value = 0;
  SteadyTime observed_at{};
};

// The texts PickSensors gives readings (`<where> sensor "<name>"`, the reasons a role has no
// reading), each made once and shared by every node read from the same place: a 5,000-node
// Prometheus refresh made 15,000 copies of the same few. Not thread-safe.
class SensorTexts {
 public:
  explicit SensorTexts(std::string where) : where_(std::move(where)) {}
  const SharedText& where() const { return where_; }
  const SharedText& Sensor(const std::string& name);  // `<where> sensor "<name>"`
  // Why `role` ("ambient", "cpu1", "cpu2") has no reading.
  const SharedText& NoSensor(const char* role, const std::vector<std::string>& names);

 private:
  SharedText where_;
  std::map<std::string, SharedText, std::less<>> sensors_;
  std::map<std::string, SharedText, std::less<>> missing_;  // by role
};

// For each role, the first configured name that is present among `samples` wins (its value
// validated; of several samples with that name, the highest); no such sensor is a missing
// reading naming the candidates. `where` says
// where the samples came from, for sources and reasons.
Temperatures PickSensors(const std::vector<SensorSample>& samples, const config::SensorNames& names,
                         const std::string& where);
// The same, with texts shared across the nodes of one fetch.
Temperatures PickSensors(const std::vector<SensorSample>& samples, const config::SensorNames& names,
                         SensorTexts& texts);

// `http://<first InternalIP>:<port><path>` (IPv6 in brackets), or "" without an InternalIP.
std::string IpmiExporterUrl(const NodeInfo& node, int port, const std::string& path = "/metrics");

// What powerctl.yaml's telemetry section selects, owning the clients the sources use.
struct TelemetrySources {
  std::unique_ptr<PrometheusClient> prometheus;   // when a source uses Prometheus
  std::unique_ptr<MetricsApiClient> metrics_api;  // when cpu_source is metrics-api
  std::unique_ptr<CpuSource> cpu;
  std::unique_ptr<TemperatureSource> temperature;
  std::chrono::milliseconds max_age{0};
  std::chrono::milliseconds refresh_interval{0};
};

struct SourceDependencies {
  HttpClient* http = nullptr;    // Prometheus and ipmi_exporter; must outlive the sources
  kube::Client* kube = nullptr;  // metrics.k8s.io; must outlive the sources
  TimeBase time;
  std::shared_ptr<spdlog::logger> log;
};

// kInvalidInput naming the telemetry key for an unknown source, a bad duration or port,
// or a missing dependency.
Result<TelemetrySources> MakeTelemetrySources(const config::TelemetrySettings& settings,
                                              const SourceDependencies& deps);

}  // namespace powerctl::telemetry
