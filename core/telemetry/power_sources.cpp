// The PromQL of each measured-power source.

#include "core/telemetry/power_sources.h"

#include "core/common/duration.h"
#include "core/telemetry/kepler.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace powerctl::telemetry {
namespace {

struct SourceName {
  PowerSource source;
  std::string_view name;
};
constexpr std::array<SourceName, 5> kNames = {{{PowerSource::kIpmi, "ipmi"},
                                               {PowerSource::kKepler, "kepler"},
                                               {PowerSource::kKepler07, "kepler-0.7"},
                                               {PowerSource::kRapl, "rapl"},
                                               {PowerSource::kPromQl, "promql"}}};

Error Invalid(const std::string& message) {
  return MakeError(ErrorCode::kInvalidInput, message);
}

// Energy counters summed per node (sockets and zones), grouped by job as well so that two
// scrape jobs reading the same exporter stay two series (calibrate keeps the fuller one)
// instead of counting the node twice.
std::string CounterWatts(const std::string& selector, const NodeMappingOptions& mapping,
                         const std::string& window) {
  return fmt::format("sum by ({}, job) (rate({}[{}]))", mapping.GroupBy(), selector, window);
}

constexpr std::array<std::string_view, 7> kKeplerSubZones = {
    "psys", "core", "uncore", "core_power", "io_power", "soc", "vddgfx"};
constexpr std::array<std::string_view, 2> kKeplerGpuZonePrefixes = {"gpu", "amdgpu"};

}  // namespace

