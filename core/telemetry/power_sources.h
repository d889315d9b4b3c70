#pragma once
// Measured node power, as selected by powerctl.yaml's telemetry.powerSource, read from
// Prometheus as mean watts per node over a window. The exporters and the exact series each
// source reads are in docs/reference/power-metrics.md; in short:
//   ipmi        ipmi_exporter's DCMI gauge (the BMC's reading of the whole server), averaged;
//   kepler      Kepler 0.10 and later (the rewrite): kepler_node_cpu_joules_total, zones
//               package and dram (RAPL: CPU sockets and memory, not the rest of the server);
//   kepler-0.7  Kepler 0.7 to 0.9: kepler_node_platform_joules_total (the platform meter, ACPI or
//               Redfish; Kepler's own estimate, source trained_power_model, is left out);
//   rapl        node_exporter's RAPL collector, zones package and dram (CPU and memory only);
//   promql      the user's expression, watts per node.
// Counters become watts with rate() over the window, so the answer is the mean power of that
// window. Series map to nodes as the CPU sources' do (node_mapping.h), with the label each
// exporter names its node by added.
// The two Kepler generations are separate sources on purpose: they measure different things
// (the whole platform against CPU and memory), so a curve fitted to one is not a curve of
// the other, and guessing the generation from which series exist would silently change what
// a model means across an upgrade.

#include "core/common/result.h"
#include "core/config/config.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/prometheus_client.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::telemetry {

enum class PowerSource { kIpmi, kKepler, kKepler07, kRapl, kPromQl };

inline constexpr char kIpmiPowerMetric[] = "ipmi_dcmi_power_consumption_watts";

// On a Kepler node without RAPL's package and dram zones (hwmon sensors: Kepler 0.11.4+),
// the kepler source adds every zone but these: parts of another zone (RAPL's core, uncore and
// psys, which holds the package; hwmon's per-rail CPU sensors) and GPU sensors, which are not
// the host's power.
bool KeplerZoneNeverSummed(std::string_view zone);
// The same as a PromQL regular expression, for a `zone!~` matcher.
std::string KeplerZonesNeverSummedRegex();

// "ipmi", "kepler", "kepler-0.7", "rapl" or "promql"; anything else is kInvalidInput naming
// `what` (the key or flag) and the choices.
Result<PowerSource> ParsePowerSource(std::string_view text, std::string_view what);
std::string_view PowerSourceName(PowerSource source);

struct PowerQuerySpec {
  PowerSource source = PowerSource::kIpmi;
  // ipmi: the gauge read, in watts (calibrate --power-metric names another gauge).
  std::string gauge_metric = kIpmiPowerMetric;
  // promql: an expression giving each node's watts now, one series per node.
  std::string custom_query;
  NodeMappingOptions mapping;
};

struct PowerQuery {
  std::string promql;          // mean watts per node over the window, one series per node
  NodeMappingOptions mapping;  // the labels its series name their node by
  std::string measures;        // what the watts cover, for messages and docs
  bool whole_server = true;    // false where only CPU and memory are measured
};

// The query for `spec`, averaging over `window` (at least 1s). kInvalidInput for an empty
// gauge or custom query.
Result<PowerQuery> BuildPowerQuery(const PowerQuerySpec& spec, std::chrono::seconds window);

// A node's measured power now: mean watts over the window ending at the query, or why
// there is none.
struct MeasuredPower {
  std::optional<double> watts;
  std::string missing_reason;
};

// Each of `nodes`' measured power, one instant query (telemetry.powerRateWindow as `window`).
// A node without a series, or with a NaN or negative value, gets the reason; several series of
// one node (two scrape jobs) count the highest. Prometheus failing is the error.
Result<std::map<std::string, MeasuredPower>> FetchMeasuredPower(const PrometheusClient& prometheus,
                                                                const std::vector<NodeInfo>& nodes,
                                                                const PowerQuerySpec& spec,
                                                                std::chrono::seconds window);

// telemetry.powerSource and telemetry.powerQuery as a spec. kInvalidInput naming the key.
Result<PowerQuerySpec> PowerQuerySpecFromSettings(const config::TelemetrySettings& settings);

// What reading measured power takes from powerctl.yaml: the query's spec and
// telemetry.powerRateWindow. kInvalidInput naming the key.
struct PowerReading {
  PowerQuerySpec spec;
  std::chrono::seconds window{0};
};
Result<PowerReading> PowerReadingFromSettings(const config::TelemetrySettings& settings);

}  // namespace powerctl::telemetry