bool KeplerZoneNeverSummed(std::string_view zone) {
  for (std::string_view sub : kKeplerSubZones) {
    if (zone == sub) return true;
  }
  for (std::string_view prefix : kKeplerGpuZonePrefixes) {
    if (zone.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

std::string KeplerZonesNeverSummedRegex() {
  std::string regex;
  for (std::string_view sub : kKeplerSubZones)
    regex += std::string(regex.empty() ? "" : "|") + std::string(sub);
  for (std::string_view prefix : kKeplerGpuZonePrefixes) regex += "|" + std::string(prefix) + ".*";
  return regex;
}

Result<PowerSource> ParsePowerSource(std::string_view text, std::string_view what) {
  for (const SourceName& n : kNames) {
    if (n.name == text) return n.source;
  }
  return Invalid(
      fmt::format("{} \"{}\": must be one of ipmi, kepler, kepler-0.7, rapl, promql", what, text));
}

std::string_view PowerSourceName(PowerSource source) {
  for (const SourceName& n : kNames) {
    if (n.source == source) return n.name;
  }
  return "unknown";
}

Result<PowerQuery> BuildPowerQuery(const PowerQuerySpec& spec, std::chrono::seconds window) {
  if (window.count() < 1) return Invalid("the power averaging window must be at least 1s");
  const std::string w = std::to_string(window.count()) + "s";
  PowerQuery out;
  out.mapping = spec.mapping;
  switch (spec.source) {
    case PowerSource::kIpmi:
      if (spec.gauge_metric.empty()) return Invalid("the power gauge must not be empty");
      out.promql = fmt::format("avg by ({}) (avg_over_time({}[{}]))", spec.mapping.GroupBy(),
                               spec.gauge_metric, w);
      out.measures = spec.gauge_metric == kIpmiPowerMetric
                         ? "the whole server (ipmi_exporter's DCMI reading)"
                         : spec.gauge_metric + " (a gauge in watts)";
      break;
    case PowerSource::kKepler:
      // Kepler names its node in a constant label; its scrape target is the pod.
      out.mapping = spec.mapping.WithNodeLabels({"node_name"});
      // package already holds core and uncore; psys overlaps package: neither is added. A
      // node without those RAPL zones (hwmon sensors) sums what it reports instead, less the
      // zones inside another and GPU sensors.
      out.promql = fmt::format(
          "{} or on ({}, job) {}",
          CounterWatts(R"(kepler_node_cpu_joules_total{zone=~"package|dram"})", out.mapping, w),
          out.mapping.GroupBy(),
          CounterWatts(fmt::format(R"(kepler_node_cpu_joules_total{{zone!~"package|dram|{}"}})",
                                   KeplerZonesNeverSummedRegex()),
                       out.mapping, w));
      out.measures =
          "CPU packages and DRAM (Kepler's RAPL zones package and dram; on hwmon-only nodes "
          "the sensors it reports)";
      out.whole_server = false;
      break;
    case PowerSource::kKepler07:
      // 0.7 exports the node's name as `instance`, which Prometheus renames when the target
      // has its own; its ServiceMonitor sets the target's instance to the node name.
      out.mapping = spec.mapping.WithNodeLabels({"exported_instance"});
      // The idle and dynamic modes add up to the platform's energy. Without a platform meter
      // Kepler fills the series with its own model's estimate, which is not a measurement.
      out.promql = CounterWatts(
          R"(kepler_node_platform_joules_total{source!="trained_power_model"})", out.mapping, w);
      out.measures = "the whole server (Kepler 0.7's platform meter: ACPI, Redfish or HMC)";
      break;
    case PowerSource::kRapl: {
      // Zone-per-metric names by default, one metric with rapl_zone under
      // --collector.rapl.enable-zone-label. intel-rapl-mmio repeats the package zone of
      // intel-rapl on some CPUs: adding it would count the package twice.
      const std::string named =
          R"({__name__=~"node_rapl_(package|dram)_joules_total",path!~".*intel-rapl-mmio.*"})";
      const std::string labelled =
          R"(node_rapl_joules_total{rapl_zone=~"package|dram",path!~".*intel-rapl-mmio.*"})";
      const std::string by = spec.mapping.GroupBy() + ", job";
      // node_exporter passes the raw counter on, which wraps at max_energy_range_uj (about
      // 262 kJ, every 20 minutes or so at 200 W); rate() takes the wrap for a restart and
      // loses up to one scrape interval of energy. A window with a wrap is left out rather
      // than read low.
      out.promql = fmt::format(
          "sum by ({0}) (rate({1}[{3}]) or rate({2}[{3}])) unless on ({0}) "
          "(sum by ({0}) (resets({1}[{3}]) or resets({2}[{3}])) > 0)",
          by, named, labelled, w);
      out.measures = "CPU packages and DRAM (node_exporter's RAPL zones package and dram)";
      out.whole_server = false;
      break;
    }
    case PowerSource::kPromQl:
      if (spec.custom_query.empty()) {
        return Invalid("telemetry.powerQuery: must be set when telemetry.powerSource is promql");
      }
      // The expression is read at the evaluation interval across the window and averaged.
      out.promql = fmt::format("avg by ({}) (avg_over_time(({})[{}:]))", spec.mapping.GroupBy(),
                               spec.custom_query, w);
      out.measures = "telemetry.powerQuery";
      break;
  }
  return out;
}

Result<std::map<std::string, MeasuredPower>> FetchMeasuredPower(const PrometheusClient& prometheus,
                                                                const std::vector<NodeInfo>& nodes,
                                                                const PowerQuerySpec& spec,
                                                                std::chrono::seconds window) {
  POWERCTL_TRY(query, BuildPowerQuery(spec, window));
  NodeNameMapper mapper(nodes, query.mapping);
  std::vector<std::optional<double>> watts(nodes.size());
  std::vector<bool> invalid(nodes.size(), false);
  auto each = [&](PromSeries&& series) {
    std::optional<std::size_t> at = mapper.MapPosition(series.metric);
    if (!at || series.samples.empty()) return;
    const double v = series.samples.front().value;
    if (!(v >= 0)) {  // NaN too
      invalid[*at] = true;
      return;
    }
    if (!watts[*at] || v > *watts[*at]) watts[*at] = v;
  };
  POWERCTL_TRY(ignored, prometheus.Query(query.promql, std::nullopt,
                                         query.mapping.LabelsRead({"job"}), each));
  (void)ignored;
  // A node without series under a Kepler source: the other generation may be the one there.
  std::vector<std::string> hints(nodes.size());
  const bool kepler = spec.source == PowerSource::kKepler || spec.source == PowerSource::kKepler07;
  if (kepler && std::find(watts.begin(), watts.end(), std::nullopt) != watts.end()) {
    if (auto found = DetectKeplerGenerations(prometheus, nodes, spec.mapping); found.ok()) {
      for (std::size_t i = 0; i < nodes.size(); ++i)
        hints[i] = KeplerGenerationHint(spec.source, (*found)[i]);
    }
  }
  std::map<std::string, MeasuredPower> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    MeasuredPower& m = out[nodes[i].name];
    m.watts = watts[i];
    if (!m.watts && !invalid[i] && !hints[i].empty()) {
      m.missing_reason = fmt::format("no {} power series in Prometheus for this node: {}",
                                     PowerSourceName(spec.source), hints[i]);
    } else if (!m.watts) {
      m.missing_reason =
          invalid[i]
              ? fmt::format("{} power is not a number of watts", PowerSourceName(spec.source))
              : fmt::format(
                    "no {} power series in Prometheus for this node over the last "
                    "{}s",
                    PowerSourceName(spec.source), window.count());
    }
  }
  return out;
}

Result<PowerQuerySpec> PowerQuerySpecFromSettings(const config::TelemetrySettings& settings) {
  PowerQuerySpec spec;
  POWERCTL_TRY(source, ParsePowerSource(settings.power_source, "telemetry.powerSource"));
  spec.source = source;
  spec.custom_query = settings.power_query;
  if (source == PowerSource::kPromQl && spec.custom_query.empty()) {
    return Invalid("telemetry.powerQuery: must be set when telemetry.powerSource is promql");
  }
  return spec;
}

Result<PowerReading> PowerReadingFromSettings(const config::TelemetrySettings& settings) {
  PowerReading reading;
  POWERCTL_TRY(spec, PowerQuerySpecFromSettings(settings));
  reading.spec = std::move(spec);
  auto window = ParseDuration(settings.power_rate_window);
  if (!window.ok()) return WithContext(window.error(), "telemetry.powerRateWindow");
  reading.window = std::chrono::duration_cast<std::chrono::seconds>(*window);
  return reading;
}

}  // namespace powerctl::telemetry
